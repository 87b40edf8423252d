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
	abf, bbf []amx.BF16
	packed   amx.Matrix
	ep       amx.Epilogue
	kernel   amx.Kernel
}

func newWorkspace() *workspace { return &workspace{kernel: amx.Selected()} }

func growBF(s []amx.BF16, n int) []amx.BF16 {
	if cap(s) < n {
		return make([]amx.BF16, n)
	}
	return s[:n]
}

func gemm32(ws *workspace, m, k, n int, a []float32, tA bool, b []float32, tB bool, c []float32, acc bool) {
	ws.abf = growBF(ws.abf, m*k)
	if tA {
		// A stored k×m: transpose into row-major m×k bf16.
		for p := 0; p < k; p++ {
			row := a[p*m : p*m+m]
			for i, v := range row {
				ws.abf[i*k+p] = amx.FromFloat32(v)
			}
		}
	} else {
		amx.ToBF16(ws.abf, a[:m*k])
	}
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
