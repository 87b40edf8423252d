package engine

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// swaPrefill runs sliding-window attention over the pass and adds its
// output to h. Per document, queries of chunk c (window positions counted
// from the document's start) attend to the keys of chunks c−1 and c, laid
// out [prev; cur] so that query i's visible keys are the contiguous range
// [i+1, W+i] (or [0, i] in the first chunk): Q·Kᵀ GEMMs, a masked softmax
// over that range, P·V GEMMs, per head and chunk.
func (in *Instance) swaPrefill(li int, lw *layerWeights) {
	c := &in.m.Cfg
	D, H, hd, W := c.DModel, c.SWAHeads, c.SWAHeadDim, c.Window
	sd := H * hd
	P := 3 * sd
	n := in.n
	// fp32 q, k for RoPE; bf16 v (and q, k, overwritten below) from the
	// GEMM's epilogue.
	ep := in.epilogue()
	ep.OutBF16, ep.LdOut = in.prjb, P
	in.matmul(n, in.xb, D, lw.wqkv, in.proj, P, ep)

	t0 := in.tick()
	for r := 0; r < n; r++ {
		cs, sn := in.rope(int(in.pos[r]))
		// q heads then k heads, rotated and rounded to bf16 in one call.
		amx.RoPEHeads(in.proj[r*P:r*P+2*sd], in.prjb[r*P:r*P+2*sd], hd, cs, sn)
	}
	in.tock(OpElementwise, t0)

	t0 = in.tick()
	in.scores = growF(in.scores, W*2*W)
	in.probs = growB(in.probs, W*2*W)
	in.swaTmp = growF(in.swaTmp, W*hd)
	if len(in.prevK) < H {
		in.prevK, in.prevV = make([]*amx.Matrix, H), make([]*amx.Matrix, H)
		in.curK, in.curV = make([]*amx.Matrix, H), make([]*amx.Matrix, H)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	kern := in.m.Kernel
	for si, s := range in.segs {
		for c0 := 0; c0 < s.n; c0 += W {
			q0 := s.start + c0
			nq := min(W, s.n-c0)
			// Keys [prev chunk; this chunk]: each chunk's Kᵀ and V are packed
			// once and reused as the next chunk's "prev". A continued piece's
			// first chunk takes prev from the carry.
			off := 0
			if c0 > 0 || s.off > 0 {
				off = W
			}
			nk := off + nq
			for h := 0; h < H; h++ {
				in.curK[h] = amx.PackTransposedFor(kern, in.curK[h], hd, nq, in.prjb[q0*P+sd+h*hd:], P)
				in.curV[h] = amx.PackFor(kern, in.curV[h], nq, hd, in.prjb[q0*P+2*sd+h*hd:], P)
				if c0 == 0 && s.off > 0 {
					in.prevK[h] = amx.PackTransposedFor(kern, in.prevK[h], hd, W, s.carry.k[li][h*hd:], sd)
					in.prevV[h] = amx.PackFor(kern, in.prevV[h], W, hd, s.carry.v[li][h*hd:], sd)
				}
				qa := in.prjb[q0*P+h*hd:]
				ep = in.epilogue()
				ep.Scale = scale
				if off > 0 {
					amx.MatMul(nq, qa, P, in.prevK[h], in.scores, nk, ep)
				}
				amx.MatMul(nq, qa, P, in.curK[h], in.scores[off:], nk, ep)
				for i := 0; i < nq; i++ {
					// Query i sees [i+1, W+i] of [prev; cur], or [0, i].
					row := in.scores[i*nk : (i+1)*nk]
					lo, hi := 0, i+1
					if off > 0 {
						lo, hi = i+1, W+i+1
					}
					prow := in.probs[i*nk : (i+1)*nk]
					clear(prow[:lo])
					amx.SoftmaxRowBF16(prow[lo:hi], row[lo:hi])
					clear(prow[hi:])
				}
				ep = in.epilogue()
				ep.OutBF16, ep.LdOut = in.mixb[q0*sd+h*hd:], sd
				if off > 0 {
					amx.MatMul(nq, in.probs, nk, in.prevV[h], in.swaTmp, hd, nil)
					ep.Accumulate = true
				}
				amx.MatMul(nq, in.probs[off:], nk, in.curV[h], in.swaTmp, hd, ep)
			}
			in.prevK, in.curK = in.curK, in.prevK
			in.prevV, in.curV = in.curV, in.prevV
		}
		if !s.final && s.carry != nil {
			// The piece ends on a chunk boundary: its last chunk is the
			// next piece's previous chunk.
			for i := 0; i < W; i++ {
				r := s.start + s.n - W + i
				copy(s.carry.k[li][i*sd:(i+1)*sd], in.prjb[r*P+sd:r*P+2*sd])
				copy(s.carry.v[li][i*sd:(i+1)*sd], in.prjb[r*P+2*sd:r*P+3*sd])
			}
		}
		if in.exportFor(si) != nil {
			in.exportSWA(in.exportFor(si), li, s)
		}
	}
	in.tock(OpAttention, t0)

	ep = in.epilogue()
	ep.Accumulate = true
	in.matmul(n, in.mixb, sd, lw.wo, in.h, D, ep)
}
