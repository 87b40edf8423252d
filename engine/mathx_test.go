package engine

import (
	"math"
	"testing"
)

func TestExpf(t *testing.T) {
	for x := float32(-90); x <= 88; x += 0.0137 {
		got := float64(expf(x))
		want := math.Exp(float64(x))
		if want < 1e-37 {
			if got > 2e-37 {
				t.Fatalf("expf(%v) = %v, want ≈ %v", x, got, want)
			}
			continue
		}
		if rel := math.Abs(got-want) / want; rel > 3e-7 {
			t.Fatalf("expf(%v) = %v, want %v (rel %.3g)", x, got, want, rel)
		}
	}
	if expf(0) != 1 {
		t.Fatalf("expf(0) = %v", expf(0))
	}
}

func TestLogDecay(t *testing.T) {
	for _, z := range []float32{-50, -3, 0, 2, 40, 200} {
		want := -math.Log1p(math.Exp(float64(z)))
		if z > 30 {
			want = -float64(z)
		}
		if got := float64(logDecay(z)); math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) || got > 0 {
			t.Errorf("logDecay(%v) = %v, want %v", z, got, want)
		}
	}
}
