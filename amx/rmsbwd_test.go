package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRMSNormBwdRowsMatchesGeneric checks the selected kernel against the
// generic loops (summation order differs: a tolerance relative to the
// magnitudes involved), per-row and per-head groups, with and without acc.
func TestRMSNormBwdRowsMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	randf := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	}
	for _, c := range []struct{ rows, D, group int }{{1, 16, 16}, {3, 256, 256}, {5, 256, 32}, {2, 48, 48}, {4, 40, 8}, {7, 64, 16}} {
		for _, acc := range []bool{false, true} {
			x, g, dy := randf(c.rows*c.D), randf(c.D), randf(c.rows*c.D)
			r := make([]float32, c.rows*c.D/c.group)
			for i := range r {
				r[i] = 0.5 + rng.Float32()
			}
			dx0, dg0 := randf(c.rows*c.D), randf(c.D)
			dx, dg := append([]float32(nil), dx0...), append([]float32(nil), dg0...)
			wdx, wdg := append([]float32(nil), dx0...), append([]float32(nil), dg0...)
			RMSNormBwdRows(dx, dg, x, g, dy, r, c.D, c.group, acc)
			rmsNormBwdRowsGeneric(wdx, wdg, x, g, dy, r, c.D, c.group, acc)
			for i := range dx {
				if math.Abs(float64(dx[i]-wdx[i])) > 1e-4*(1+math.Abs(float64(wdx[i]))) {
					t.Fatalf("%+v acc=%v: dx[%d] = %v, want %v", c, acc, i, dx[i], wdx[i])
				}
			}
			for i := range dg {
				if math.Abs(float64(dg[i]-wdg[i])) > 1e-4*(1+math.Abs(float64(wdg[i]))) {
					t.Fatalf("%+v acc=%v: dg[%d] = %v, want %v", c, acc, i, dg[i], wdg[i])
				}
			}
		}
	}
}
