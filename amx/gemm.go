package amx

import (
	"fmt"
	"sync"
)

// Matrix is a K×N bf16 weight matrix packed for one kernel. Pack it once at
// load time and share it read-only between goroutines.
type Matrix struct {
	K, N   int
	Kernel Kernel
	// bf16 holds the packed bf16 data (layout depends on Kernel).
	bf16 []BF16
	// f32 holds weights widened to fp32 for kernels that want them
	// (generic, avx2), row-major [K][N].
	f32 []float32
	// q8 holds int8 weights instead (PackQ8); bf16 and f32 are then empty.
	q8 *q8Weights
}

// Pack packs the row-major K×N matrix b (row stride ldb ≥ n) for the
// selected kernel.
func Pack(k, n int, b []BF16, ldb int) *Matrix {
	return PackFor(Selected(), nil, k, n, b, ldb)
}

// PackFor packs b for kernel kern, reusing dst's storage when dst is
// non-nil (no allocation once dst is large enough: for per-call operands
// such as attention keys). It panics if kern is not supported.
func PackFor(kern Kernel, dst *Matrix, k, n int, b []BF16, ldb int) *Matrix {
	if !kern.Supported() {
		panic(fmt.Sprintf("amx: kernel %v not supported", kern))
	}
	if ldb < n || (k > 0 && len(b) < (k-1)*ldb+n) {
		panic(fmt.Sprintf("amx: Pack %dx%d: ldb=%d len=%d", k, n, ldb, len(b)))
	}
	if dst == nil {
		dst = new(Matrix)
	}
	dst.K, dst.N, dst.Kernel = k, n, kern
	packImpl[kern](dst, b, ldb, false)
	return dst
}

// PackTransposedFor packs the matrix whose transpose is the row-major N×K
// matrix bt (row stride ldbt ≥ k): the result multiplies as K×N. Used for
// Q·Kᵀ in attention and for backward passes (dX = dY·Wᵀ).
func PackTransposedFor(kern Kernel, dst *Matrix, k, n int, bt []BF16, ldbt int) *Matrix {
	if !kern.Supported() {
		panic(fmt.Sprintf("amx: kernel %v not supported", kern))
	}
	if ldbt < k || (n > 0 && len(bt) < (n-1)*ldbt+k) {
		panic(fmt.Sprintf("amx: PackTransposed %dx%d: ld=%d len=%d", k, n, ldbt, len(bt)))
	}
	if dst == nil {
		dst = new(Matrix)
	}
	dst.K, dst.N, dst.Kernel = k, n, kern
	packImpl[kern](dst, bt, ldbt, true)
	return dst
}

// Activation is applied elementwise in the GEMM epilogue.
type Activation uint8

// Activations.
const (
	ActNone  Activation = iota
	ActReLU2            // relu(x)²
)

// Epilogue is what MatMul does to each result v = A·B before storing it,
// in this order: v = Scale·v + Bias[j]; v = Act(v); C = v, or C += v when
// Accumulate (residual add); then OutBF16 = bf16(C) if set.
type Epilogue struct {
	Scale      float32   // 0 means 1
	Bias       []float32 // len N, or nil
	Act        Activation
	Accumulate bool
	OutBF16    []BF16 // optional bf16 copy of C, row stride LdOut
	LdOut      int    // 0 means N
	// ColScale, if set, multiplies column j by ColScale[j] after Act (MoE
	// gates: each expert's hidden slice scaled by its gate).
	ColScale []float32
}

// MatMul computes C[m×N] (fp32, row stride ldc) from A[m×K] (bf16,
// row-major, row stride lda, read in place) and the packed B, applying ep
// (which may be nil). C may be nil when only ep.OutBF16 is wanted.
func MatMul(m int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	if m == 0 || b.N == 0 {
		return
	}
	if lda < b.K || len(a) < (m-1)*lda+b.K {
		panic(fmt.Sprintf("amx: MatMul A %dx%d: lda=%d len=%d", m, b.K, lda, len(a)))
	}
	if c != nil && (ldc < b.N || len(c) < (m-1)*ldc+b.N) {
		panic(fmt.Sprintf("amx: MatMul C %dx%d: ldc=%d len=%d", m, b.N, ldc, len(c)))
	}
	if c == nil && (ep == nil || ep.OutBF16 == nil) {
		panic("amx: MatMul with neither C nor OutBF16")
	}
	checkEpilogue(m, b.N, ep)
	if b.q8 != nil {
		matmulQ8(m, a, lda, b, c, ldc, ep)
		return
	}
	matmulImpl[b.Kernel](m, a, lda, b, c, ldc, ep)
}

// checkEpilogue panics, like an index out of range would, when ep's
// slices are too short for an m×n result: the assembly kernels must never
// be handed one.
func checkEpilogue(m, n int, ep *Epilogue) {
	if ep == nil {
		return
	}
	if ep.Bias != nil && len(ep.Bias) < n {
		panic(fmt.Sprintf("amx: MatMul Bias len %d < N=%d", len(ep.Bias), n))
	}
	if ep.ColScale != nil && len(ep.ColScale) < n {
		panic(fmt.Sprintf("amx: MatMul ColScale len %d < N=%d", len(ep.ColScale), n))
	}
	if ep.OutBF16 != nil {
		ld := ep.ldOut(n)
		if ld < n || len(ep.OutBF16) < (m-1)*ld+n {
			panic(fmt.Sprintf("amx: MatMul OutBF16 %dx%d: LdOut=%d len=%d", m, n, ep.LdOut, len(ep.OutBF16)))
		}
	}
}

// ldOut is OutBF16's row stride for an n-column result.
func (ep *Epilogue) ldOut(n int) int {
	if ep.LdOut == 0 {
		return n
	}
	return ep.LdOut
}

// FLOPs of one m×k×n GEMM.
func FLOPs(m, k, n int) float64 { return 2 * float64(m) * float64(k) * float64(n) }

// Kernel implementations, indexed by Kernel; fast paths fill in their
// entries from init functions in the *_amd64.go files.
var (
	packImpl   [numKernels]func(dst *Matrix, b []BF16, ldb int, transposed bool)
	matmulImpl [numKernels]func(m int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue)
)

func init() {
	packImpl[KernelGeneric] = packGeneric
	matmulImpl[KernelGeneric] = matmulGeneric
}

// f32Pool holds per-call fp32 scratch (a row accumulator, A widened, C
// when only OutBF16 is wanted, a ragged panel), so MatMul does not
// allocate per call.
var f32Pool = sync.Pool{New: func() any { return new([]float32) }}

// getF32 returns scratch of n floats (contents undefined); put it back
// with f32Pool.Put.
func getF32(n int) *[]float32 {
	p := f32Pool.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}
