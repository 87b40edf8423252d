package train

import "github.com/onecore-dev/onecore/amx"

// fast32 is the float32 model's GEMM state: the bf16 packs of every weight
// for the current step, and bf16 scratch. With it the dense products of a
// step convert each activation to bf16 once (the forward keeps the bf16
// copies the backward's weight gradients read), pack each weight once per
// direction per step, and fuse ReLU² and the bf16 rounding into the GEMM
// epilogue. The float64 reference path does not use it.
type fast32 struct {
	kern  amx.Kernel
	gen   int // bumped by every Forward: weights may have changed
	packs map[string]*weightPack
	bf    map[string][]amx.BF16
	tmp   amx.Matrix // per-call pack of an activation operand
	tmp2  amx.Matrix // a second one (MoE: the block's dy)
	wbf   []amx.BF16
	ep    amx.Epilogue
}

// weightPack is one weight's bf16 pack (W, or Wᵀ for input gradients),
// valid while gen matches.
type weightPack struct {
	gen int
	mat amx.Matrix
}

func newFast32() *fast32 {
	return &fast32{kern: amx.Selected(), packs: map[string]*weightPack{}, bf: map[string][]amx.BF16{}}
}

// scratch returns bf16 scratch of n elements kept under key (contents
// undefined).
func (f *fast32) scratch(key string, n int) []amx.BF16 {
	b := growBF(f.bf[key], n)
	f.bf[key] = b
	return b
}

// weight returns the pack of the k×n weight w as the B operand of x·W, or
// with transposed the pack of Wᵀ (n×k as B: the input gradient dy·Wᵀ).
func (f *fast32) weight(name string, w []float32, k, n int, transposed bool) *amx.Matrix {
	key := name
	if transposed {
		key += "ᵀ"
	}
	p := f.packs[key]
	if p == nil {
		p = &weightPack{gen: -1}
		f.packs[key] = p
	}
	if p.gen != f.gen {
		f.wbf = growBF(f.wbf, k*n)
		amx.ToBF16(f.wbf, w[:k*n])
		if transposed {
			amx.PackTransposedFor(f.kern, &p.mat, n, k, f.wbf, n)
		} else {
			amx.PackFor(f.kern, &p.mat, k, n, f.wbf, n)
		}
		p.gen = f.gen
	}
	return &p.mat
}

// mul computes C (m×B.N, fp32) (+)= A·B for bf16 A (row-major, K columns).
func (f *fast32) mul(m int, a []amx.BF16, b *amx.Matrix, c []float32, acc bool) {
	f.ep = amx.Epilogue{Accumulate: acc}
	amx.MatMul(m, a, b.K, b, c, b.N, &f.ep)
}

// linearBwd is the backward of y = x·W (x N×K, W K×n) given xT = xᵀ in
// bf16 (K×N) and dyb = dy in bf16 (N×n): dW += xᵀ·dy and dx (+)= dy·Wᵀ
// (dx nil: not wanted).
func (f *fast32) linearBwd(N, K, n int, xT, dyb []amx.BF16, name string, w, dw, dx []float32, accDx bool) {
	amx.PackFor(f.kern, &f.tmp, N, n, dyb, n)
	f.mul(K, xT, &f.tmp, dw, true)
	if dx != nil {
		f.mul(N, dyb, f.weight(name, w, K, n, true), dx, accDx)
	}
}

// toBF returns x rounded to bf16 in scratch kept under key.
func (f *fast32) toBF(key string, x []float32) []amx.BF16 {
	b := f.scratch(key, len(x))
	amx.ToBF16(b, x)
	return b
}

// transposed returns the c×r transpose of the r×c bf16 matrix x in scratch
// kept under key.
func (f *fast32) transposed(key string, x []amx.BF16, r, c int) []amx.BF16 {
	t := f.scratch(key, r*c)
	amx.TransposeBF16(t, x[:r*c], r, c)
	return t
}

// mlpFwd32: u = n2·W_up with ReLU² in the epilogue (act, fp32 and bf16),
// out = act·W_down.
func (f *fast32) mlpFwd(N, D, F int, lc *layerCache[float32], wUp, wDown []float32, pre string, out []float32) {
	// lc.n2b: written by normFwd
	lc.act = grow(lc.act, N*F)
	lc.actb = growBF(lc.actb, N*F)
	f.ep = amx.Epilogue{Act: amx.ActReLU2, OutBF16: lc.actb}
	up := f.weight(pre+"mlp.w_up", wUp, D, F, false)
	amx.MatMul(N, lc.n2b, D, up, lc.act, F, &f.ep)
	f.mul(N, lc.actb, f.weight(pre+"mlp.w_down", wDown, F, D, false), out, false)
}

// mlpBwd32: with act = relu(u)², du = dact·2·relu(u) = dact·2·√act.
func (f *fast32) mlpBwd(N, D, F int, lc *layerCache[float32], wUp, wDown, dUp, dDown []float32, pre string, dy, du, dx []float32) {
	dyb := f.toBF("dy", dy[:N*D])
	f.linearBwd(N, F, D, f.transposed("actT", lc.actb, N, F), dyb, pre+"mlp.w_down", wDown, dDown, du, false)
	dub := f.scratch("du", N*F)
	amx.ReLU2Grad(dub, du[:N*F], lc.act[:N*F])
	f.linearBwd(N, D, F, f.transposed("xT", lc.n2b, N, D), dub, pre+"mlp.w_up", wUp, dUp, dx, false)
}

// qkvFwd: q, k, v = n1·Wq, n1·Wk, n1·Wv from one bf16 copy of n1, kept
// for the backward.
func (f *fast32) qkvFwd(N, D int, lc *layerCache[float32], names []string, ws [][]float32, outs [][]float32) {
	// lc.n1b: written by normFwd
	for i, name := range names {
		n := len(ws[i]) / D
		f.mul(N, lc.n1b, f.weight(name, ws[i], D, n, false), outs[i], false)
	}
}

// qkvBwd: dW += n1ᵀ·d for each of q, k, v, and dx = Σ d·Wᵀ.
func (f *fast32) qkvBwd(N, D int, lc *layerCache[float32], names []string, ws, dws, ds [][]float32, dx []float32) {
	xT := f.transposed("xT", lc.n1b, N, D)
	for i, name := range names {
		n := len(ws[i]) / D
		f.linearBwd(N, D, n, xT, f.toBF("dqkv", ds[i][:N*n]), name, ws[i], dws[i], dx, i > 0)
	}
}

// outBwd is the backward of out = o·Wo (o N×K, its bf16 copy kept by
// outProj): dWo += oᵀ·dy, do = dy·Woᵀ.
func (f *fast32) outBwd(N, K, D int, name string, w, dw, dy, do []float32) {
	ob := f.scratch(name, N*K) // outProj's bf16 o
	f.linearBwd(N, K, D, f.transposed("oT", ob, N, K), f.toBF("dy", dy[:N*D]), name, w, dw, do, false)
}
