package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// The int8 weight path (opt-in: engine.ModelOptions.Int8, `--int8`).
//
// Weights are quantized once, per output column j, symmetric:
// w ≈ Wq[k][j]·ws[j] with Wq in [-127, 127] and ws[j] = max_k |w[k][j]|/127.
// Activations are quantized per row i of A at every call, symmetric as
// well, a ≈ Aq[i][k]·rs[i], and stored offset by 128 as unsigned bytes so
// one VPDPBUSD (unsigned × signed bytes, four per 32-bit lane) multiplies
// them. The offset is taken back out with the column sums of Wq:
//
//	Σ_k (Aq+128)·Wq − comp[j] = Σ_k Aq·Wq,   comp[j] = 128·Σ_k Wq[k][j]
//
// All of that is exact int32 arithmetic, so every kernel computes the same
// integers; the float part is then a fixed sequence per element,
//
//	v = float32(acc − comp[j]) · ws[j] · rs[i]
//
// followed by the ordinary Epilogue. Both quantizations look at one row or
// one column only, so results stay bit-identical whatever the batch.
//
// VPDPBUSD does twice the multiply-adds of VDPBF16PS per cycle (measured
// on a Zen 5 core: ~860 against ~440 G per second); the price is the quantization error (about 1/254 of a row's
// or column's largest magnitude), which is why the path is opt-in and the
// bf16 path stays the reference that is held to PyTorch.

// q8Weights is the int8 form of a packed weight matrix.
type q8Weights struct {
	// kq is the number of K-quads, (K+3)/4 (K is padded with zero rows).
	kq int
	// data holds panels of q8Cols columns; within a panel, quad q holds for
	// each column j the four bytes Wq[4q..4q+3][j] side by side, so one
	// zmm load gives 16 columns' quads.
	data []int8
	// comp and scale are per column, padded with zeros to whole panels.
	comp  []int32
	scale []float32
}

// q8Cols is the width of an int8 weight panel: the register tile's 64
// columns (four zmm of 16 int32 lanes), as nr512 for bf16.
const q8Cols = 64

// maxKQ8 bounds K so the int32 sums cannot overflow: each term of
// Σ_k (Aq+128)·Wq is at most 255·127 in magnitude.
const maxKQ8 = (1<<31 - 1) / (255 * 127)

// kcQ8 is the K chunk of the int8 kernel: 128 quads × 256 bytes = 32 KiB
// of panel, which stays in L1 while the row tiles pass over it.
const kcQ8 = 512

// PackQ8 quantizes the row-major K×N fp32 matrix w (row stride ldw ≥ n) to
// int8 per output column and packs it for MatMul. kern is the kernel the
// rest of the model uses; the int8 product itself runs VPDPBUSD where the
// CPU has AVX-512 VNNI (Q8Native) and a pure-Go loop with the same results
// elsewhere, or when kern is KernelGeneric (ONECORE_KERNEL=generic).
func PackQ8(kern Kernel, k, n int, w []float32, ldw int) *Matrix {
	if k > maxKQ8 {
		panic(fmt.Sprintf("amx: PackQ8 K=%d: int32 sums overflow past K=%d", k, maxKQ8))
	}
	if ldw < n || (k > 0 && len(w) < (k-1)*ldw+n) {
		panic(fmt.Sprintf("amx: PackQ8 %dx%d: ldw=%d len=%d", k, n, ldw, len(w)))
	}
	kq := (k + 3) / 4
	panels := (n + q8Cols - 1) / q8Cols
	q := &q8Weights{
		kq:    kq,
		data:  make([]int8, panels*kq*q8Cols*4),
		comp:  make([]int32, panels*q8Cols),
		scale: make([]float32, panels*q8Cols),
	}
	for j := 0; j < n; j++ {
		var amax float32
		for kk := 0; kk < k; kk++ {
			amax = max(amax, float32(math.Abs(float64(w[kk*ldw+j]))))
		}
		if amax == 0 {
			continue // all zero: scale 0, Wq 0
		}
		inv := 127 / amax
		q.scale[j] = amax / 127
		pn, jj := j/q8Cols, j%q8Cols
		var sum int32
		for kk := 0; kk < k; kk++ {
			v := quantQ8(w[kk*ldw+j] * inv)
			q.data[((pn*kq+kk/4)*q8Cols+jj)*4+kk%4] = int8(v)
			sum += v
		}
		q.comp[j] = 128 * sum
	}
	return &Matrix{K: k, N: n, Kernel: kern, q8: q}
}

// Int8 reports whether m holds int8 weights (PackQ8).
func (m *Matrix) Int8() bool { return m.q8 != nil }

// quantQ8 rounds x to the nearest integer (ties to even, as VCVTPS2DQ
// does) and clamps it to [-127, 127].
func quantQ8(x float32) int32 {
	r := math.RoundToEven(float64(x))
	return int32(max(-127, min(127, r)))
}

// q8Pool holds per-call activation scratch: quantized rows and their scales.
var q8Pool = sync.Pool{New: func() any { return new(q8Scratch) }}

type q8Scratch struct {
	a      []uint8
	scales []float32
}

// quantRowsGeneric quantizes rows of A for the int8 product: row i's
// scale is max_k |a[i][k]|/127 (0 for an all-zero row), its bytes are
// RNE(a·127/max) + 128, and bytes k..ldd-1 are 128 (zero).
func quantRowsGeneric(m int, a []BF16, lda, k int, dst []uint8, ldd int, scales []float32) {
	for i := 0; i < m; i++ {
		row := a[i*lda : i*lda+k]
		var amax float32
		for _, v := range row {
			amax = max(amax, math.Float32frombits(uint32(v&0x7fff)<<16))
		}
		var inv float32
		if amax != 0 {
			inv = 127 / amax
		}
		scales[i] = amax / 127
		out := dst[i*ldd : (i+1)*ldd]
		for kk, v := range row {
			out[kk] = uint8(quantQ8(v.Float32()*inv) + 128)
		}
		for kk := k; kk < ldd; kk++ {
			out[kk] = 128
		}
	}
}

// q8Native is set by the amd64 init where the CPU has AVX-512 VNNI.
var q8Native bool

// Q8Native reports whether the int8 path runs on VPDPBUSD here (AVX-512
// VNNI); elsewhere it runs a pure-Go loop with the same results, much
// more slowly.
func Q8Native() bool { return q8Native }

// Q8Kernel names what runs the int8 path here (for `onecore doctor`).
func Q8Kernel() string {
	if q8Native && Selected() != KernelGeneric {
		return "avx512vnni"
	}
	return "generic"
}

// SelfTestQ8 runs the int8 path on ragged shapes under several epilogues
// and compares it with its pure-Go reference, which it must equal bit for
// bit (the sums are exact integers), with guard cells around the output.
// `onecore doctor` runs it; where the path is the reference it is trivial.
func SelfTestQ8() error {
	r := rand.New(rand.NewPCG(43, 44))
	const guard = 16
	sentinel := math.Float32frombits(0x7fc0beef)
	for _, sh := range selfTestShapes {
		m, k, n := sh[0], sh[1], sh[2]
		lda := k + 1
		a := make([]BF16, (m-1)*lda+k)
		for i := range a {
			a[i] = FromFloat32(float32(r.NormFloat64()))
		}
		w := make([]float32, k*n)
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		bias := make([]float32, n)
		for i := range bias {
			bias[i] = float32(r.NormFloat64())
		}
		b := PackQ8(Selected(), k, n, w, n)
		for ei, ep := range []*Epilogue{nil, {Scale: 0.5, Bias: bias, Act: ActReLU2}} {
			var outs [2][]float32
			for v := range 2 {
				buf := make([]float32, m*n+2*guard)
				for i := range buf {
					buf[i] = sentinel
				}
				c := buf[guard : guard+m*n]
				ldd := b.q8.kq * 4
				aq, rs := make([]uint8, m*ldd), make([]float32, m)
				if v == 0 {
					quantRowsGeneric(m, a, lda, k, aq, ldd, rs)
					matmulQ8Generic(m, aq, ldd, rs, b, c, n, ep)
				} else {
					MatMul(m, a, lda, b, c, n, ep)
				}
				for i := 0; i < guard; i++ {
					if math.Float32bits(buf[i]) != math.Float32bits(sentinel) || math.Float32bits(buf[guard+m*n+i]) != math.Float32bits(sentinel) {
						return fmt.Errorf("int8 %dx%dx%d epilogue %d: wrote outside C", m, k, n, ei)
					}
				}
				outs[v] = c
			}
			for i := range outs[0] {
				if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
					return fmt.Errorf("int8 %dx%dx%d epilogue %d: C[%d] = %g, reference %g", m, k, n, ei, i, outs[1][i], outs[0][i])
				}
			}
		}
	}
	return nil
}

// quantRowsImpl is the fastest quantRows available (set by the amd64 init
// where AVX-512 is there).
var quantRowsImpl = quantRowsGeneric

// matmulQ8 is MatMul for int8 weights: quantize A's rows, then the integer
// product and its epilogue.
func matmulQ8(m int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	q := b.q8
	ldd := q.kq * 4
	s := q8Pool.Get().(*q8Scratch)
	defer q8Pool.Put(s)
	if cap(s.a) < m*ldd {
		s.a = make([]uint8, m*ldd)
	}
	if cap(s.scales) < m {
		s.scales = make([]float32, m)
	}
	aq, rs := s.a[:m*ldd], s.scales[:m]
	if b.Kernel == KernelGeneric {
		// ONECORE_KERNEL=generic distrusts every fast path, this one too
		quantRowsGeneric(m, a, lda, b.K, aq, ldd, rs)
		matmulQ8Generic(m, aq, ldd, rs, b, c, ldc, ep)
		return
	}
	quantRowsImpl(m, a, lda, b.K, aq, ldd, rs)
	matmulQ8Impl(m, aq, ldd, rs, b, c, ldc, ep)
}

// matmulQ8Impl is the int8 product of quantized rows (set by the amd64
// init where AVX-512 VNNI is there).
var matmulQ8Impl = matmulQ8Generic

// matmulQ8Generic is the reference int8 product: exact int32 dot products
// over the packed quads, then the float sequence of the package comment
// and applyEpilogueRow.
func matmulQ8Generic(m int, aq []uint8, ldd int, rs []float32, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	q, n := b.q8, b.N
	buf := getF32(n)
	defer f32Pool.Put(buf)
	acc := *buf
	for i := 0; i < m; i++ {
		arow := aq[i*ldd : (i+1)*ldd]
		for j := 0; j < n; j++ {
			pn, jj := j/q8Cols, j%q8Cols
			var sum int32
			for qq := 0; qq < q.kq; qq++ {
				w := q.data[((pn*q.kq+qq)*q8Cols+jj)*4:][:4]
				a := arow[qq*4 : qq*4+4]
				sum += int32(a[0])*int32(w[0]) + int32(a[1])*int32(w[1]) + int32(a[2])*int32(w[2]) + int32(a[3])*int32(w[3])
			}
			v := float32(sum - q.comp[j])
			v *= q.scale[j]
			v *= rs[i]
			acc[j] = v
		}
		var crow []float32
		if c != nil {
			crow = c[i*ldc : i*ldc+n]
		}
		applyEpilogueRow(i, acc, crow, ep)
	}
}
