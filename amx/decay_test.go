package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDecayMatrixMatchesGeneric checks the selected DecayMatrix against
// the generic loop on ragged sizes, strong and weak decays and a dirty
// destination (everything above the diagonal must be written 0).
func TestDecayMatrixMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 15, 16, 17, 31, 33, 64} {
		for _, strength := range []float64{1e-3, 0.1, 5, 200} {
			l := make([]float32, n)
			s := 0.0
			for i := range l {
				s -= strength * rng.Float64()
				l[i] = float32(s)
			}
			got, want := make([]float32, n*n), make([]float32, n*n)
			for i := range got {
				got[i], want[i] = 7, 7
			}
			DecayMatrix(got, l, n)
			decayMatrixGeneric(want, l, n)
			for i := range got {
				g, w := float64(got[i]), float64(want[i])
				tol := 4e-7*math.Abs(w) + 1e-37
				if math.Abs(g-w) > tol {
					t.Fatalf("n=%d strength=%v: [%d][%d] = %g, want %g", n, strength, i/n, i%n, g, w)
				}
			}
		}
	}
}

func BenchmarkDecayMatrix64(b *testing.B) {
	l := make([]float32, 64)
	for i := range l {
		l[i] = -0.05 * float32(i)
	}
	dst := make([]float32, 64*64)
	for _, impl := range []struct {
		name string
		f    func(dst, l []float32, n int)
	}{{"generic", decayMatrixGeneric}, {"selected", decayMatrixImpl}} {
		b.Run(impl.name, func(b *testing.B) {
			for b.Loop() {
				impl.f(dst, l, 64)
			}
		})
	}
}
