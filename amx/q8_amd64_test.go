//go:build amd64 && !purego

package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// withQ8Generic runs f with the int8 path forced to its pure-Go reference.
func withQ8Generic(f func()) {
	qr, mm := quantRowsImpl, matmulQ8Impl
	defer func() { quantRowsImpl, matmulQ8Impl = qr, mm }()
	quantRowsImpl, matmulQ8Impl = quantRowsGeneric, matmulQ8Generic
	f()
}

// TestQ8KernelMatchesGeneric: VPDPBUSD and the AVX-512 quantizer give
// bit-identical results to the pure-Go reference on ragged shapes (K not a
// multiple of 4, 16 or 32; N not of 64; M not of 6; K past one chunk) with
// every epilogue, and write nothing outside C or the bf16 output.
func TestQ8KernelMatchesGeneric(t *testing.T) {
	if !Q8Native() {
		t.Skip("no AVX-512 VNNI: the int8 path is the reference itself here")
	}
	r := rand.New(rand.NewPCG(31, 32))
	shapes := append(shapeMix(), shape{6, 128, 384}, shape{2048 / 8, 384, 128}, shape{13, 1030, 70}, shape{7, 513, 65})
	for _, s := range shapes {
		lda, ldw, ldc, ldo := s.k+3, s.n+5, s.n+7, s.n+2
		a := randBF16(r, (s.m-1)*lda+s.k)
		w := randF32(r, (s.k-1)*ldw+s.n)
		c0 := randF32(r, (s.m-1)*ldc+s.n)
		pb := PackQ8(Selected(), s.k, s.n, w, ldw)
		for _, ec := range epilogueCases(r, s.n) {
			name := fmt.Sprintf("%dx%dx%d %s", s.m, s.k, s.n, ec.name)
			c, out := runMatMul(t, Selected(), s, a, lda, pb, c0, ldc, ec.ep, ec.noC, ldo, name)
			var rc []float32
			var rout []BF16
			withQ8Generic(func() {
				rc, rout = runMatMul(t, Selected(), s, a, lda, pb, c0, ldc, ec.ep, ec.noC, ldo, name+" (generic)")
			})
			for i := 0; i < s.m; i++ {
				for j := 0; j < s.n; j++ {
					if c != nil && math.Float32bits(c[i*ldc+j]) != math.Float32bits(rc[i*ldc+j]) {
						t.Fatalf("%s: C[%d][%d] = %g, reference %g", name, i, j, c[i*ldc+j], rc[i*ldc+j])
					}
					if out != nil && out[i*ldo+j] != rout[i*ldo+j] {
						t.Fatalf("%s: OutBF16[%d][%d] = %#x, reference %#x", name, i, j, out[i*ldo+j], rout[i*ldo+j])
					}
				}
			}
		}
	}
}

// TestQ8QuantRowsGuarded: the AVX-512 quantizer equals the reference on
// every row length 1..100 (all tail masks) with rows that end at an
// inaccessible page, so a read past a row's end faults.
func TestQ8QuantRowsGuarded(t *testing.T) {
	if !Q8Native() {
		t.Skip("no AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(33, 34))
	for k := 1; k <= 100; k++ {
		for _, m := range []int{1, 3} {
			a := guarded16(t, (m-1)*(k+1)+k)
			copy(a, randBF16(r, len(a)))
			a[0] = FromFloat32(-40) // a negative maximum
			ldd := (k + 3) / 4 * 4
			got, want := make([]uint8, m*ldd), make([]uint8, m*ldd)
			gs, ws := make([]float32, m), make([]float32, m)
			quantRowsAVX512(m, a, k+1, k, got, ldd, gs)
			quantRowsGeneric(m, a, k+1, k, want, ldd, ws)
			if fmt.Sprint(got, gs) != fmt.Sprint(want, ws) {
				t.Fatalf("k=%d m=%d: %v %v, reference %v %v", k, m, got, gs, want, ws)
			}
		}
	}
}
