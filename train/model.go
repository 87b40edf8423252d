package train

import (
	"fmt"
	"math"
	"strconv"

	"github.com/onecore-dev/onecore/amx"
)

// Special token ids (docs/design.md §2).
const (
	padID = 0
	bosID = 1
	eosID = 2
)

// Model is the training-time network of docs/design.md §2: a forward pass that keeps
// what the backward pass needs, and the backward pass itself. It is not safe
// for concurrent use.
type Model[T Float] struct {
	Cfg *Config
	P   *Params[T]
	// AuxCoef weights the MoE load-balancing loss added to the objective.
	AuxCoef float64

	ws      *workspace
	f32     *fast32 // float32 only
	ropeCos []T
	// linear-attention chunk and decay sub-block lengths (tests shrink
	// them so tiny documents span several chunks)
	linChunk, linSub int // [pos][swa_head_dim/2]
	ropeSin          []T
	ropeSinNeg       []T // −ropeSin (float32: the backward's inverse rotation)

	// state of the last Forward
	n      int
	ids    []int32
	start  []int32 // index of each token's document start
	layers []layerCache[T]
	hLast  []T // input of the final norm
	rF     []T
	hf     []T // final norm output (N×D)
	dh     []T

	scratch map[string][]T
	// reusePacks: the weights have not changed since the last Forward, so
	// its bf16 weight packs are still valid (the data-parallel trainer sets
	// it for a worker's later micro-batches within one step).
	reusePacks bool

	// AuxLoss is the load-balancing loss of the last Forward (already
	// multiplied by AuxCoef), summed over MoE layers.
	AuxLoss float64
	// Load counts, per layer (nil for dense layers), the tokens each expert
	// processed in the last Forward.
	Load [][]int
}

// NewModel wraps parameters p of config c.
func NewModel[T Float](c *Config, p *Params[T]) *Model[T] {
	m := &Model[T]{Cfg: c, P: p, ws: newWorkspace(), AuxCoef: 0.01, layers: make([]layerCache[T], len(c.Layers)), Load: make([][]int, len(c.Layers)),
		linChunk: defaultLinChunk, linSub: defaultLinSub}
	if _, ok := any(p).(*Params[float32]); ok {
		m.f32 = newFast32()
	}
	return m
}

// layerCache keeps one layer's activations for the backward pass.
type layerCache[T Float] struct {
	hin, n1, r1, hmid, n2, r2, hout []T
	// mixer
	q, k, v, o, p []T        // swa: q,k rotated; p = attention probabilities per chunk
	pb            []amx.BF16 // swa, float32: p in bf16 (the GEMM operand)
	chunks        []swaChunk
	z, on, ro     []T // lin: decay logits, normed output, per-head rstd
	sp            []T // lin: softplus(z) = −a, the per-token log-decays negated
	lch           []linChunkSpan
	sprev         []T // lin: each chunk's incoming state, [chunk][head][d_state][head_dim]
	// mlp (float32: act = relu(u)² only, u is not kept)
	u, act []T
	// float32: bf16 copies of the norm outputs and the MLP activation
	n1b, n2b, actb []amx.BF16
	// moe
	blocks []moeBlock[T]
}

// buf returns a zeroed scratch buffer of n elements kept under key, reused
// across steps (the training loop would otherwise allocate hundreds of MB
// per step and spend its time in the garbage collector).
func (m *Model[T]) buf(key string, n int) []T {
	if m.scratch == nil {
		m.scratch = map[string][]T{}
	}
	b := growZero(m.scratch[key], n)
	m.scratch[key] = b
	return b
}

// bufRaw is buf without zeroing, for buffers that are fully overwritten.
func (m *Model[T]) bufRaw(key string, n int) []T {
	if m.scratch == nil {
		m.scratch = map[string][]T{}
	}
	b := grow(m.scratch[key], n)
	m.scratch[key] = b
	return b
}

func grow[T Float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func growZero[T Float](s []T, n int) []T {
	s = grow(s, n)
	clear(s)
	return s
}

// Forward runs the network over ids, a flat stream made of rows of rowLen
// tokens (rowLen 0: one row). Each row start and each <bos> starts a
// document. It returns the final-norm output, N×d_model, valid until the
// next Forward.
func (m *Model[T]) Forward(ids []int32, rowLen int) []T {
	c := m.Cfg
	N, D := len(ids), c.DModel
	if rowLen <= 0 {
		rowLen = N
	}
	m.n = N
	m.ids = ids
	if m.f32 != nil && !m.reusePacks {
		m.f32.gen++
	}
	if cap(m.start) < N {
		m.start = make([]int32, N)
	}
	m.start = m.start[:N]
	for t := range ids {
		if t%rowLen == 0 || ids[t] == bosID {
			m.start[t] = int32(t)
		} else {
			m.start[t] = m.start[t-1]
		}
		if ids[t] < 0 || int(ids[t]) >= c.VocabSize {
			panic(fmt.Sprintf("train: token id %d out of range [0,%d)", ids[t], c.VocabSize))
		}
	}
	emb := m.P.W("emb")
	h := m.bufRaw("h0", N*D)
	for t, id := range ids {
		copy(h[t*D:(t+1)*D], emb[int(id)*D:(int(id)+1)*D])
	}
	m.AuxLoss = 0
	eps := T(c.NormEps)
	for li, kind := range c.Layers {
		lc := &m.layers[li]
		pre := fmt.Sprintf("layers.%d.", li)
		lc.hin = h
		lc.n1 = grow(lc.n1, N*D)
		lc.r1 = grow(lc.r1, N)
		m.normFwd(h, m.P.W(pre+"norm1.g"), lc.n1, lc.r1, &lc.n1b, eps)
		mix := m.bufRaw("mix", N*D)
		switch kind {
		case "swa":
			m.swaFwd(lc, pre, mix)
		case "lin":
			m.linFwd(lc, pre, mix)
		}
		lc.hmid = grow(lc.hmid, N*D)
		hmid := lc.hmid
		for i := range hmid {
			hmid[i] = h[i] + mix[i]
		}
		lc.n2 = grow(lc.n2, N*D)
		lc.r2 = grow(lc.r2, N)
		m.normFwd(hmid, m.P.W(pre+"norm2.g"), lc.n2, lc.r2, &lc.n2b, eps)
		lc.hout = grow(lc.hout, N*D)
		out := lc.hout
		if c.IsMoE(li) {
			m.moeFwd(li, lc, pre, out)
		} else {
			m.mlpFwd(lc, pre, out)
		}
		for i := range out {
			out[i] += hmid[i]
		}
		h = out
	}
	m.hLast = h
	m.rF = grow(m.rF, N)
	m.hf = grow(m.hf, N*D)
	rmsnormFwd(h, m.P.W("norm.g"), m.hf, m.rF, D, eps)
	return m.hf
}

// Backward takes dL/d(final-norm output) (N×D) and accumulates every
// parameter gradient into P.Grad (including the MoE auxiliary loss).
func (m *Model[T]) Backward(dhf []T) {
	c := m.Cfg
	N, D := m.n, c.DModel
	m.dh = grow(m.dh, N*D)
	dh := m.dh
	rmsnormBwdTo(m.hLast, m.P.W("norm.g"), m.rF, dhf, dh, m.P.G("norm.g"), D, false)
	// every mixer / MLP backward overwrites dn (its input gradient)
	dn := m.bufRaw("dn", N*D)
	for li := len(c.Layers) - 1; li >= 0; li-- {
		lc := &m.layers[li]
		pre := fmt.Sprintf("layers.%d.", li)
		if c.IsMoE(li) {
			m.moeBwd(li, lc, pre, dh, dn)
		} else {
			m.mlpBwd(lc, pre, dh, dn)
		}
		rmsnormBwd(lc.hmid, m.P.W(pre+"norm2.g"), lc.r2, dn, dh, m.P.G(pre+"norm2.g"), D)
		switch c.Layers[li] {
		case "swa":
			m.swaBwd(lc, pre, dh, dn)
		case "lin":
			m.linBwd(lc, pre, dh, dn)
		}
		rmsnormBwd(lc.hin, m.P.W(pre+"norm1.g"), lc.r1, dn, dh, m.P.G(pre+"norm1.g"), D)
	}
	demb := m.P.G("emb")
	for t, id := range m.ids {
		row := demb[int(id)*D : (int(id)+1)*D]
		for i, v := range dh[t*D : (t+1)*D] {
			row[i] += v
		}
	}
}

// rmsnormFwd writes x/sqrt(mean(x²)+eps)·g row by row into y and the
// reciprocal rms into r.
func rmsnormFwd[T Float](x, g, y, r []T, D int, eps T) {
	for t := 0; t < len(x)/D; t++ {
		row := x[t*D : (t+1)*D]
		var ss T
		for _, v := range row {
			ss += v * v
		}
		inv := T(1 / math.Sqrt(float64(ss/T(D)+eps)))
		r[t] = inv
		out := y[t*D : (t+1)*D]
		for i, v := range row {
			out[i] = v * inv * g[i]
		}
	}
}

// rmsnormBwd adds the input gradient to dx and the gain gradient to dg.
func rmsnormBwd[T Float](x, g, r, dy, dx, dg []T, D int) { rmsnormBwdTo(x, g, r, dy, dx, dg, D, true) }

// rmsnormBwdTo is rmsnormBwd that overwrites dx unless acc.
func rmsnormBwdTo[T Float](x, g, r, dy, dx, dg []T, D int, acc bool) {
	if xs, ok := any(x).([]float32); ok {
		amx.RMSNormBwdRows(any(dx).([]float32), any(dg).([]float32), xs, any(g).([]float32),
			any(dy).([]float32), any(r).([]float32), D, D, acc)
		return
	}
	for t := 0; t < len(x)/D; t++ {
		row, d := x[t*D:(t+1)*D], dy[t*D:(t+1)*D]
		inv := r[t]
		var dot T
		for i, v := range row {
			gy := g[i] * d[i]
			dot += gy * v
			dg[i] += d[i] * v * inv
		}
		c := dot * inv * inv * inv / T(D)
		out := dx[t*D : (t+1)*D]
		if !acc {
			clear(out)
		}
		for i, v := range row {
			out[i] += inv*g[i]*d[i] - v*c
		}
	}
}

// ---- MLP ----

func (m *Model[T]) mlpFwd(lc *layerCache[T], pre string, out []T) {
	N, D, F := m.n, m.Cfg.DModel, m.Cfg.DFF
	if f := m.f32; f != nil {
		f.mlpFwd(N, D, F, any(lc).(*layerCache[float32]), any(m.P.W(pre+"mlp.w_up")).([]float32),
			any(m.P.W(pre+"mlp.w_down")).([]float32), pre, any(out).([]float32))
		return
	}
	lc.u = grow(lc.u, N*F)
	lc.act = grow(lc.act, N*F)
	gemm(m.ws, N, D, F, lc.n2, false, m.P.W(pre+"mlp.w_up"), false, lc.u, false)
	copy(lc.act, lc.u)
	relu2(lc.act)
	gemm(m.ws, N, F, D, lc.act, false, m.P.W(pre+"mlp.w_down"), false, out, false)
}

func (m *Model[T]) mlpBwd(lc *layerCache[T], pre string, dy, dx []T) {
	N, D, F := m.n, m.Cfg.DModel, m.Cfg.DFF
	if f := m.f32; f != nil {
		w := func(n string) []float32 { return any(m.P.W(pre + n)).([]float32) }
		g := func(n string) []float32 { return any(m.P.G(pre + n)).([]float32) }
		f.mlpBwd(N, D, F, any(lc).(*layerCache[float32]), w("mlp.w_up"), w("mlp.w_down"), g("mlp.w_up"), g("mlp.w_down"),
			pre, any(dy).([]float32), any(m.bufRaw("du", N*F)).([]float32), any(dx).([]float32))
		return
	}
	clear(dx)
	gemm(m.ws, F, N, D, lc.act, true, dy, false, m.P.G(pre+"mlp.w_down"), true)
	du := m.buf("du", N*F)
	gemm(m.ws, N, D, F, dy, false, m.P.W(pre+"mlp.w_down"), true, du, false)
	for i, u := range lc.u {
		if u > 0 {
			du[i] *= 2 * u
		} else {
			du[i] = 0
		}
	}
	gemm(m.ws, D, N, F, lc.n2, true, du, false, m.P.G(pre+"mlp.w_up"), true)
	gemm(m.ws, N, F, D, du, false, m.P.W(pre+"mlp.w_up"), true, dx, true)
}

// f32s views generic slices as float32 (the fast32 path).
func f32s[T Float](xs ...[]T) [][]float32 {
	out := make([][]float32, len(xs))
	for i, x := range xs {
		out[i] = any(x).([]float32)
	}
	return out
}

// projQKV computes q, k, v = n1·W for the mixer weights names (prefixed).
func (m *Model[T]) projQKV(lc *layerCache[T], pre string, names []string, outs ...[]T) {
	N, D := m.n, m.Cfg.DModel
	full := make([]string, len(names))
	ws := make([][]T, len(names))
	for i, n := range names {
		full[i] = pre + n
		ws[i] = m.P.W(pre + n)
	}
	if f := m.f32; f != nil {
		f.qkvFwd(N, D, any(lc).(*layerCache[float32]), full, f32s(ws...), f32s(outs...))
		return
	}
	ops := make([]gemmOp[T], len(names))
	for i := range names {
		ops[i] = gemmOp[T]{ws[i], false, len(ws[i]) / D, outs[i], false}
	}
	gemmShared(m.ws, N, D, lc.n1, false, ops...)
}

// projQKVBwd: weight gradients of projQKV from ds, and dx = Σ d·Wᵀ.
func (m *Model[T]) projQKVBwd(lc *layerCache[T], pre string, names []string, dx []T, ds ...[]T) {
	N, D := m.n, m.Cfg.DModel
	full := make([]string, len(names))
	ws, dws := make([][]T, len(names)), make([][]T, len(names))
	for i, n := range names {
		full[i] = pre + n
		ws[i], dws[i] = m.P.W(pre+n), m.P.G(pre+n)
	}
	if f := m.f32; f != nil {
		f.qkvBwd(N, D, any(lc).(*layerCache[float32]), full, f32s(ws...), f32s(dws...), f32s(ds...), any(dx).([]float32))
		return
	}
	clear(dx)
	ops := make([]gemmOp[T], len(names))
	for i := range names {
		ops[i] = gemmOp[T]{ds[i], false, len(ws[i]) / D, dws[i], true}
	}
	gemmShared(m.ws, D, N, lc.n1, true, ops...)
	for i := range names {
		gemm(m.ws, N, len(ws[i])/D, D, ds[i], false, ws[i], true, dx, true)
	}
}

// outProjBwd is the backward of out = o·W (o N×K, W = tensor name):
// dW += oᵀ·dy and do = dy·Wᵀ.
func (m *Model[T]) outProjBwd(o []T, K int, name string, dy, do []T) {
	N, D := m.n, m.Cfg.DModel
	w, dw := m.P.W(name), m.P.G(name)
	if f := m.f32; f != nil {
		v := f32s(w, dw, dy, do)
		f.outBwd(N, K, D, name, v[0], v[1], v[2], v[3])
		return
	}
	gemm(m.ws, K, N, D, o, true, dy, false, dw, true)
	gemm(m.ws, N, D, K, dy, false, w, true, do, false)
}

// outProj computes out = o·W (o N×K, W = tensor name).
func (m *Model[T]) outProj(o []T, K int, name string, out []T) {
	N, D := m.n, m.Cfg.DModel
	if f := m.f32; f != nil {
		v := f32s(o, m.P.W(name), out)
		ob := f.scratch(name, N*K) // kept for the backward
		amx.ToBF16(ob, v[0][:N*K])
		f.mul(N, ob, f.weight(name, v[1], K, D, false), v[2], false)
		return
	}
	gemm(m.ws, N, K, D, o, false, m.P.W(name), false, out, false)
}

// normFwd is rmsnormFwd over rows of d_model; the float32 model also
// writes the bf16 copy *yb (the next GEMM's A operand) in the same pass.
func (m *Model[T]) normFwd(x, g, y, r []T, yb *[]amx.BF16, eps T) {
	D := m.Cfg.DModel
	if m.f32 == nil {
		rmsnormFwd(x, g, y, r, D, eps)
		return
	}
	v := f32s(x, g, y, r)
	x32, g32, y32, r32 := v[0], v[1], v[2], v[3]
	*yb = growBF(*yb, len(x))
	amx.RMSNormRows(y32[:len(x)], *yb, x32, g32, D, float32(eps)) // all rows in one call
	for t := 0; t < len(x)/D; t++ {
		row := x32[t*D : (t+1)*D]
		r32[t] = float32(1 / math.Sqrt(float64(amx.Dot(row, row))/float64(D)+float64(eps)))
	}
}

// gemmWeight computes C (M×n) (+)= A·op(W) for expert e's slice w of the
// weight tensor name: op(W) = W (k×n) or, with tW, Wᵀ (w stored n×k). The
// float32 model multiplies by the step's cached bf16 pack of that expert's
// W or Wᵀ instead of converting and packing it per call.
func (m *Model[T]) gemmWeight(name string, e, M, k, n int, a, w []T, tW bool, c []T, acc bool) {
	f := m.f32
	if f == nil || M == 0 {
		gemm(m.ws, M, k, n, a, false, w, tW, c, acc)
		return
	}
	v := f32s(a, w, c)
	key := name + "#" + strconv.Itoa(e)
	var b *amx.Matrix
	if tW {
		b = f.weight(key, v[1], n, k, true)
	} else {
		b = f.weight(key, v[1], k, n, false)
	}
	f.mul(M, f.toBF("gemmWeight.a", v[0][:M*k]), b, v[2], acc)
}
