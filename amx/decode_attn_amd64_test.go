//go:build amd64 && !purego

package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDecodeAttn512 holds the VDPBF16PS scores and P·V kernels to the
// pure-Go loops bit for bit on ragged slot counts, with guard cells after
// every output, and checks the composed DecodeAttnBF16 end to end.
func TestDecodeAttn512(t *testing.T) {
	if c := CPU(); !c.AVX512F || !c.AVX512BF16 || !c.OSAVX512 {
		t.Skipf("no AVX-512 BF16 on this CPU: the kernels under test are not installed")
	}
	r := rand.New(rand.NewPCG(51, 52))
	rnd := func(n int) []BF16 {
		x := make([]BF16, n)
		for i := range x {
			x[i] = FromFloat32(float32(r.NormFloat64()))
		}
		return x
	}
	const guard = float32(-12345)
	for _, hd := range []int{32, 64} {
		for _, nk := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 100, 128, 255, 256, 257, 300, 513} {
			ldk := nk + r.IntN(3)*16
			q := rnd(hd)
			k := rnd(2 * ((hd/2-1)*ldk + nk))
			v := rnd((nk + 1) / 2 * 2 * hd)
			got, want := make([]float32, nk+1), make([]float32, nk+1)
			got[nk], want[nk] = guard, guard
			decodeScores512(&got[0], &q[0], &k[0], 4*ldk, nk, hd/2, 0.125)
			decodeScoresGeneric(want[:nk], q, k, ldk, 0.125)
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("scores hd=%d nk=%d [%d]: got %g want %g", hd, nk, j, got[j], want[j])
				}
			}
			p := make([]BF16, nk)
			softmaxRowBF16Loop(p, want[:nk])
			po, pw := make([]float32, hd+1), make([]float32, hd+1)
			po[hd], pw[hd] = guard, guard
			decodePVImpl(po[:hd], p, v)
			decodePVGeneric(pw[:hd], p, v)
			for f := range po {
				if math.Float32bits(po[f]) != math.Float32bits(pw[f]) {
					t.Fatalf("P·V hd=%d nk=%d [%d]: got %g want %g", hd, nk, f, po[f], pw[f])
				}
			}
		}
	}
}
