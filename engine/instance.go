package engine

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// linChunk is the chunk length of the chunked linear attention (positions
// counted from the document's start). A fixed power of two: large enough
// that the intra-chunk products are GEMMs, small enough that the masked
// upper triangle wastes little.
const linChunk = 64

// Instance runs the model on one core: it owns all scratch memory (grown
// on demand, then reused, so steady-state calls do not allocate) and must
// not be used by two goroutines at once. Create one per worker.
type Instance struct {
	m    *Model
	Prof *Profile // per-op time breakdown; nil disables timing

	// Load counts the tokens routed to each expert, per layer (nil rows
	// for dense layers), since the instance was created.
	Load [][]int64

	// The current pass: n rows from docs laid out back to back.
	n      int
	segs   []segment
	pieces []piece
	carry  *carry  // reused for long documents
	pos    []int32 // position of each row within its document

	h    []float32  // residual stream [n×D]
	xf   []float32  // fp32 norm output [n×D] (router input, final hidden)
	xb   []amx.BF16 // bf16 norm output [n×D] (GEMM A operand)
	proj []float32  // projection outputs [n×P]
	prjb []amx.BF16 // the same in bf16
	mix  []float32  // linear-attention outputs before the head norm [n×lv]
	mixb []amx.BF16 // mixer outputs, A of Wo [n×max(sd,lv)]
	hid  []amx.BF16 // MLP hidden [n×d_ff]

	// attention scratch
	swaTmp                   []float32
	prevK, prevV, curK, curV []*amx.Matrix
	scores                   []float32
	probs                    []amx.BF16
	kt, vp                   *amx.Matrix
	// linear attention scratch
	lkt     []amx.BF16
	la, ktf []float32
	sp1     []float32  // softplus(z+b) per row and head
	eLa     []float32  // e^(L_i) of a chunk
	qe      []amx.BF16 // queries times e^(L_i)
	state   []float32  // [lin_heads × d_state × lin_head_dim]
	stateB  []amx.BF16
	sp      *amx.Matrix
	// MoE scratch
	rexp    []int32   // [n×top_k] selected experts, ascending
	rgate   []float32 // [n×top_k] their gates
	ecnt    []int
	eoff    []int
	erow    []int32
	egate   []float32
	gath    []amx.BF16
	ehid    []amx.BF16
	eout    []float32
	rvec    []float32
	rlogit  []float32
	rsel    []int
	ropeTmp []float32

	lpTile, lpRow []float32
	touch         emb16Sink // keeps setupPieces' prefetching loads

	// export receives, per segment of the pass (nil: none), the decode
	// state at the end of the document.
	export []*seqState

	ep amx.Epilogue // reused so MatMul calls do not allocate

	// PassTokens is how many tokens Prefill packs per pass (0: DefaultPassTokens).
	PassTokens int
}

// segment is one document's rows in the pass: the whole document, or a
// piece of a long one starting at position off (a multiple of pieceAlign)
// with the state of the positions before it in carry.
type segment struct {
	start, n int
	off      int    // document position of the first row
	final    bool   // the document's last piece
	carry    *carry // state before off (off > 0), updated for the next piece
}

// carry is what a long document's next piece needs from the previous
// pieces. Pieces start at multiples of window, linChunk and route_block,
// so carrying these values makes a split document compute exactly what it
// would unsplit (bit for bit).
type carry struct {
	k, v []([]amx.BF16) // per SWA layer: keys (post-RoPE) and values of the previous window-chunk [W × sd]
	s    [][]float32    // per linear layer: state after the previous chunk
	msum [][]float32    // per MoE layer: Σ norm2 outputs over the previous route block
}

func newCarry(c *Config) *carry {
	L := len(c.Layers)
	cr := &carry{k: make([][]amx.BF16, L), v: make([][]amx.BF16, L), s: make([][]float32, L), msum: make([][]float32, L)}
	sd := c.SWAHeads * c.SWAHeadDim
	for i, kind := range c.Layers {
		if kind == MixerSWA {
			cr.k[i] = make([]amx.BF16, c.Window*sd)
			cr.v[i] = make([]amx.BF16, c.Window*sd)
		} else {
			cr.s[i] = make([]float32, c.LinHeads*c.DState*c.LinHeadDim)
		}
		if c.IsMoE(i) {
			cr.msum[i] = make([]float32, c.DModel)
		}
	}
	return cr
}

// pieceAlign is the granularity at which a long document may be split:
// a multiple of the SWA window, the linear-attention chunk and the route block.
func (c *Config) pieceAlign() int {
	return lcm(lcm(c.Window, linChunk), c.RouteBlock)
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// piece is a run of one document's tokens for setup.
type piece struct {
	toks  []int32
	off   int
	final bool
	carry *carry
}

// NewInstance creates an instance over m's shared weights.
func NewInstance(m *Model) *Instance {
	in := &Instance{m: m}
	in.Load = make([][]int64, len(m.Cfg.Layers))
	for i := range m.layers {
		if m.layers[i].moe {
			in.Load[i] = make([]int64, m.Cfg.Experts)
		}
	}
	return in
}

// Model returns the instance's model.
func (in *Instance) Model() *Model { return in.m }

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n, n+n/4)
	}
	return s[:n]
}

func growB(s []amx.BF16, n int) []amx.BF16 {
	if cap(s) < n {
		return make([]amx.BF16, n, n+n/4)
	}
	return s[:n]
}

// projWidth is the widest fused projection (SWA qkv or lin qkva).
func (c *Config) projWidth() int {
	sd := c.SWAHeads * c.SWAHeadDim
	lw := 2*c.LinHeads*c.DState + c.LinHeads*c.LinHeadDim + c.LinHeads
	return max(3*sd, lw)
}

// reserve sizes the per-row scratch for n rows.
func (in *Instance) reserve(n, _ int) {
	c := &in.m.Cfg
	D := c.DModel
	sd, lvw := c.SWAHeads*c.SWAHeadDim, c.LinHeads*c.LinHeadDim
	in.pos = growI32(in.pos, n)
	in.h = growF(in.h, n*D)
	in.xf = growF(in.xf, n*D)
	in.xb = growB(in.xb, n*D)
	P := c.projWidth()
	in.proj = growF(in.proj, n*P)
	in.prjb = growB(in.prjb, n*P)
	in.mix = growF(in.mix, n*lvw)
	in.mixb = growB(in.mixb, n*max(sd, lvw))
	in.hid = growB(in.hid, n*max(c.DFF, c.TopK*c.DFFExpert))
	if len(c.MoELayers) > 0 {
		in.rexp = growI32(in.rexp, n*c.TopK)
		in.rgate = growF(in.rgate, n*c.TopK)
		in.erow = growI32(in.erow, n*c.TopK)
		in.egate = growF(in.egate, n*c.TopK)
		in.gath = growB(in.gath, n*D)
		in.ehid = growB(in.ehid, n*c.DFFExpert)
		in.eout = growF(in.eout, n*D)
	}
}

func growI32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n, n+n/4)
	}
	return s[:n]
}

// rope returns the cos/sin rows of position p: from the model's shared
// table, or computed into the instance's scratch beyond it.
func (in *Instance) rope(p int) (cos, sin []float32) {
	half := in.m.Cfg.SWAHeadDim / 2
	if p < in.m.ropeN {
		return in.m.ropeCos[p*half : (p+1)*half], in.m.ropeSin[p*half : (p+1)*half]
	}
	in.ropeTmp = growF(in.ropeTmp, 2*half)
	cos, sin = in.ropeTmp[:half], in.ropeTmp[half:]
	ropeRow(cos, sin, p, in.m.invFreq)
	return cos, sin
}

// ropeRow computes one position's cos/sin (angles in float64).
func ropeRow(cos, sin []float32, p int, invFreq []float64) {
	for i, f := range invFreq {
		ang := float64(p) * f
		cos[i] = float32(math.Cos(ang))
		sin[i] = float32(math.Sin(ang))
	}
}

// setup lays whole documents out as one pass and embeds their tokens.
func (in *Instance) setup(docs [][]int32) {
	in.pieces = in.pieces[:0]
	for _, d := range docs {
		in.pieces = append(in.pieces, piece{toks: d, final: true})
	}
	in.setupPieces(in.pieces)
}

// setupPieces lays pieces of documents out as one pass and embeds them.
func (in *Instance) setupPieces(ps []piece) {
	n, maxPos := 0, 0
	in.segs = in.segs[:0]
	for _, p := range ps {
		in.segs = append(in.segs, segment{start: n, n: len(p.toks), off: p.off, final: p.final, carry: p.carry})
		n += len(p.toks)
		maxPos = max(maxPos, p.off+len(p.toks))
	}
	in.n = n
	in.reserve(n, maxPos)
	D := in.m.Cfg.DModel
	t0 := in.tick()
	// Touch every embedding row's cache lines first: the loads are
	// independent, so the core keeps many misses in flight, where the
	// converting loop below would meet them one row at a time (a random
	// row of a 4 MB table is rarely cached; this was 2.4 % of a narrow
	// model's extraction).
	var touch emb16Sink
	for _, p := range ps {
		for _, tok := range p.toks {
			row := in.m.emb[int(tok)*D : (int(tok)+1)*D]
			for c := 0; c < D; c += 32 {
				touch ^= emb16Sink(row[c])
			}
		}
	}
	in.touch = touch
	r := 0
	for _, p := range ps {
		for i, tok := range p.toks {
			amx.ToFloat32(in.h[r*D:(r+1)*D], in.m.emb[int(tok)*D:(int(tok)+1)*D])
			in.pos[r] = int32(p.off + i)
			r++
		}
	}
	in.tock(OpElementwise, t0)
}

// forward runs every layer over the pass and leaves the final RMSNorm
// output in xf (fp32) and xb (bf16).
func (in *Instance) forward() {
	for li := range in.m.layers {
		in.layer(li)
	}
	in.norm(in.m.normG, true)
}

// norm writes RMSNorm(h)·g of every row into xb (and xf when wantF).
func (in *Instance) norm(g []float32, wantF bool) {
	t0 := in.tick()
	D := in.m.Cfg.DModel
	n := in.n * D
	var dst []float32
	if wantF {
		dst = in.xf[:n]
	}
	amx.RMSNormRows(dst, in.xb[:n], in.h[:n], g, D, float32(in.m.Cfg.NormEps))
	in.tock(OpElementwise, t0)
}

func (in *Instance) layer(li int) {
	lw := &in.m.layers[li]
	in.norm(lw.norm1, false)
	if lw.kind == MixerSWA {
		in.swaPrefill(li, lw)
	} else {
		in.linPrefill(li, lw)
	}
	in.norm(lw.norm2, lw.moe)
	if lw.moe {
		in.routePrefill(li)
		in.moe(li)
	} else {
		in.mlp(lw)
	}
}

// matmul is amx.MatMul with the instance's reusable epilogue.
func (in *Instance) matmul(m int, a []amx.BF16, lda int, b *amx.Matrix, c []float32, ldc int, ep *amx.Epilogue) {
	t0 := in.tick()
	amx.MatMul(m, a, lda, b, c, ldc, ep)
	in.tockGEMM(t0, m, b)
}

func (in *Instance) epilogue() *amx.Epilogue {
	in.ep = amx.Epilogue{}
	return &in.ep
}

// mlp is the dense ReLU² MLP: h += relu(xb·W_up)²·W_down.
func (in *Instance) mlp(lw *layerWeights) {
	D, F := in.m.Cfg.DModel, in.m.Cfg.DFF
	ep := in.epilogue()
	ep.Act, ep.OutBF16, ep.LdOut = amx.ActReLU2, in.hid, F
	in.matmul(in.n, in.xb, D, lw.up, nil, 0, ep)
	ep = in.epilogue()
	ep.Accumulate = true
	in.matmul(in.n, in.hid, F, lw.down, in.h, D, ep)
}

// emb16Sink is where setupPieces' prefetching loads end up, so the
// compiler keeps them.
type emb16Sink uint16
