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
	half := hd / 2
	for r := 0; r < n; r++ {
		p := int(in.pos[r])
		cs, sn := in.cos[p*half:(p+1)*half], in.sin[p*half:(p+1)*half]
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
			k0, off := q0, 0
			if c0 > 0 {
				k0, off = q0-W, W
			}
			nk := q0 + nq - k0
			for h := 0; h < H; h++ {
				in.kt = amx.PackTransposedFor(kern, in.kt, hd, nk, in.prjb[k0*P+sd+h*hd:], P)
				ep := in.epilogue()
				ep.Scale = scale
				amx.MatMul(nq, in.prjb[q0*P+h*hd:], P, in.kt, in.scores, nk, ep)
				for i := 0; i < nq; i++ {
					row := in.scores[i*nk : (i+1)*nk]
					lo, hi := 0, i+1
					if off > 0 {
						lo, hi = i+1, W+i+1
					}
					clear(row[:lo])
					clear(row[hi:])
					amx.SoftmaxRow(row[lo:hi])
					amx.ToBF16(in.probs[i*nk:(i+1)*nk], row)
				}
				in.vp = amx.PackFor(kern, in.vp, nk, hd, in.prjb[k0*P+2*sd+h*hd:], P)
				ep = in.epilogue()
				ep.OutBF16, ep.LdOut = in.mixb[q0*sd+h*hd:], sd
				amx.MatMul(nq, in.probs, nk, in.vp, nil, 0, ep)
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
