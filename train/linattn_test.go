package train

import (
	"math"
	"testing"
)

// linRecurrence is the exact per-token recurrence of docs/design.md §2 for one
// layer's cached q, k, v, z: S_t = e^(a_t)·S_{t−1} + k_t v_tᵀ (reset before
// each document start's update), o_t = (q_t/√d_state)ᵀ S_t.
func linRecurrence(m *Model[float64], lc *layerCache[float64]) []float64 {
	c := m.Cfg
	H, ds, dv := c.LinHeads, c.DState, c.LinHeadDim
	HK, HV := H*ds, H*dv
	o := make([]float64, m.n*HV)
	qs := 1 / math.Sqrt(float64(ds))
	for h := 0; h < H; h++ {
		S := make([]float64, ds*dv)
		for t := 0; t < m.n; t++ {
			e := math.Exp(-softplus(lc.z[t*H+h]))
			if int(m.start[t]) == t {
				e = 0
			}
			for i := 0; i < ds; i++ {
				for j := 0; j < dv; j++ {
					S[i*dv+j] = e*S[i*dv+j] + lc.k[t*HK+h*ds+i]*lc.v[t*HV+h*dv+j]
					o[t*HV+h*dv+j] += qs * lc.q[t*HK+h*ds+i] * S[i*dv+j]
				}
			}
		}
	}
	return o
}

// The chunked linear attention equals the recurrence for every chunk and
// sub-block length, including decays strong enough that e^(−L) of a whole
// chunk would overflow.
func TestLinChunkedMatchesRecurrence(t *testing.T) {
	ids, _, rowLen := tinyBatch()
	c := tinyConfig(false)
	for _, tc := range []struct {
		name         string
		chunk, sub   int
		decayBiasAdd float64
	}{
		{"chunk1", 1, 1, 0},
		{"chunk2", 2, 2, 0},
		{"chunk3/sub2", 3, 2, 0},
		{"chunk4/sub1", 4, 1, 0},
		{"chunk64", 64, 16, 0},
		{"strong-decay", 5, 2, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := randomParams64(c, 5)
			for _, li := range []int{0, 3} {
				ba := p.W("layers." + string(rune('0'+li)) + ".lin.ba")
				for i := range ba {
					ba[i] += tc.decayBiasAdd
				}
			}
			m := NewModel(c, p)
			m.linChunk, m.linSub = tc.chunk, tc.sub
			m.Forward(ids, rowLen)
			for _, li := range []int{0, 3} {
				lc := &m.layers[li]
				want := linRecurrence(m, lc)
				for i, w := range want {
					if d := math.Abs(lc.o[i] - w); d > 1e-12*math.Max(1, math.Abs(w)) || math.IsNaN(lc.o[i]) {
						t.Fatalf("layer %d o[%d] = %g, recurrence %g", li, i, lc.o[i], w)
					}
				}
			}
		})
	}
}
