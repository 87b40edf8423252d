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
		amx.RoPEHeadsBF16(in.prjb[r*P:r*P+2*sd], in.proj[r*P:r*P+2*sd], hd, cs, sn)
	}
	in.tock(OpElementwise, t0)

	t0 = in.tick()
	in.scores = growF(in.scores, W*2*W)
	in.probs = growB(in.probs, W*2*W)
	in.swaTmp = growF(in.swaTmp, W*hd)
	bs := swaBlock(W)
	nb := W / bs
	if len(in.prevK) < H*nb {
		in.prevK, in.prevV = make([]*amx.Matrix, H*nb), make([]*amx.Matrix, H*nb)
		in.curK, in.curV = make([]*amx.Matrix, H*nb), make([]*amx.Matrix, H*nb)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	kern := in.m.Kernel
	for si, s := range in.segs {
		for c0 := 0; c0 < s.n; c0 += W {
			q0 := s.start + c0
			nq := min(W, s.n-c0)
			// Keys [prev chunk; this chunk]: each chunk's Kᵀ and V are packed
			// once, in blocks of bs keys, and reused as the next chunk's
			// "prev". A continued piece's first chunk takes prev from the
			// carry.
			off := 0
			if c0 > 0 || s.off > 0 {
				off = W
			}
			nk := off + nq
			for h := 0; h < H; h++ {
				for kb := 0; kb*bs < nq; kb++ {
					r := q0 + kb*bs
					nr := min(bs, nq-kb*bs)
					in.curK[h*nb+kb] = amx.PackTransposedFor(kern, in.curK[h*nb+kb], hd, nr, in.prjb[r*P+sd+h*hd:], P)
					in.curV[h*nb+kb] = amx.PackFor(kern, in.curV[h*nb+kb], nr, hd, in.prjb[r*P+2*sd+h*hd:], P)
				}
				for kb := 0; c0 == 0 && s.off > 0 && kb < nb; kb++ {
					ck, cv := s.carry.k[li][kb*bs*sd+h*hd:], s.carry.v[li][kb*bs*sd+h*hd:]
					in.prevK[h*nb+kb] = amx.PackTransposedFor(kern, in.prevK[h*nb+kb], hd, bs, ck, sd)
					in.prevV[h*nb+kb] = amx.PackFor(kern, in.prevV[h*nb+kb], bs, hd, cv, sd)
				}
				for qb := 0; qb*bs < nq; qb++ {
					in.swaRows(h, nb, bs, qb, q0, nq, off, nk, P, sd, hd, scale)
				}
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

// swaBlock is the key/query block of the prefill SWA: causal structure is
// exploited a block at a time (a query block multiplies only the key
// blocks some of its queries see), so blocks must tile the window.
func swaBlock(W int) int {
	if W%64 == 0 {
		return 64
	}
	return W
}

// swaRows computes head h's attention for query block qb (rows r0..r1 of
// the chunk at pass row q0) over the key blocks it sees: with a previous
// chunk (off = W), query i sees keys [i+1, W+i] of [prev; cur], i.e. prev
// blocks qb.. and cur blocks ..qb; without, cur keys [0, i]. Scores,
// softmax and P·V touch only those blocks; masked entries inside them are
// exact zeros. The output goes to mixb in bf16.
func (in *Instance) swaRows(h, nb, bs, qb, q0, nq, off, nk, P, sd, hd int, scale float32) {
	W := nb * bs
	r0 := qb * bs
	nr := min(bs, nq-r0)
	r1 := r0 + nr
	qa := in.prjb[(q0+r0)*P+h*hd:]
	sc := in.scores[r0*nk:]
	for kb := qb; off > 0 && kb < nb; kb++ {
		ep := in.epilogue()
		ep.Scale = scale
		in.attnMatMul(nr, qa, P, in.prevK[h*nb+kb], sc[kb*bs:], nk, ep)
	}
	for kb := 0; kb <= qb; kb++ {
		ep := in.epilogue()
		ep.Scale = scale
		in.attnMatMul(nr, qa, P, in.curK[h*nb+kb], sc[off+kb*bs:], nk, ep)
	}
	// Computed columns: [qb·bs, W) of prev (if any) and [off, off+r1).
	c0 := off
	if off > 0 {
		c0 = r0
	}
	c1 := off + r1
	for i := r0; i < r1; i++ {
		row := in.scores[i*nk : (i+1)*nk]
		prow := in.probs[i*nk : (i+1)*nk]
		lo, hi := 0, i+1
		if off > 0 {
			lo, hi = i+1, W+i+1
		}
		clear(prow[c0:lo])
		amx.SoftmaxRowBF16(prow[lo:hi], row[lo:hi])
		clear(prow[hi:c1])
	}
	pa := in.probs[r0*nk:]
	out := in.swaTmp[r0*hd:]
	// P·V block by block, summed in fp32 in a fixed order; the last
	// block's epilogue writes the bf16 output.
	for kb := qb; off > 0 && kb < nb; kb++ {
		ep := in.epilogue()
		ep.Accumulate = kb > qb
		in.attnMatMul(nr, pa[kb*bs:], nk, in.prevV[h*nb+kb], out, hd, ep)
	}
	for kb := 0; kb <= qb; kb++ {
		ep := in.epilogue()
		ep.Accumulate = off > 0 || kb > 0
		if kb == qb {
			ep.OutBF16, ep.LdOut = in.mixb[(q0+r0)*sd+h*hd:], sd
		}
		in.attnMatMul(nr, pa[off+kb*bs:], nk, in.curV[h*nb+kb], out, hd, ep)
	}
}
