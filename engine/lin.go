package engine

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// linPrefill runs log-decay linear attention over the pass in chunks of
// linChunk positions counted from each document's start, and adds its
// output to h. Per head and chunk, with L the cumulative log-decay within
// the chunk (fp32) and S_prev the state after the previous chunk:
//
//	O = (Q⊙e^L)·S_prev + (Q·Kᵀ ⊙ [e^(L_i−L_j)]_{i≥j})·V
//	S = e^(L_last)·S_prev + (K⊙e^(L_last−L))ᵀ·V
//
// every exponent ≤ 0, so nothing overflows. Q is pre-scaled by 1/√d_state.
func (in *Instance) linPrefill(li int, lw *layerWeights) {
	c := &in.m.Cfg
	D, H, ds, hd := c.DModel, c.LinHeads, c.DState, c.LinHeadDim
	ld, lvw := H*ds, H*hd
	P := 2*ld + lvw + H
	n := in.n
	in.matmul(n, in.xb, D, lw.wqkv, in.proj, P, nil)

	t0 := in.tick()
	C := linChunk
	in.lq = growB(in.lq, C*ds)
	in.lqs = growB(in.lqs, C*ds)
	in.lk = growB(in.lk, C*ds)
	in.lkt = growB(in.lkt, ds*C)
	in.lv = growB(in.lv, C*hd)
	in.la = growF(in.la, C)
	in.scores = growF(in.scores, C*C)
	in.probs = growB(in.probs, C*C)
	in.state = growF(in.state, H*ds*hd)
	in.stateB = growB(in.stateB, ds*hd)
	qscale := float32(1 / math.Sqrt(float64(ds)))
	kern := in.m.Kernel
	for si, s := range in.segs {
		var exp *seqState
		if in.export != nil {
			exp = in.export[si]
		}
		clear(in.state[:H*ds*hd])
		for c0 := 0; c0 < s.n; c0 += C {
			q0 := s.start + c0
			nq := min(C, s.n-c0)
			last := c0+C >= s.n
			for h := 0; h < H; h++ {
				S := in.state[h*ds*hd : (h+1)*ds*hd]
				// Cumulative log-decays.
				var L float32
				for i := 0; i < nq; i++ {
					L += logDecay(in.proj[(q0+i)*P+2*ld+lvw+h] + lw.ba[h])
					in.la[i] = L
				}
				for i := 0; i < nq; i++ {
					row := in.proj[(q0+i)*P:]
					q, k, v := row[h*ds:(h+1)*ds], row[ld+h*ds:ld+(h+1)*ds], row[2*ld+h*hd:2*ld+(h+1)*hd]
					eq := expf(in.la[i])
					for d, x := range q {
						in.lq[i*ds+d] = amx.FromFloat32(x * qscale)
						in.lqs[i*ds+d] = amx.FromFloat32(x * qscale * eq)
					}
					amx.ToBF16(in.lk[i*ds:(i+1)*ds], k)
					amx.ToBF16(in.lv[i*hd:(i+1)*hd], v)
				}
				// Intra-chunk scores with the decay mask.
				in.kt = amx.PackTransposedFor(kern, in.kt, ds, nq, in.lk, ds)
				amx.MatMul(nq, in.lq, ds, in.kt, in.scores, nq, nil)
				for i := 0; i < nq; i++ {
					row := in.scores[i*nq : (i+1)*nq]
					for j := 0; j <= i; j++ {
						row[j] *= expf(in.la[i] - in.la[j])
					}
					clear(row[i+1:])
					amx.ToBF16(in.probs[i*nq:(i+1)*nq], row)
				}
				in.vp = amx.PackFor(kern, in.vp, nq, hd, in.lv, hd)
				out := in.mix[q0*lvw+h*hd:]
				ep := in.epilogue()
				if c0 > 0 {
					amx.ToBF16(in.stateB, S)
					in.sp = amx.PackFor(kern, in.sp, ds, hd, in.stateB, hd)
					amx.MatMul(nq, in.lqs, ds, in.sp, out, lvw, nil)
					ep.Accumulate = true
				}
				amx.MatMul(nq, in.probs, nq, in.vp, out, lvw, ep)
				if last && exp == nil {
					continue
				}
				// State update for the next chunk (or the decode state).
				Ln := in.la[nq-1]
				eL := expf(Ln)
				for i := range S {
					S[i] *= eL
				}
				for j := 0; j < nq; j++ {
					w := expf(Ln - in.la[j])
					k := in.proj[(q0+j)*P+ld+h*ds:]
					for d := 0; d < ds; d++ {
						in.lkt[d*nq+j] = amx.FromFloat32(k[d] * w)
					}
				}
				ep = in.epilogue()
				ep.Accumulate = true
				amx.MatMul(ds, in.lkt, nq, in.vp, S, hd, ep)
			}
		}
		if exp != nil {
			in.exportLin(exp, li, in.state[:H*ds*hd])
		}
	}
	in.tock(OpAttention, t0)

	// Per-head RMSNorm (gain gn), straight into the bf16 A of Wo.
	t0 = in.tick()
	eps := float32(c.NormEps)
	for r := 0; r < n; r++ {
		for h := 0; h < H; h++ {
			o := r*lvw + h*hd
			amx.RMSNorm(nil, in.mixb[o:o+hd], in.mix[o:o+hd], lw.gn[h*hd:(h+1)*hd], eps)
		}
	}
	in.tock(OpElementwise, t0)
	ep := in.epilogue()
	ep.Accumulate = true
	in.matmul(n, in.mixb, lvw, lw.wo, in.h, D, ep)
}
