package amx

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSplitBF16MatchesGeneric: the selected SplitBF16 is bit-identical to
// the generic loop on ragged lengths and special values.
func TestSplitBF16MatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1e-40, -1e-42, 3.4e38, -3.4e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1.00390625, 1.01171875}
	for _, n := range []int{0, 1, 15, 16, 17, 31, 33, 100, 1027} {
		x := make([]float32, n)
		for i := range x {
			if rng.IntN(8) == 0 {
				x[i] = specials[rng.IntN(len(specials))]
			} else {
				x[i] = math.Float32frombits(rng.Uint32())
			}
		}
		hi, lo := make([]BF16, n+1), make([]BF16, n+1)
		whi, wlo := make([]BF16, n+1), make([]BF16, n+1)
		hi[n], lo[n], whi[n], wlo[n] = 0x1234, 0x1234, 0x1234, 0x1234 // guard cells
		SplitBF16(hi, lo, x)
		splitBF16Generic(whi, wlo, x)
		if !slices.Equal(hi, whi) || !slices.Equal(lo, wlo) {
			t.Fatalf("n=%d: SplitBF16 differs from the generic loop", n)
		}
	}
}
