//go:build amd64 && !purego

package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxVariants: both fast softmax paths (AVX2, and AVX-512 which
// replaces it when present) against the generic one.
func TestSoftmaxVariants(t *testing.T) {
	c := CPU()
	variants := map[string]func([]float32){}
	if c.AVX2 && c.FMA && c.OSAVX {
		variants["avx2"] = softmaxFast
	}
	if c.AVX512F && c.OSAVX512 {
		variants["avx512"] = softmax512
	}
	if len(variants) == 0 {
		t.Fatalf("amd64 CPU without AVX2: %+v", c)
	}
	r := rand.New(rand.NewPCG(21, 22))
	for name, f := range variants {
		for _, n := range raggedLens() {
			x := randF32(r, n)
			for i := range x {
				x[i] *= 10
				if i%7 == 3 {
					x[i] = float32(math.Inf(-1))
				}
			}
			got, want := append([]float32(nil), x...), append([]float32(nil), x...)
			f(got)
			softmaxGeneric(want)
			for i := range got {
				if math.Abs(float64(got[i]-want[i])) > float64(n+8)*0x1p-23*float64(want[i])+1e-30 {
					t.Fatalf("%s n=%d [%d]: %g vs %g", name, n, i, got[i], want[i])
				}
			}
		}
	}
}
