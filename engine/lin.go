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
//	O = (Q·Kᵀ ⊙ [e^(L_i−L_j)]_{i≥j})·V + (e^L ⊙ Q)·S_prev
//	S = e^(L_last)·S_prev + (K⊙e^(L_last−L))ᵀ·V
//
// every exponent ≤ 0, so nothing overflows. Q is pre-scaled by 1/√d_state.
func (in *Instance) linPrefill(li int, lw *layerWeights) {
	c := &in.m.Cfg
	D, H, ds, hd := c.DModel, c.LinHeads, c.DState, c.LinHeadDim
	ld, lvw := H*ds, H*hd
	P := 2*ld + lvw + H
	n := in.n
	// fp32 (decays, state-update keys) and bf16 (q, k, v read in place as
	// GEMM operands, row stride P) from one GEMM.
	ep := in.epilogue()
	ep.OutBF16, ep.LdOut = in.prjb, P
	in.matmul(n, in.xb, D, lw.wqkv, in.proj, P, ep)

	t0 := in.tick()
	C := linChunk
	in.lkt = growB(in.lkt, ds*C)
	in.ktf = growF(in.ktf, ds*C)
	in.la = growF(in.la, C)
	in.scores = growF(in.scores, C*C)
	in.probs = growB(in.probs, C*C)
	in.eLa = growF(in.eLa, C)
	in.qe = growB(in.qe, C*ds)
	in.state = growF(in.state, H*ds*hd)
	in.stateB = growB(in.stateB, ds*hd)
	// softplus(z + b) of every row and head in one vector call: the
	// decays are a = −softplus.
	in.sp1 = growF(in.sp1, n*H)
	for r := 0; r < n; r++ {
		z := in.proj[r*P+2*ld+lvw : r*P+2*ld+lvw+H]
		for h, b := range lw.ba {
			in.sp1[r*H+h] = z[h] + b
		}
	}
	amx.Softplus(in.sp1, in.sp1)
	qscale := float32(1 / math.Sqrt(float64(ds)))
	kern := in.m.Kernel
	for si, s := range in.segs {
		exp := in.exportFor(si)
		cont := !s.final && s.carry != nil // a later piece needs the final state
		if s.off > 0 {
			copy(in.state[:H*ds*hd], s.carry.s[li])
		} else {
			clear(in.state[:H*ds*hd])
		}
		for c0 := 0; c0 < s.n; c0 += C {
			q0 := s.start + c0
			nq := min(C, s.n-c0)
			last := c0+C >= s.n
			for h := 0; h < H; h++ {
				S := in.state[h*ds*hd : (h+1)*ds*hd]
				// Cumulative log-decays.
				var L float32
				for i := 0; i < nq; i++ {
					L -= in.sp1[(q0+i)*H+h]
					in.la[i] = L
				}
				qa := in.prjb[q0*P+h*ds:]
				// Intra-chunk scores (scaled by 1/√d_state) with the decay mask.
				in.kt = amx.PackTransposedFor(kern, in.kt, ds, nq, in.prjb[q0*P+ld+h*ds:], P)
				ep = in.epilogue()
				ep.Scale = qscale
				in.attnMatMul(nq, qa, P, in.kt, in.scores, nq, ep)
				in.decayMask(nq)
				in.vp = amx.PackFor(kern, in.vp, nq, hd, in.prjb[q0*P+2*ld+h*hd:], P)
				out := in.mix[q0*lvw+h*hd:]
				in.attnMatMul(nq, in.probs, nq, in.vp, out, lvw, nil)
				if s.off+c0 > 0 {
					// Inter-chunk: out_i += (q_i·e^(L_i))·S_prev/√d_state, the
					// decay folded into the bf16 queries so that the GEMM
					// accumulates straight into out.
					amx.ToBF16(in.stateB, S)
					in.sp = amx.PackFor(kern, in.sp, ds, hd, in.stateB, hd)
					for i, L := range in.la[:nq] {
						in.eLa[i] = expf(L)
					}
					amx.ScaleRowsBF16(in.qe, ds, in.proj[q0*P+h*ds:], P, in.eLa, nq, ds)
					ep = in.epilogue()
					ep.Scale, ep.Accumulate = qscale, true
					in.attnMatMul(nq, in.qe, ds, in.sp, out, lvw, ep)
				}
				if last && exp == nil && !cont {
					continue
				}
				// State update for the next chunk (or the decode state).
				Ln := in.la[nq-1]
				eL := expf(Ln)
				amx.Scale(S, eL)
				// lkt = (K ⊙ e^(L_last−L_j))ᵀ in bf16: K transposed in fp32,
				// then one decay-weighted row per state dimension.
				amx.TransposeF32(in.ktf, nq, in.proj[q0*P+ld+h*ds:], P, nq, ds)
				for d := 0; d < ds; d++ {
					amx.MulExpDiffBF16(in.lkt[d*nq:(d+1)*nq], in.ktf[d*nq:(d+1)*nq], in.la[:nq], Ln)
				}
				ep = in.epilogue()
				ep.Accumulate = true
				in.attnMatMul(ds, in.lkt, nq, in.vp, S, hd, ep)
			}
		}
		if exp != nil {
			in.exportLin(exp, li, in.state[:H*ds*hd])
		}
		if cont {
			copy(s.carry.s[li], in.state[:H*ds*hd])
		}
	}
	in.tock(OpAttention, t0)

	// Per-head RMSNorm (gain gn), straight into the bf16 A of Wo.
	t0 = in.tick()
	amx.RMSNormRows(nil, in.mixb[:n*lvw], in.mix[:n*lvw], lw.gn, hd, float32(c.NormEps))
	in.tock(OpElementwise, t0)
	ep = in.epilogue()
	ep.Accumulate = true
	in.matmul(n, in.mixb, lvw, lw.wo, in.h, D, ep)
}

// decayMask multiplies the nq×nq intra-chunk scores by e^(L_i−L_j) for
// j ≤ i (0 above the diagonal) and writes them to probs in bf16. Every
// exponent is ≤ 0 and each factor is one exp of a difference, so no
// product of many small factors is ever formed.
func (in *Instance) decayMask(nq int) {
	amx.DecayMaskBF16(in.probs, in.scores, in.la, nq)
}
