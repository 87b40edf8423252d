package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The fast ReLU2Grad equals the generic one bit for bit, tails included.
func TestReLU2GradMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 640, 1001} {
		act := make([]float32, n)
		du := make([]float32, n)
		for i := range act {
			u := float32(rng.NormFloat64())
			act[i] = max(u, 0) * max(u, 0)
			du[i] = float32(rng.NormFloat64())
		}
		if n > 2 {
			du[1] = float32(math.NaN())
			act[2] = 0
		}
		du2 := append([]float32(nil), du...)
		got, want := make([]BF16, n), make([]BF16, n)
		ReLU2Grad(got, du, act)
		relu2GradGeneric(want, du2, act)
		for i := range du {
			if math.Float32bits(du[i]) != math.Float32bits(du2[i]) || got[i] != want[i] {
				t.Fatalf("n=%d i=%d: du %v/%v bf16 %#x/%#x", n, i, du[i], du2[i], got[i], want[i])
			}
		}
		for i := range want {
			if w := FromFloat32(du2[i]); want[i] != w {
				t.Fatalf("bf16 of du wrong at %d", i)
			}
		}
	}
}
