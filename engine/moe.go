package engine

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// route computes the routing of one route block from its router input r
// (nil: the zero vector of block 0): fp32 logits r·W + b, the top_k experts
// (ties to the lower index), gates = softmax over the selected logits.
// exps receives the experts in ascending index order (the order their
// outputs are added to the residual), gates the matching gates.
func (in *Instance) route(lw *layerWeights, r []float32, exps []int32, gates []float32) {
	c := &in.m.Cfg
	E, K := c.Experts, c.TopK
	in.rlogit = growF(in.rlogit, E)
	lg := in.rlogit
	clear(lg)
	if r != nil {
		for d, x := range r {
			if x != 0 {
				amx.Axpy(x, lw.routerW[d*E:(d+1)*E], lg)
			}
		}
	}
	amx.Add(lg, lw.routerB)
	in.rsel = topK(lg, K, in.rsel[:0])
	// Softmax over the selected logits (the first selected is the max).
	m := float64(lg[in.rsel[0]])
	var sum float64
	var g [64]float64
	gs := g[:0]
	if K > len(g) {
		gs = make([]float64, 0, K)
	}
	for _, e := range in.rsel {
		v := math.Exp(float64(lg[e]) - m)
		gs = append(gs, v)
		sum += v
	}
	// Emit in ascending expert order (insertion sort over ≤ top_k items).
	for k, e := range in.rsel {
		exps[k], gates[k] = int32(e), float32(gs[k]/sum)
	}
	for i := 1; i < K; i++ {
		for j := i; j > 0 && exps[j] < exps[j-1]; j-- {
			exps[j], exps[j-1] = exps[j-1], exps[j]
			gates[j], gates[j-1] = gates[j-1], gates[j]
		}
	}
}

// topK appends the indices of the k largest values of x to sel, largest
// first; equal values go to the lower index. NaN never wins.
func topK(x []float32, k int, sel []int) []int {
	for len(sel) < k {
		best := -1
		for i, v := range x {
			taken := false
			for _, s := range sel {
				if s == i {
					taken = true
					break
				}
			}
			if taken {
				continue
			}
			if best < 0 || v > x[best] || (x[best] != x[best] && v == v) {
				best = i
			}
		}
		sel = append(sel, best)
	}
	return sel
}

// routePrefill routes every route block of every document of the pass:
// block b's router input is the mean of the norm2 outputs (xf) over block
// b−1 of the same document, block 0's is zero.
func (in *Instance) routePrefill(li int) {
	t0 := in.tick()
	c := &in.m.Cfg
	D, K, RB := c.DModel, c.TopK, c.RouteBlock
	lw := &in.m.layers[li]
	in.rvec = growF(in.rvec, D)
	for si, s := range in.segs {
		for b0 := 0; b0 < s.n; b0 += RB {
			r0 := s.start + b0
			nb := min(RB, s.n-b0)
			var rin []float32
			switch {
			case b0 > 0:
				in.blockMean(in.rvec, s.start+b0-RB, RB)
				rin = in.rvec
			case s.off > 0: // continued piece: the previous block was carried
				copy(in.rvec, s.carry.msum[li])
				meanInPlace(in.rvec[:D], RB)
				rin = in.rvec
			}
			e, g := in.rexp[r0*K:(r0+1)*K], in.rgate[r0*K:(r0+1)*K]
			in.route(lw, rin, e, g)
			for r := r0 + 1; r < r0+nb; r++ {
				copy(in.rexp[r*K:(r+1)*K], e)
				copy(in.rgate[r*K:(r+1)*K], g)
			}
			if b0+RB >= s.n && !s.final && s.carry != nil {
				in.blockSum(s.carry.msum[li], r0, nb)
			}
			if b0+RB >= s.n && in.exportFor(si) != nil {
				st := in.exportFor(si)
				copy(st.mexp[li], e)
				copy(st.mgate[li], g)
				in.blockSum(st.msum[li], r0, nb)
			}
		}
	}
	in.tock(OpOther, t0)
}

// blockSum writes Σ xf[r] over rows r0..r0+n−1, in ascending order.
func (in *Instance) blockSum(dst []float32, r0, n int) {
	clear(dst[:in.m.Cfg.DModel])
	in.blockAdd(dst, r0, n)
}

// blockAdd adds xf[r] for rows r0..r0+n−1 to dst, in ascending order.
func (in *Instance) blockAdd(dst []float32, r0, n int) {
	D := in.m.Cfg.DModel
	for r := r0; r < r0+n; r++ {
		amx.Add(dst[:D], in.xf[r*D:(r+1)*D])
	}
}

// blockMean writes the router input of the block after rows r0..r0+n−1.
func (in *Instance) blockMean(dst []float32, r0, n int) {
	in.blockSum(dst, r0, n)
	meanInPlace(dst[:in.m.Cfg.DModel], n)
}

// meanInPlace divides a block sum by its length (the router input).
func meanInPlace(v []float32, n int) {
	inv := float32(n)
	for i := range v {
		v[i] /= inv
	}
}

// moe runs the expert bank on every row of the pass with the routing in
// rexp/rgate: rows are grouped by expert (one up and one down GEMM per
// expert with M = its rows) and each row receives g·relu(x·W_up[e])²·W_down[e]
// from its experts in ascending index order, so the result is independent
// of how rows are grouped.
func (in *Instance) moe(li int) {
	c := &in.m.Cfg
	D, K, E, F := c.DModel, c.TopK, c.Experts, c.DFFExpert
	lw := &in.m.layers[li]
	n := in.n
	t0 := in.tick()
	if cap(in.ecnt) < E+1 {
		in.ecnt, in.eoff = make([]int, E+1), make([]int, E+1)
	}
	cnt, off := in.ecnt[:E], in.eoff[:E+1]
	clear(cnt)
	for _, e := range in.rexp[:n*K] {
		cnt[e]++
	}
	off[0] = 0
	for e := 0; e < E; e++ {
		off[e+1] = off[e] + cnt[e]
		in.Load[li][e] += int64(cnt[e])
	}
	clear(cnt)
	for r := 0; r < n; r++ {
		for k := 0; k < K; k++ {
			e := in.rexp[r*K+k]
			at := off[e] + cnt[e]
			in.erow[at], in.egate[at] = int32(r), in.rgate[r*K+k]
			cnt[e]++
		}
	}
	in.tock(OpOther, t0)
	// Experts in ascending order: each row's contributions arrive in the
	// order of its (ascending) expert list.
	for e := 0; e < E; e++ {
		m := cnt[e]
		if m == 0 {
			continue
		}
		rows, gates := in.erow[off[e]:off[e]+m], in.egate[off[e]:off[e]+m]
		t0 = in.tick()
		for i, r := range rows {
			copy(in.gath[i*D:(i+1)*D], in.xb[int(r)*D:(int(r)+1)*D])
		}
		in.tock(OpOther, t0)
		ep := in.epilogue()
		ep.Act, ep.OutBF16, ep.LdOut = amx.ActReLU2, in.ehid, F
		in.matmul(m, in.gath, D, lw.expUp[e], nil, 0, ep)
		in.matmul(m, in.ehid, F, lw.expDown[e], in.eout, D, nil)
		t0 = in.tick()
		for i, r := range rows {
			amx.Axpy(gates[i], in.eout[i*D:(i+1)*D], in.h[int(r)*D:(int(r)+1)*D])
		}
		in.tock(OpOther, t0)
	}
}
