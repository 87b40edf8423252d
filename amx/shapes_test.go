package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatMulDegenerateShapes: every kernel accepts every shape the generic
// kernel accepts (issue 19.10: AMX indexed a[0] of an empty A when K=0 and
// M ≥ 32), with A sized exactly (so an empty K leaves A empty, and a read
// past its end faults on the guard page), B packed plain and transposed,
// with and without an epilogue, and gives the generic kernel's result.
// FuzzMatMul explores strides and values; this test pins the edges
// (0, 1, tile sizes ± 1) deterministically on whatever CPU runs it.
func TestMatMulDegenerateShapes(t *testing.T) {
	ms := []int{0, 1, 2, 15, 16, 17, 31, 32, 33, 64}
	ks := []int{0, 1, 2, 31, 32, 33}
	ns := []int{0, 1, 2, 15, 16, 17, 33}
	r := rand.New(rand.NewPCG(19, 10))
	for _, m := range ms {
		for _, k := range ks {
			for _, n := range ns {
				a := guarded16(t, m*k) // lda = k: empty when k or m is 0
				for i := range a {
					a[i] = FromFloat32(float32(r.NormFloat64()))
				}
				b := randBF16(r, k*n)
				bias := randF32(r, n)
				for _, transposed := range []bool{false, true} {
					for _, withEp := range []bool{false, true} {
						bt := b
						if transposed {
							bt = make([]BF16, n*k)
							for x := 0; x < k; x++ {
								for j := 0; j < n; j++ {
									bt[j*k+x] = b[x*n+j]
								}
							}
						}
						run := func(kern Kernel) (c []float32, out []BF16) {
							name := fmt.Sprintf("%v M=%d K=%d N=%d transposed=%v ep=%v", kern, m, k, n, transposed, withEp)
							var pk *Matrix
							if transposed {
								pk = PackTransposedFor(kern, nil, k, n, bt, k)
							} else {
								pk = PackFor(kern, nil, k, n, b, n)
							}
							all, c := guarded(m * n)
							for i := range c {
								c[i] = float32(i % 7)
							}
							var ep *Epilogue
							var allOut []BF16
							if withEp {
								allOut, out = guardedBF16(m * n)
								ep = &Epilogue{Scale: 0.5, Bias: bias, Act: ActReLU2, Accumulate: true, OutBF16: out}
							}
							func() {
								defer func() {
									if p := recover(); p != nil {
										t.Fatalf("%s: panic: %v", name, p)
									}
								}()
								MatMul(m, a, k, pk, c, n, ep)
							}()
							checkGuards(t, name, all, m, n, max(n, 1))
							if withEp {
								checkGuardsBF16(t, name, allOut, m, n, max(n, 1))
							}
							return c, out
						}
						want, wantOut := run(KernelGeneric)
						for _, kern := range Available() {
							if kern == KernelGeneric {
								continue
							}
							got, gotOut := run(kern)
							for i := range want {
								if d := math.Abs(float64(got[i] - want[i])); d > 1e-2*(1+math.Abs(float64(want[i]))) {
									t.Fatalf("%v M=%d K=%d N=%d transposed=%v ep=%v: C[%d] = %g, generic %g", kern, m, k, n, transposed, withEp, i, got[i], want[i])
								}
							}
							for i := range wantOut {
								if gotOut[i] != FromFloat32(got[i]) {
									t.Fatalf("%v M=%d K=%d N=%d: OutBF16[%d] is not bf16(C)", kern, m, k, n, i)
								}
							}
						}
					}
				}
			}
		}
	}
}
