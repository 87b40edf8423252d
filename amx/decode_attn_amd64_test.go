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

// TestLinAttnStep512 holds the AVX-512 linear-attention step to the
// pure-Go loop bit for bit (state and output, guard cells after both) on
// ragged state heights and head dims.
func TestLinAttnStep512(t *testing.T) {
	if c := CPU(); !c.AVX512F || !c.OSAVX512 {
		t.Skipf("no AVX-512 on this CPU: the kernel under test is not installed")
	}
	r := rand.New(rand.NewPCG(55, 56))
	rnd := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	const guard = float32(-12345)
	for _, hd := range []int{16, 32, 48, 64} {
		for _, ds := range []int{1, 2, 3, 4, 5, 7, 8, 31, 32, 33} {
			q, k, v := rnd(ds), rnd(ds), rnd(hd)
			S := rnd(ds*hd + 1)
			S[ds*hd] = guard
			S2 := append([]float32(nil), S...)
			o, o2 := make([]float32, hd+1), make([]float32, hd+1)
			o[hd], o2[hd] = guard, guard
			decay := float32(r.Float64())
			for step := 0; step < 3; step++ {
				linAttnStep512(&o[0], &S[0], &q[0], &k[0], &v[0], ds, hd, decay, 0.17)
				linAttnStepGeneric(o2[:hd], S2[:ds*hd], q, k, v, decay, 0.17)
				for i := range S {
					if math.Float32bits(S[i]) != math.Float32bits(S2[i]) {
						t.Fatalf("hd=%d ds=%d step %d: S[%d] = %g, want %g", hd, ds, step, i, S[i], S2[i])
					}
				}
				for i := range o {
					if math.Float32bits(o[i]) != math.Float32bits(o2[i]) {
						t.Fatalf("hd=%d ds=%d step %d: o[%d] = %g, want %g", hd, ds, step, i, o[i], o2[i])
					}
				}
			}
		}
	}
}

// TestDecodeAttnAVX2 holds the AVX2/FMA scores, P·V and linear-attention
// kernels to the Go loops bit for bit, like the AVX-512 tests above.
func TestDecodeAttnAVX2(t *testing.T) {
	if c := CPU(); !c.AVX2 || !c.FMA || !c.OSAVX {
		t.Skipf("no AVX2/FMA on this CPU: the kernels under test are not installed")
	}
	r := rand.New(rand.NewPCG(59, 60))
	rnd := func(n int) []BF16 {
		x := make([]BF16, n)
		for i := range x {
			x[i] = FromFloat32(float32(r.NormFloat64()))
		}
		return x
	}
	const guard = float32(-12345)
	for _, hd := range []int{16, 32, 48, 64} {
		for _, nk := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 72, 255, 256, 257} {
			ldk := nk + r.IntN(3)*8
			q := rnd(hd)
			k := rnd(2 * ((hd/2-1)*ldk + nk))
			v := rnd((nk + 1) / 2 * 2 * hd)
			n8 := nk &^ 7
			got, want := make([]float32, nk+1), make([]float32, nk+1)
			got[n8], want[nk] = guard, guard
			if n8 > 0 {
				decodeScoresAVX2(&got[0], &q[0], &k[0], 4*ldk, n8, hd/2, 0.125)
			}
			decodeScoresGeneric(want[:nk], q, k, ldk, 0.125)
			if got[n8] != guard {
				t.Fatalf("scores hd=%d nk=%d: wrote past %d slots", hd, nk, n8)
			}
			for j := 0; j < n8; j++ {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("scores hd=%d nk=%d [%d]: got %g want %g", hd, nk, j, got[j], want[j])
				}
			}
			p := make([]BF16, nk)
			softmaxRowBF16Loop(p, want[:nk])
			po, pw := make([]float32, hd+1), make([]float32, hd+1)
			po[hd], pw[hd] = guard, guard
			decodePVAVX2(&po[0], &p[0], &v[0], nk, hd)
			decodePVGeneric(pw[:hd], p, v)
			for f := range po {
				if math.Float32bits(po[f]) != math.Float32bits(pw[f]) {
					t.Fatalf("P·V hd=%d nk=%d [%d]: got %g want %g", hd, nk, f, po[f], pw[f])
				}
			}
		}
	}
	// The installed wrappers (the Go loop finishes the scores' last < 8
	// slots) against the Go loops, through DecodeAttnBF16 and LinAttnStep.
	saved := [3]any{decodeScoresImpl, decodePVImpl, linAttnStepImpl}
	defer func() {
		decodeScoresImpl = saved[0].(func([]float32, []BF16, []BF16, int, float32))
		decodePVImpl = saved[1].(func([]float32, []BF16, []BF16))
		linAttnStepImpl = saved[2].(func([]float32, []float32, []float32, []float32, []float32, float32, float32))
	}()
	for _, hd := range []int{32, 64} {
		for _, nk := range []int{5, 13, 64, 77, 256} {
			q, k, v := rnd(hd), rnd(2*((hd/2-1)*nk+nk)), rnd((nk+1)/2*2*hd)
			var outs [2][]float32
			for pass := range outs {
				if pass == 0 {
					useDecodeAttnAVX2()
				} else {
					decodeScoresImpl, decodePVImpl = decodeScoresGeneric, decodePVGeneric
				}
				outs[pass] = make([]float32, hd)
				DecodeAttnBF16(outs[pass], q, k, nk, v, nk, 0.125, nil, 0, make([]float32, nk), make([]BF16, nk))
			}
			for f := range outs[0] {
				if math.Float32bits(outs[0][f]) != math.Float32bits(outs[1][f]) {
					t.Fatalf("DecodeAttnBF16 hd=%d nk=%d [%d]: AVX2 %g, Go %g", hd, nk, f, outs[0][f], outs[1][f])
				}
			}
		}
	}
	rf := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	for _, hd := range []int{8, 16, 24, 32} {
		for _, ds := range []int{1, 2, 3, 4, 5, 8, 31, 32} {
			q, k, v := rf(ds), rf(ds), rf(hd)
			S := rf(ds*hd + 1)
			S[ds*hd] = guard
			S2 := append([]float32(nil), S...)
			o, o2 := make([]float32, hd+1), make([]float32, hd+1)
			o[hd], o2[hd] = guard, guard
			for step := 0; step < 3; step++ {
				linAttnStepAVX2(&o[0], &S[0], &q[0], &k[0], &v[0], ds, hd, 0.9, 0.17)
				linAttnStepGeneric(o2[:hd], S2[:ds*hd], q, k, v, 0.9, 0.17)
				for i := range S {
					if math.Float32bits(S[i]) != math.Float32bits(S2[i]) {
						t.Fatalf("lin hd=%d ds=%d step %d: S[%d] = %g, want %g", hd, ds, step, i, S[i], S2[i])
					}
				}
				for i := range o {
					if math.Float32bits(o[i]) != math.Float32bits(o2[i]) {
						t.Fatalf("lin hd=%d ds=%d step %d: o[%d] = %g, want %g", hd, ds, step, i, o[i], o2[i])
					}
				}
			}
		}
	}
}
