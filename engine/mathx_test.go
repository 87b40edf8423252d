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
