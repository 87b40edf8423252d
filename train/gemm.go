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
		gemmBF(ws, m, k, n, av, nil, tA, any(b).([]float32), nil, tB, any(c).([]float32), acc)
	case []float64:
		gemm64(m, k, n, av, tA, any(b).([]float64), tB, any(c).([]float64), acc)
	}
}

// gemmBF is gemm with optional bf16 copies of the operands (abf: A as
// stored, m×k or k×m when tA; bbf: B as stored), used by the float32 path
// instead of rounding a or b again: an operand used by several products
// (SWA's probabilities and score gradients) is then rounded once. float64
// ignores them.
func gemmBF[T Float](ws *workspace, m, k, n int, a []T, abf []amx.BF16, tA bool, b []T, bbf []amx.BF16, tB bool, c []T, acc bool) {
	c32, ok := any(c).([]float32)
	if !ok || m == 0 || n == 0 || k == 0 {
		gemm(ws, m, k, n, a, tA, b, tB, c, acc)
		return
	}
	aop := abf
	switch {
	case abf == nil:
		ws.prepA(m, k, any(a).([]float32), tA)
		aop = ws.abf
	case tA:
		ws.abf = growBF(ws.abf, m*k)
		amx.TransposeBF16(ws.abf, abf[:m*k], k, m)
		aop = ws.abf
	}
	if bbf == nil {
		ws.mulB(m, k, n, aop, any(b).([]float32), tB, c32, acc)
		return
	}
	ws.mulBBF(m, k, n, aop, bbf, tB, c32, acc)
}

// roundBF returns x rounded to bf16 in *buf (grown as needed) for float32,
// nil for float64: the optional operand copies gemmBF takes.
func roundBF[T Float](buf *[]amx.BF16, x []T) []amx.BF16 {
	x32, ok := any(x).([]float32)
	if !ok {
		return nil
	}
	*buf = growBF(*buf, len(x32))
	amx.ToBF16(*buf, x32)
	return *buf
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
		ws.mulB(m, k, op.n, ws.abf, any(op.b).([]float32), op.tB, any(op.c).([]float32), op.acc)
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
	sbf           []amx.BF16 // a caller's rounded operand (roundBF)
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

// prepA rounds A (m×k, stored transposed when tA) into ws.abf, row-major.
func (ws *workspace) prepA(m, k int, a []float32, tA bool) {
	ws.abf = growBF(ws.abf, m*k)
	if tA {
		// A stored k×m: round to bf16 (vectorized), then transpose.
		ws.tbf = growBF(ws.tbf, m*k)
		amx.ToBF16(ws.tbf, a[:m*k])
		amx.TransposeBF16(ws.abf, ws.tbf, k, m)
	} else {
		amx.ToBF16(ws.abf, a[:m*k])
	}
}

// mulB computes C (+)= a · op(B) for bf16 a with B rounded to bf16 and packed.
func (ws *workspace) mulB(m, k, n int, a []amx.BF16, b []float32, tB bool, c []float32, acc bool) {
	ws.bbf = growBF(ws.bbf, k*n)
	amx.ToBF16(ws.bbf, b[:k*n])
	ws.mulBBF(m, k, n, a, ws.bbf, tB, c, acc)
}

// mulBBF computes C (+)= a · op(B) for bf16 a (m×k, row-major) and B.
func (ws *workspace) mulBBF(m, k, n int, a, bbf []amx.BF16, tB bool, c []float32, acc bool) {
	if tB {
		amx.PackTransposedFor(ws.kernel, &ws.packed, k, n, bbf, k)
	} else {
		amx.PackFor(ws.kernel, &ws.packed, k, n, bbf, n)
	}
	ws.ep = amx.Epilogue{Accumulate: acc}
	amx.MatMul(m, a, k, &ws.packed, c, n, &ws.ep)
}

// gemmABt3 computes C (m×n) = A·Bᵀ (A m×k, B n×k, both row-major) to about
// fp32 precision on the bf16 kernels: each operand is split into a bf16
// high part and a bf16 remainder, and one GEMM over the concatenated inner
// dimension [a_hi a_lo a_hi]·[b_hi b_hi b_lo]ᵀ adds the three significant
// cross products. The linear-attention scores need it: rounded to bf16, q
// and k lose the cancellation in q·k that the decayed sums amplify.
func gemmABt3[T Float](ws *workspace, m, k, n int, a, b, c []T) {
	a32, ok := any(a).([]float32)
	if !ok || m == 0 || n == 0 || k == 0 {
		gemm(ws, m, k, n, a, false, b, true, c, false)
		return
	}
	k3 := 3 * k
	ws.abf = growBF(ws.abf, m*k3)
	ws.bbf = growBF(ws.bbf, n*k3)
	split3(ws.abf, a32[:m*k], k, false)
	split3(ws.bbf, any(b).([]float32)[:n*k], k, true)
	amx.PackTransposedFor(ws.kernel, &ws.packed, k3, n, ws.bbf, k3)
	ws.ep = amx.Epilogue{}
	amx.MatMul(m, ws.abf, k3, &ws.packed, any(c).([]float32), n, &ws.ep)
}

// split3 writes each k-row x of src as [hi lo hi] (loLast false) or
// [hi hi lo] (true) into dst (rows of 3k), hi = bf16(x), lo = bf16(x−hi).
func split3(dst []amx.BF16, src []float32, k int, loLast bool) {
	for r := 0; r < len(src)/k; r++ {
		x := src[r*k : (r+1)*k]
		d := dst[r*3*k : (r+1)*3*k]
		if loLast { // [hi hi lo]
			amx.SplitBF16(d[:k], d[2*k:], x)
			copy(d[k:2*k], d[:k])
		} else { // [hi lo hi]
			amx.SplitBF16(d[:k], d[k:2*k], x)
			copy(d[2*k:], d[:k])
		}
	}
}
