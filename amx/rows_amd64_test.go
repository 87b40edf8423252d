//go:build amd64 && !purego

package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBF16Rounding512 holds the assembly's bf16 rounding (shared by every
// kernel in rows_amd64.s) to FromFloat32 bit for bit, on ties, NaNs,
// infinities, denormals and random bit patterns.
func TestBF16Rounding512(t *testing.T) {
	if c := CPU(); !c.AVX512F || !c.OSAVX512 {
		t.Skipf("no AVX-512 on this CPU: the kernels under test are not installed")
	}
	r := rand.New(rand.NewPCG(39, 40))
	for _, n := range raggedLens() {
		src := make([]float32, n)
		for i := range src {
			if i%3 == 0 {
				src[i] = specials[r.IntN(len(specials))]
			} else {
				src[i] = math.Float32frombits(r.Uint32())
			}
		}
		got, want := make([]BF16, n+1), make([]BF16, n+1)
		got[n], want[n] = 0xbeef, 0xbeef
		if n > 0 {
			scaleBF16x512(&got[0], &src[0], n, 1)
		}
		toBF16Generic(want, src)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("n=%d [%d] %#08x: got %#04x want %#04x", n, i, math.Float32bits(src[i]), got[i], want[i])
			}
		}
	}
}
