package train

import "github.com/onecore-dev/onecore/amx"

// gemm computes C (m×n, row-major) = op(A)·op(B), or C += op(A)·op(B) when
// acc. op(A) is m×k: A is stored m×k, or k×m when tA. op(B) is k×n: B is
// stored k×n, or n×k when tB.
//
// float32 runs through amx with bf16 operands and fp32 accumulation (the
// same arithmetic the inference engine uses); float64 is an exact
// reference loop for the gradient tests.
func gemm[T Float](ws *workspace, m, k, n int, a []T, tA bool, b []T, tB bool, c []T, acc bool) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if !acc {
			clear(c[:m*n])
		}
		return
	}
	switch av := any(a).(type) {
	case []float32:
		gemm32(ws, m, k, n, av, tA, any(b).([]float32), tB, any(c).([]float32), acc)
	case []float64:
		gemm64(m, k, n, av, tA, any(b).([]float64), tB, any(c).([]float64), acc)
	}
}

// gemmOp is one product of gemmShared: C (m×n) (+)= A·op(B).
type gemmOp[T Float] struct {
	b   []T
	tB  bool
	n   int
	c   []T
	acc bool
}

// gemmShared runs several products with the same A (m×k, transposed when
// tA), converting A to bf16 once.
func gemmShared[T Float](ws *workspace, m, k int, a []T, tA bool, ops ...gemmOp[T]) {
	if _, ok := any(a).([]float32); !ok || m == 0 || k == 0 {
		for _, op := range ops {
			gemm(ws, m, k, op.n, a, tA, op.b, op.tB, op.c, op.acc)
		}
		return
	}
	ws.prepA(m, k, any(a).([]float32), tA)
	for _, op := range ops {
		if op.n == 0 {
			continue
		}
		ws.mulB(m, k, op.n, any(op.b).([]float32), op.tB, any(op.c).([]float32), op.acc)
	}
}

func gemm64(m, k, n int, a []float64, tA bool, b []float64, tB bool, c []float64, acc bool) {
	if !acc {
		clear(c[:m*n])
	}
	for i := 0; i < m; i++ {
		crow := c[i*n : i*n+n]
		for p := 0; p < k; p++ {
			var x float64
			if tA {
				x = a[p*m+i]
			} else {
				x = a[i*k+p]
			}
			if x == 0 {
				continue
			}
			if tB {
				for j := range crow {
					crow[j] += x * b[j*k+p]
				}
			} else {
				brow := b[p*n : p*n+n]
				for j, bv := range brow {
					crow[j] += x * bv
				}
			}
		}
	}
}

// workspace holds reusable scratch for the float32 GEMM path so a training
// step does not allocate per call.
type workspace struct {
	abf, bbf, tbf []amx.BF16
	packed        amx.Matrix
	ep            amx.Epilogue
	kernel        amx.Kernel
}

func newWorkspace() *workspace { return &workspace{kernel: amx.Selected()} }

func growBF(s []amx.BF16, n int) []amx.BF16 {
	if cap(s) < n {
		return make([]amx.BF16, n)
	}
	return s[:n]
}

func gemm32(ws *workspace, m, k, n int, a []float32, tA bool, b []float32, tB bool, c []float32, acc bool) {
	ws.prepA(m, k, a, tA)
	ws.mulB(m, k, n, b, tB, c, acc)
}

// prepA rounds A (m×k, stored transposed when tA) into ws.abf, row-major.
func (ws *workspace) prepA(m, k int, a []float32, tA bool) {
	ws.abf = growBF(ws.abf, m*k)
	if tA {
		// A stored k×m: round to bf16 (vectorized), then transpose.
		ws.tbf = growBF(ws.tbf, m*k)
		amx.ToBF16(ws.tbf, a[:m*k])
		transposeBF(ws.abf, ws.tbf, k, m)
	} else {
		amx.ToBF16(ws.abf, a[:m*k])
	}
}

// mulB computes C (+)= ws.abf · op(B) with B rounded to bf16 and packed.
func (ws *workspace) mulB(m, k, n int, b []float32, tB bool, c []float32, acc bool) {
	ws.bbf = growBF(ws.bbf, k*n)
	amx.ToBF16(ws.bbf, b[:k*n])
	if tB {
		amx.PackTransposedFor(ws.kernel, &ws.packed, k, n, ws.bbf, k)
	} else {
		amx.PackFor(ws.kernel, &ws.packed, k, n, ws.bbf, n)
	}
	ws.ep = amx.Epilogue{Accumulate: acc}
	amx.MatMul(m, ws.abf, k, &ws.packed, c, n, &ws.ep)
}

// transposeBF writes the transpose of the r×c matrix src into dst (c×r).
// It moves 8×8 tiles through registers-sized locals: with power-of-two
// strides a plain tiled loop thrashes L1 sets (4 KiB aliasing).
func transposeBF(dst, src []amx.BF16, r, c int) {
	const t = 16
	i0 := 0
	for ; i0+t <= r; i0 += t {
		j0 := 0
		for ; j0+t <= c; j0 += t {
			var blk [t][t]amx.BF16
			for i := 0; i < t; i++ {
				copy(blk[i][:], src[(i0+i)*c+j0:(i0+i)*c+j0+t])
			}
			for j := 0; j < t; j++ {
				d := dst[(j0+j)*r+i0 : (j0+j)*r+i0+t]
				for i := 0; i < t; i++ {
					d[i] = blk[i][j]
				}
			}
		}
		for j := j0; j < c; j++ {
			for i := i0; i < i0+t; i++ {
				dst[j*r+i] = src[i*c+j]
			}
		}
	}
	for i := i0; i < r; i++ {
		for j := 0; j < c; j++ {
			dst[j*r+i] = src[i*c+j]
		}
	}
}
