package engine

import (
	"math"
	"testing"
)

// TestLinearChunkedMatchesRecurrence holds the chunked linear attention
// (prefill) to a float64 step-by-step recurrence on the same q, k, v and
// decay inputs, across chunk boundaries, with decays from ~1 to ~0.
func TestLinearChunkedMatchesRecurrence(t *testing.T) {
	cfg := smallConfig()
	cfg.Layers = []string{"lin"}
	cfg.MoELayers = nil
	m := testModel(t, cfg, 11)
	lw := &m.layers[0]
	// Heads from very slow to very fast decay (a ≈ −1e-3 … −30).
	for h, b := range []float32{-7, 0, 3, 30} {
		lw.ba[h%len(lw.ba)] = b
	}
	in := NewInstance(m)
	docs := randDocs(12, cfg.VocabSize, 200, 64, 1, 129)
	in.setup(docs)
	in.norm(lw.norm1, false)
	in.linPrefill(0, lw)

	H, ds, hd := cfg.LinHeads, cfg.DState, cfg.LinHeadDim
	ld, lvw := H*ds, H*hd
	P := 2*ld + lvw + H
	for di, s := range in.segs {
		S := make([]float64, H*ds*hd)
		A := make([]float64, H*ds*hd) // the same recurrence on |q|, |k|, |v|: the error scale
		for p := 0; p < s.n; p++ {
			r := s.start + p
			row := in.proj[r*P : (r+1)*P]
			for h := 0; h < H; h++ {
				z := float64(row[2*ld+lvw+h] + lw.ba[h])
				a := -math.Log1p(math.Exp(z))
				if z > 30 {
					a = -z
				}
				decay := math.Exp(a)
				Sh, Ah := S[h*ds*hd:(h+1)*ds*hd], A[h*ds*hd:(h+1)*ds*hd]
				o, oa := make([]float64, hd), make([]float64, hd)
				for d := 0; d < ds; d++ {
					k := float64(row[ld+h*ds+d])
					for j := 0; j < hd; j++ {
						v := float64(row[2*ld+h*hd+j])
						Sh[d*hd+j] = decay*Sh[d*hd+j] + k*v
						Ah[d*hd+j] = decay*Ah[d*hd+j] + math.Abs(k*v)
					}
				}
				for d := 0; d < ds; d++ {
					q := float64(row[h*ds+d]) / math.Sqrt(float64(ds))
					for j := 0; j < hd; j++ {
						o[j] += q * Sh[d*hd+j]
						oa[j] += math.Abs(q) * Ah[d*hd+j]
					}
				}
				for j := 0; j < hd; j++ {
					got := float64(in.mix[r*lvw+h*hd+j])
					// bf16 operands (q, k, v, scores, state): a few 2^-9
					// relative errors per term.
					if err := math.Abs(got - o[j]); err > 0.02*oa[j]+1e-6 {
						t.Fatalf("doc %d pos %d head %d col %d: chunked %g, recurrence %g (error %g, scale %g)", di, p, h, j, got, o[j], err, oa[j])
					}
				}
			}
		}
	}
}
