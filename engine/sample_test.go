package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestArgmax(t *testing.T) {
	ninf := float32(math.Inf(-1))
	nan := float32(math.NaN())
	for _, tc := range []struct {
		x    []float32
		want int32
	}{
		{[]float32{1}, 0},
		{[]float32{1, 3, 3, 2, 3}, 1},
		{[]float32{0, 0, 0, 0, 0, 0, 0, 5}, 7},
		{[]float32{5, 0, 0, 0, 5, 0, 0, 0, 5}, 0},
		{[]float32{0, 0, 0, 2, 0, 0, 2, 0}, 3},
		{[]float32{ninf, ninf, ninf}, 0},
		{[]float32{nan, 1, nan, 2, nan}, 3},
	} {
		if got := argmax(tc.x); got != tc.want {
			t.Errorf("argmax(%v) = %d, want %d", tc.x, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := 0; trial < 200; trial++ {
		x := make([]float32, 1+rng.IntN(50))
		for i := range x {
			x[i] = float32(rng.IntN(5))
		}
		want := 0
		for i, v := range x {
			if v > x[want] {
				want = i
			}
		}
		if got := argmax(x); int(got) != want {
			t.Fatalf("argmax(%v) = %d, want %d", x, got, want)
		}
	}
}
