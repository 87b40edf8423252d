package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The fast AdamWStep equals the generic one bit for bit.
func TestAdamWStepMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := &AdamWConsts{GradScale: 0.7, Beta1: 0.9, Beta2: 0.95, OneMinusB1: 1 - float32(0.9), OneMinusB2: 1 - float32(0.95),
		Decay: 0.9999, InvC2: 1 / (1 - 0.95*0.95), Eps: 1e-8, StepSize: 1e-3 / (1 - 0.81)}
	for _, n := range []int{0, 1, 8, 13, 64, 1001} {
		w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range w {
			w[i], g[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*1e-3)
			m[i], v[i] = float32(rng.NormFloat64()*1e-3), float32(rng.Float64()*1e-6)
		}
		w2, m2, v2 := append([]float32(nil), w...), append([]float32(nil), m...), append([]float32(nil), v...)
		AdamWStep(w, g, m, v, c)
		adamWGeneric(w2, g, m2, v2, c)
		for i := range w {
			if math.Float32bits(w[i]) != math.Float32bits(w2[i]) || m[i] != m2[i] || v[i] != v2[i] {
				t.Fatalf("n=%d i=%d: w %v/%v m %v/%v v %v/%v", n, i, w[i], w2[i], m[i], m2[i], v[i], v2[i])
			}
		}
	}
}
