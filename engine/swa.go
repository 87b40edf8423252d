package engine

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// swaPrefill runs sliding-window attention over the pass and adds its
// output to h. Per document, queries of chunk c (window positions counted
// from the document's start) attend to the keys of chunks c−1 and c, laid
// out [prev; cur] so that query i's visible keys are the contiguous range
// [i+1, W+i] (or [0, i] in the first chunk): one Q·Kᵀ GEMM, a masked
// softmax, one P·V GEMM per head and chunk.
func (in *Instance) swaPrefill(li int, lw *layerWeights) {
	c := &in.m.Cfg
	D, H, hd, W := c.DModel, c.SWAHeads, c.SWAHeadDim, c.Window
	sd := H * hd
	P := 3 * sd
	n := in.n
	in.matmul(n, in.xb, D, lw.wqkv, in.proj, P, nil)

	t0 := in.tick()
	for r := 0; r < n; r++ {
		cs, sn := in.rope(int(in.pos[r]))
		row := in.proj[r*P : (r+1)*P]
		for h := 0; h < 2*H; h++ { // q heads then k heads
			amx.RoPE(row[h*hd:(h+1)*hd], cs, sn)
		}
	}
	amx.ToBF16(in.prjb[:n*P], in.proj[:n*P])
	in.tock(OpElementwise, t0)

	t0 = in.tick()
	in.scores = growF(in.scores, W*2*W)
	in.probs = growB(in.probs, W*2*W)
	scale := float32(1 / math.Sqrt(float64(hd)))
	kern := in.m.Kernel
	for si, s := range in.segs {
		for c0 := 0; c0 < s.n; c0 += W {
			q0 := s.start + c0
			nq := min(W, s.n-c0)
			// Keys and values: rows [k0, q0+nq) of prjb, or for the first
			// chunk of a continued piece, the carried chunk staged in
			// front of this one.
			kv, ldkv, k0 := in.prjb, P, q0
			off := 0
			switch {
			case c0 > 0:
				k0, off = q0-W, W
			case s.off > 0:
				kv, ldkv, k0, off = in.stageCarry(li, s.carry, q0, nq), 2*sd, 0, W
			}
			nk := off + nq
			kcol, vcol := sd, 2*sd
			if ldkv == 2*sd {
				kcol, vcol = 0, sd
			}
			for h := 0; h < H; h++ {
				in.kt = amx.PackTransposedFor(kern, in.kt, hd, nk, kv[k0*ldkv+kcol+h*hd:], ldkv)
				ep := in.epilogue()
				ep.Scale = scale
				amx.MatMul(nq, in.prjb[q0*P+h*hd:], P, in.kt, in.scores, nk, ep)
				for i := 0; i < nq; i++ {
					row := in.scores[i*nk : (i+1)*nk]
					lo, hi := 0, i+1
					if off > 0 {
						lo, hi = i+1, W+i+1
					}
					amx.SoftmaxRow(row[lo:hi])
					prow := in.probs[i*nk : (i+1)*nk]
					clear(prow[:lo])
					amx.ToBF16(prow[lo:hi], row[lo:hi])
					clear(prow[hi:])
				}
				in.vp = amx.PackFor(kern, in.vp, nk, hd, kv[k0*ldkv+vcol+h*hd:], ldkv)
				ep = in.epilogue()
				ep.OutBF16, ep.LdOut = in.mixb[q0*sd+h*hd:], sd
				amx.MatMul(nq, in.probs, nk, in.vp, nil, 0, ep)
			}
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
		if in.export != nil && in.export[si] != nil {
			in.exportSWA(in.export[si], li, s)
		}
	}
	in.tock(OpAttention, t0)

	ep := in.epilogue()
	ep.Accumulate = true
	in.matmul(n, in.mixb, sd, lw.wo, in.h, D, ep)
}

// stageCarry lays out [carried K|V of the previous chunk; K|V of rows
// q0..q0+nq) as rows of width 2·sd and returns the buffer.
func (in *Instance) stageCarry(li int, cr *carry, q0, nq int) []amx.BF16 {
	c := &in.m.Cfg
	W, sd := c.Window, c.SWAHeads*c.SWAHeadDim
	P := 3 * sd
	in.stage = growB(in.stage, (W+nq)*2*sd)
	for i := 0; i < W; i++ {
		copy(in.stage[i*2*sd:i*2*sd+sd], cr.k[li][i*sd:(i+1)*sd])
		copy(in.stage[i*2*sd+sd:(i+1)*2*sd], cr.v[li][i*sd:(i+1)*sd])
	}
	for i := 0; i < nq; i++ {
		r := q0 + i
		copy(in.stage[(W+i)*2*sd:(W+i+1)*2*sd], in.prjb[r*P+sd:r*P+3*sd])
	}
	return in.stage
}
