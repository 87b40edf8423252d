package train

import (
	"math"
	"sort"

	"github.com/onecore-dev/onecore/amx"
)

// moeBlock is one route block of one document: tokens [t0, t1), routed
// on the mean of the norm2 outputs of the previous block [p0, p1) (p1 ≤ p0
// when there is none: block 0, router input zero).
type moeBlock[T Float] struct {
	t0, t1, p0, p1 int
	r              []T // router input (D)
	probs          []T // softmax over all experts (for the auxiliary loss)
	sel            []int
	gates          []T
	u              []T // top_k × M × d_ff_expert pre-activations
}

// topK returns the indices of the k largest logits, ties to the lower index.
func topK[T Float](logits []T, k int) []int {
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	return idx[:k]
}

// moeBlocks splits the stream into route blocks counted from each document start.
func (m *Model[T]) moeBlocks(old []moeBlock[T]) []moeBlock[T] {
	RB := m.Cfg.RouteBlock
	bs := old[:0]
	for t := 0; t < m.n; {
		s := int(m.start[t])
		end := t + 1
		for end < m.n && int(m.start[end]) == s && (end-s)%RB != 0 {
			end++
		}
		b := moeBlock[T]{t0: t, t1: end, p0: t, p1: t}
		if t != s {
			b.p0, b.p1 = t-RB, t
		}
		bs = append(bs, b)
		t = end
	}
	return bs
}

func (m *Model[T]) moeFwd(li int, lc *layerCache[T], pre string, out []T) {
	c := m.Cfg
	D, E, K, F := c.DModel, c.Experts, c.TopK, c.DFFExpert
	wr, br := m.P.W(pre+"moe.router.w"), m.P.W(pre+"moe.router.b")
	wup, wdown := m.P.W(pre+"moe.w_up"), m.P.W(pre+"moe.w_down")
	lc.blocks = m.moeBlocks(lc.blocks)
	load := make([]int, E)
	clear(out)
	hid := []T{}
	logits := make([]T, E)
	for bi := range lc.blocks {
		b := &lc.blocks[bi]
		M := b.t1 - b.t0
		b.r = growZero(b.r, D)
		if b.p1 > b.p0 {
			for t := b.p0; t < b.p1; t++ {
				for i, v := range lc.n2[t*D : (t+1)*D] {
					b.r[i] += v
				}
			}
			inv := 1 / T(b.p1-b.p0)
			for i := range b.r {
				b.r[i] *= inv
			}
		}
		copy(logits, br)
		for i, rv := range b.r {
			if rv == 0 {
				continue
			}
			for e, w := range wr[i*E : (i+1)*E] {
				logits[e] += rv * w
			}
		}
		b.probs = grow(b.probs, E)
		copy(b.probs, logits)
		softmaxInPlace(b.probs)
		b.sel = topK(logits, K)
		b.gates = grow(b.gates, K)
		for k, e := range b.sel {
			b.gates[k] = logits[e]
		}
		softmaxInPlace(b.gates)
		b.u = grow(b.u, K*M*F)
		hid = grow(hid, M*F)
		x := lc.n2[b.t0*D : b.t1*D]
		y := out[b.t0*D : b.t1*D]
		for k, e := range b.sel {
			load[e] += M
			u := b.u[k*M*F : (k+1)*M*F]
			m.gemmWeight(pre+"moe.w_up", e, M, D, F, x, wup[e*D*F:(e+1)*D*F], false, u, false)
			g := b.gates[k]
			for i, v := range u {
				if v < 0 {
					v = 0
				}
				hid[i] = g * v * v
			}
			m.gemmWeight(pre+"moe.w_down", e, M, F, D, hid, wdown[e*F*D:(e+1)*F*D], false, y, true)
		}
	}
	m.Load[li] = load
	if m.AuxCoef != 0 {
		f, pm := m.auxStats(lc.blocks)
		var aux float64
		for e := range f {
			aux += float64(f[e] * pm[e])
		}
		m.AuxLoss += m.AuxCoef * float64(E) * aux
	}
}

// auxStats returns, over all blocks, f_e (fraction of routing slots given
// to expert e) and P_e (mean router probability of e): the Switch-style
// load-balancing loss is E·Σ f_e·P_e.
func (m *Model[T]) auxStats(blocks []moeBlock[T]) (f, pm []T) {
	E, K := m.Cfg.Experts, m.Cfg.TopK
	f, pm = make([]T, E), make([]T, E)
	nb := T(len(blocks))
	for _, b := range blocks {
		for _, e := range b.sel {
			f[e] += 1 / (nb * T(K))
		}
		for e, p := range b.probs {
			pm[e] += p / nb
		}
	}
	return f, pm
}

func softmaxInPlace[T Float](x []T) {
	mx := T(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var s T
	for i, v := range x {
		x[i] = T(math.Exp(float64(v - mx)))
		s += x[i]
	}
	for i := range x {
		x[i] /= s
	}
}

func (m *Model[T]) moeBwd(li int, lc *layerCache[T], pre string, dy, dx []T) {
	c := m.Cfg
	clear(dx)
	D, E, F := c.DModel, c.Experts, c.DFFExpert
	wr := m.P.W(pre + "moe.router.w")
	wup, wdown := m.P.W(pre+"moe.w_up"), m.P.W(pre+"moe.w_down")
	dwr, dbr := m.P.G(pre+"moe.router.w"), m.P.G(pre+"moe.router.b")
	dwup, dwdown := m.P.G(pre+"moe.w_up"), m.P.G(pre+"moe.w_down")
	var f []T
	nb := T(len(lc.blocks))
	if m.AuxCoef != 0 {
		f, _ = m.auxStats(lc.blocks)
	}
	var hid, t1, du []T
	dlog := make([]T, E)
	dg := make([]T, c.TopK)
	for bi := range lc.blocks {
		b := &lc.blocks[bi]
		M := b.t1 - b.t0
		x := lc.n2[b.t0*D : b.t1*D]
		dyb := dy[b.t0*D : b.t1*D]
		dxb := dx[b.t0*D : b.t1*D]
		hid, t1, du = grow(hid, M*F), grow(t1, M*F), grow(du, M*F)
		var xT []amx.BF16
		if f := m.f32; f != nil {
			// the block's xᵀ and packed dy serve every selected expert
			xT = f.transposed("moe.xT", f.toBF("moe.x", any(x).([]float32)), M, D)
			amx.PackFor(f.kern, &f.tmp2, M, D, f.toBF("moe.dy", any(dyb).([]float32)), D)
		}
		for k, e := range b.sel {
			u := b.u[k*M*F : (k+1)*M*F]
			g := b.gates[k]
			m.gemmWeight(pre+"moe.w_down", e, M, D, F, dyb, wdown[e*F*D:(e+1)*F*D], true, t1, false)
			var s T
			for i, v := range u {
				if v <= 0 {
					hid[i], du[i] = 0, 0
					continue
				}
				a := v * v
				s += t1[i] * a
				hid[i] = g * a
				du[i] = g * t1[i] * 2 * v
			}
			dg[k] = s
			if f := m.f32; f != nil {
				v := f32s(hid, du, dwdown[e*F*D:(e+1)*F*D], dwup[e*D*F:(e+1)*D*F])
				f.mul(F, f.transposed("moe.hidT", f.toBF("moe.hid", v[0][:M*F]), M, F), &f.tmp2, v[2], true)
				amx.PackFor(f.kern, &f.tmp, M, F, f.toBF("moe.du", v[1][:M*F]), F)
				f.mul(D, xT, &f.tmp, v[3], true)
			} else {
				gemm(m.ws, F, M, D, hid, true, dyb, false, dwdown[e*F*D:(e+1)*F*D], true)
				gemm(m.ws, D, M, F, x, true, du, false, dwup[e*D*F:(e+1)*D*F], true)
			}
			m.gemmWeight(pre+"moe.w_up", e, M, F, D, du, wup[e*D*F:(e+1)*D*F], true, dxb, true)
		}
		// gates = softmax(selected logits)
		clear(dlog)
		var sdot T
		for k := range b.sel {
			sdot += b.gates[k] * dg[k]
		}
		for k, e := range b.sel {
			dlog[e] += b.gates[k] * (dg[k] - sdot)
		}
		if f != nil {
			// d(coef·E·Σ f_e P̄_e)/dlogits of this block: through its softmax
			coef := T(m.AuxCoef) * T(E) / nb
			var pv T
			for e, p := range b.probs {
				pv += p * f[e]
			}
			for e, p := range b.probs {
				dlog[e] += coef * p * (f[e] - pv)
			}
		}
		for e, g := range dlog {
			dbr[e] += g
		}
		if b.p1 <= b.p0 {
			continue // router input is the zero vector
		}
		inv := 1 / T(b.p1-b.p0)
		dr := make([]T, D)
		for i, rv := range b.r {
			w := wr[i*E : (i+1)*E]
			dw := dwr[i*E : (i+1)*E]
			var s T
			for e, g := range dlog {
				dw[e] += rv * g
				s += w[e] * g
			}
			dr[i] = s * inv
		}
		for t := b.p0; t < b.p1; t++ {
			row := dx[t*D : (t+1)*D]
			for i, g := range dr {
				row[i] += g
			}
		}
	}
}
