package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDecodeAttnBF16 checks DecodeAttnBF16 (whichever kernels are
// installed) against float64 attention over the same bf16 cache, on
// ragged slot counts and head dims, through the documented layouts, with
// and without a separately handed-in key (kNew).
func TestDecodeAttnBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, hd := range []int{2, 16, 32, 48, 64} {
		for _, nk := range []int{0, 1, 2, 15, 16, 17, 64, 255, 256} {
			ldk := nk + 5
			scale := float32(1 / math.Sqrt(float64(hd)))
			q := make([]BF16, hd)
			K := make([][]float64, nk)
			Vv := make([][]float64, nk)
			k := make([]BF16, 2*((hd/2-1)*ldk+nk)+1)
			v := make([]BF16, (nk+1)/2*2*hd)
			for i := range q {
				q[i] = FromFloat32(float32(r.NormFloat64()))
			}
			for j := 0; j < nk; j++ {
				K[j], Vv[j] = make([]float64, hd), make([]float64, hd)
				for f := 0; f < hd; f++ {
					kb, vb := FromFloat32(float32(r.NormFloat64())), FromFloat32(float32(r.NormFloat64()))
					k[2*((f/2)*ldk+j)+f%2] = kb
					v[2*((j/2)*hd+f)+j%2] = vb
					K[j][f], Vv[j][f] = float64(kb.Float32()), float64(vb.Float32())
				}
			}
			out := make([]float32, hd)
			for i := range out {
				out[i] = float32(math.NaN())
			}
			// Odd cases hand the last-but-one key in separately (kNew),
			// its place in k holding garbage until the call stores it.
			var kNew []BF16
			slot := nk / 2
			if nk%2 == 1 {
				kNew = make([]BF16, hd)
				for f := range kNew {
					i := 2*((f/2)*ldk+slot) + f%2
					kNew[f], k[i] = k[i], FromFloat32(float32(r.NormFloat64()*100))
				}
			}
			DecodeAttnBF16(out, q, k, ldk, v, nk, scale, kNew, slot, make([]float32, nk), make([]BF16, nk))
			for f := 0; f < hd && kNew != nil; f++ {
				if got := k[2*((f/2)*ldk+slot)+f%2]; got != kNew[f] {
					t.Fatalf("hd=%d nk=%d: kNew[%d] stored as %v, want %v", hd, nk, f, got, kNew[f])
				}
			}
			sc := make([]float64, nk)
			m := math.Inf(-1)
			for j := range sc {
				for f := 0; f < hd; f++ {
					sc[j] += float64(q[f].Float32()) * K[j][f]
				}
				sc[j] *= float64(scale)
				m = math.Max(m, sc[j])
			}
			sum := 0.0
			for j := range sc {
				sc[j] = math.Exp(sc[j] - m)
				sum += sc[j]
			}
			for f := 0; f < hd; f++ {
				want := 0.0
				for j := range sc {
					want += sc[j] / sum * Vv[j][f]
				}
				// bf16 probabilities: relative error ≤ 2⁻⁸ per term.
				if d := math.Abs(float64(out[f]) - want); !(d <= 1e-2) {
					t.Fatalf("hd=%d nk=%d [%d]: got %g want %g", hd, nk, f, out[f], want)
				}
			}
		}
	}
}

// TestLinAttnStep checks LinAttnStep (whichever kernel is installed)
// against the recurrence in float64 over a few steps.
func TestLinAttnStep(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	for _, hd := range []int{1, 16, 32, 40} {
		for _, ds := range []int{1, 5, 32} {
			S := make([]float32, ds*hd)
			ref := make([]float64, ds*hd)
			o := make([]float32, hd)
			for step := 0; step < 4; step++ {
				q, k, v := make([]float32, ds), make([]float32, ds), make([]float32, hd)
				for i := range q {
					q[i], k[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				}
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
				decay := float32(r.Float64())
				LinAttnStep(o, S, q, k, v, decay, 0.25)
				for j := 0; j < hd; j++ {
					want := 0.0
					for d := 0; d < ds; d++ {
						ref[d*hd+j] = float64(decay)*ref[d*hd+j] + float64(k[d])*float64(v[j])
						want += 0.25 * float64(q[d]) * ref[d*hd+j]
					}
					if math.Abs(float64(o[j])-want) > 1e-4*(1+math.Abs(want))*float64(ds) {
						t.Fatalf("hd=%d ds=%d step %d [%d]: got %g want %g", hd, ds, step, j, o[j], want)
					}
				}
			}
		}
	}
}
