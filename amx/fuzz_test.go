package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzMatMul: random shapes, strides, values (including huge, tiny and
// non-finite bf16) and epilogues; every available kernel must match the
// generic kernel within the summation bound and never write outside C.
func FuzzMatMul(f *testing.F) {
	f.Add(uint8(5), uint16(33), uint16(70), uint64(1), uint8(0))
	f.Add(uint8(1), uint16(1), uint16(1), uint64(2), uint8(7))
	f.Add(uint8(40), uint16(300), uint16(129), uint64(3), uint8(3))
	f.Fuzz(func(t *testing.T, m8 uint8, k16, n16 uint16, seed uint64, flags uint8) {
		// M, K and N may each be 0: every kernel must accept every shape
		// the generic kernel accepts.
		m, k, n := int(m8)%49, int(k16)%700, int(n16)%301
		r := rand.New(rand.NewPCG(seed, 99))
		lda, ldb, ldc := k+r.IntN(3), n+r.IntN(3), n+r.IntN(3)
		val := func() BF16 {
			switch r.IntN(40) {
			case 0:
				return FromFloat32(float32(math.Inf(1 - 2*r.IntN(2))))
			case 1:
				return FromFloat32(1e30)
			case 2:
				return 0
			}
			return FromFloat32(float32(r.NormFloat64()))
		}
		a := make([]BF16, max(0, (m-1)*lda+k))
		for i := range a {
			a[i] = val()
		}
		b := make([]BF16, max(0, (k-1)*ldb+n))
		for i := range b {
			b[i] = val()
		}
		if k == 0 {
			b = nil
			ldb = n
		}
		var ep *Epilogue
		if flags&1 != 0 {
			ep = &Epilogue{Scale: float32(r.NormFloat64()), Act: Activation(flags >> 1 & 1), Accumulate: flags&4 != 0}
			if flags&8 != 0 {
				ep.Bias = randF32(r, n)
			}
			if flags&16 != 0 {
				ep.ColScale = randF32(r, n)
			}
			if flags&32 != 0 {
				ep.OutBF16 = make([]BF16, m*n)
			}
		}
		// freshC is a guarded C holding i+j (what Accumulate adds to)
		freshC := func() (all, c []float32) {
			all, c = guarded(max(0, (m-1)*ldc+n))
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					c[i*ldc+j] = float32(i + j)
				}
			}
			return all, c
		}
		run := func(kern Kernel) ([]float32, []BF16) {
			all, c := freshC()
			var e *Epilogue
			if ep != nil {
				cp := *ep
				if cp.OutBF16 != nil {
					cp.OutBF16 = make([]BF16, m*n)
				}
				e = &cp
			}
			MatMul(m, a, lda, PackFor(kern, nil, k, n, b, ldb), c, ldc, e)
			checkGuards(t, kern.String(), all, m, n, ldc)
			if e != nil {
				return c, e.OutBF16
			}
			return c, nil
		}
		want, _ := run(KernelGeneric)
		for _, kern := range Available() {
			if kern == KernelGeneric {
				continue
			}
			got, gotBF := run(kern)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var mag float64
					for x := 0; x < k; x++ {
						mag += math.Abs(float64(a[i*lda+x].Float32()) * float64(b[x*ldb+j].Float32()))
					}
					if ep != nil {
						mag = mag*math.Abs(float64(ep.Scale)) + 1
						if ep.Bias != nil {
							mag += math.Abs(float64(ep.Bias[j]))
						}
						if ep.Act == ActReLU2 {
							mag *= 2*mag + 1
						}
						if ep.ColScale != nil {
							mag *= math.Abs(float64(ep.ColScale[j]))
						}
					}
					w, g := float64(want[i*ldc+j]), float64(got[i*ldc+j])
					if math.IsInf(mag, 0) || math.IsNaN(mag) || math.IsNaN(w) || math.IsInf(w, 0) {
						continue // overflow: any inf/NaN is as right as another
					}
					if ep != nil && ep.Accumulate {
						mag += math.Abs(float64(i + j))
					}
					if math.IsNaN(g) || math.Abs(w-g) > tolerance(k, mag) {
						t.Fatalf("%v M=%d K=%d N=%d ep=%+v: C[%d][%d] = %g, generic %g", kern, m, k, n, ep, i, j, g, w)
					}
					if gotBF != nil && gotBF[i*n+j] != FromFloat32(got[i*ldc+j]) {
						t.Fatalf("%v: OutBF16[%d][%d] is not bf16(C)", kern, i, j)
					}
				}
			}
		}
		// int8 weights: this machine's int8 path and its pure-Go
		// reference agree bit for bit (NaN with NaN), guards intact.
		wf := make([]float32, len(b))
		for i, v := range b {
			wf[i] = v.Float32()
		}
		q8 := PackQ8(Selected(), k, n, wf, ldb)
		runQ8 := func(generic bool) []float32 {
			all, c := freshC()
			var e *Epilogue
			if ep != nil {
				cp := *ep
				cp.OutBF16 = nil
				e = &cp
			}
			if generic {
				ldd := q8.q8.kq * 4
				aq, rs := make([]uint8, m*ldd), make([]float32, m)
				quantRowsGeneric(m, a, lda, k, aq, ldd, rs)
				matmulQ8Generic(m, aq, ldd, rs, q8, c, ldc, e)
			} else {
				MatMul(m, a, lda, q8, c, ldc, e)
			}
			checkGuards(t, "int8", all, m, n, ldc)
			return c
		}
		qw, qg := runQ8(true), runQ8(false)
		for i := range qw {
			if math.Float32bits(qw[i]) != math.Float32bits(qg[i]) && !(math.IsNaN(float64(qw[i])) && math.IsNaN(float64(qg[i]))) {
				t.Fatalf("int8 M=%d K=%d N=%d ep=%+v: C[%d] = %g, reference %g", m, k, n, ep, i, qg[i], qw[i])
			}
		}
	})
}
