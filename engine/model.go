package engine

import (
	"fmt"
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// Model is a checkpoint's weights packed once for one amx kernel. It is
// read-only after NewModel and shared by every Instance.
type Model struct {
	Cfg    Config
	Kernel amx.Kernel
	Gen    *Generation // may be nil
	// Int8 is true when the layers' weight matrices were quantized to
	// int8 (ModelOptions.Int8): faster, no longer the exact model.
	Int8 bool

	emb    []amx.BF16  // [V×D] row-major: token embeddings
	readT  *amx.Matrix // Eᵀ packed: D×V, the tied readout
	normG  []float32
	layers []layerWeights

	// Classifier head (nil without head.cls.w): fp32 [D×n], bias [n].
	clsW, clsB []float32
	// pooling is the classifier's (PoolMean, PoolLast, PoolAttention);
	// clsQ is attention pooling's query
	pooling string
	clsQ    []float32
	nLabels int

	// Span-extraction head (nil without head.span.w): fp32 [D×2], bias [2];
	// spanCols holds its start column then its end column, each contiguous
	// (what the SIMD dot products of spanLogits read).
	spanW, spanB []float32
	spanCols     []float32

	// RoPE inverse frequencies (float64, exact to the spec's formula) and
	// cos/sin tables for positions below ropeN, shared by all instances.
	invFreq          []float64
	ropeCos, ropeSin []float32
	ropeN            int

	// mask lists masked vocabulary ids (from generation.json).
	stopIDs []int32
}

type layerWeights struct {
	kind         string
	norm1, norm2 []float32

	// SWA: [Wq|Wk|Wv] concatenated by columns (one GEMM), Wo.
	// Linear attention: [Wq|Wk|Wv|Wa] likewise; ba, gn fp32.
	wqkv, wo *amx.Matrix
	ba, gn   []float32

	// Dense MLP.
	up, down *amx.Matrix

	// MoE: one packed W_up/W_down per expert; router in fp32.
	moe              bool
	expUp, expDown   []*amx.Matrix
	routerW, routerB []float32 // [D×E], [E]
}

// NewModel packs ck's weights for amx.Selected().
func NewModel(ck *Checkpoint) (*Model, error) { return NewModelFor(ck, amx.Selected()) }

// NewModelFor packs ck's weights for kernel kern.
func NewModelFor(ck *Checkpoint, kern amx.Kernel) (*Model, error) {
	return NewModelWith(ck, kern, ModelOptions{})
}

// packWeight packs the row-major k×n fp32 weight w for kern: quantized to
// int8 from its fp32 values with opts.Int8, else rounded to bf16.
func packWeight(kern amx.Kernel, k, n int, w []float32, opts ModelOptions) *amx.Matrix {
	if opts.Int8 {
		return amx.PackQ8(kern, k, n, w, n)
	}
	return amx.PackFor(kern, nil, k, n, toBF16(w), n)
}

// ModelOptions are how NewModelWith packs a checkpoint.
type ModelOptions struct {
	// Int8 quantizes every layer's weight matrices (attention and linear
	// attention projections, MLP, experts) to int8 per output column, and
	// their inputs to int8 per row at each product (amx.PackQ8): about
	// 1.5-1.8× faster products where the CPU has AVX-512 VNNI, at the
	// price of a small quantization error, so outputs are no longer the
	// exact model's (still batch invariant). Embeddings, norms, the
	// attention scores, the readout and the heads stay as they are.
	Int8 bool
}

// NewModelWith packs ck's weights for kernel kern as opts says.
func NewModelWith(ck *Checkpoint, kern amx.Kernel, opts ModelOptions) (*Model, error) {
	if !kern.Supported() {
		return nil, fmt.Errorf("kernel %v not supported on this CPU/build", kern)
	}
	cfg := *ck.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	get := func(name string, size int) ([]float32, error) {
		v, ok := ck.Tensors[name]
		if !ok {
			return nil, fmt.Errorf("missing tensor %q", name)
		}
		if len(v) != size {
			return nil, fmt.Errorf("tensor %q: %d values, want %d", name, len(v), size)
		}
		return v, nil
	}
	D := cfg.DModel
	m := &Model{Cfg: cfg, Kernel: kern, Gen: ck.Generation, Int8: opts.Int8}
	e, err := get("emb", cfg.VocabSize*D)
	if err != nil {
		return nil, err
	}
	m.emb = toBF16(e)
	m.readT = amx.PackTransposedFor(kern, nil, D, cfg.VocabSize, m.emb, D)
	if m.normG, err = get("norm.g", D); err != nil {
		return nil, err
	}
	// pack concatenates weights [D × n_i] by columns and packs them.
	pack := func(k int, names ...string) (*amx.Matrix, error) {
		var parts [][]float32
		n := 0
		for _, name := range names {
			v, ok := ck.Tensors[name]
			if !ok || len(v)%k != 0 {
				return nil, fmt.Errorf("tensor %q missing or not %d rows", name, k)
			}
			parts = append(parts, v)
			n += len(v) / k
		}
		buf := make([]float32, k*n)
		col := 0
		for _, p := range parts {
			w := len(p) / k
			for r := 0; r < k; r++ {
				copy(buf[r*n+col:r*n+col+w], p[r*w:(r+1)*w])
			}
			col += w
		}
		return packWeight(kern, k, n, buf, opts), nil
	}
	for i, kind := range cfg.Layers {
		p := fmt.Sprintf("layers.%d.", i)
		lw := layerWeights{kind: kind, moe: cfg.IsMoE(i)}
		if lw.norm1, err = get(p+"norm1.g", D); err != nil {
			return nil, err
		}
		if lw.norm2, err = get(p+"norm2.g", D); err != nil {
			return nil, err
		}
		switch kind {
		case MixerSWA:
			if lw.wqkv, err = pack(D, p+"swa.wq", p+"swa.wk", p+"swa.wv"); err != nil {
				return nil, err
			}
			if lw.wo, err = pack(cfg.SWAHeads*cfg.SWAHeadDim, p+"swa.wo"); err != nil {
				return nil, err
			}
		case MixerLinear:
			if lw.wqkv, err = pack(D, p+"lin.wq", p+"lin.wk", p+"lin.wv", p+"lin.wa"); err != nil {
				return nil, err
			}
			if lw.wo, err = pack(cfg.LinHeads*cfg.LinHeadDim, p+"lin.wo"); err != nil {
				return nil, err
			}
			if lw.ba, err = get(p+"lin.ba", cfg.LinHeads); err != nil {
				return nil, err
			}
			if lw.gn, err = get(p+"lin.gn", cfg.LinHeads*cfg.LinHeadDim); err != nil {
				return nil, err
			}
		}
		if lw.moe {
			E, F := cfg.Experts, cfg.DFFExpert
			if lw.routerW, err = get(p+"moe.router.w", D*E); err != nil {
				return nil, err
			}
			if lw.routerB, err = get(p+"moe.router.b", E); err != nil {
				return nil, err
			}
			up, err := get(p+"moe.w_up", E*D*F)
			if err != nil {
				return nil, err
			}
			down, err := get(p+"moe.w_down", E*F*D)
			if err != nil {
				return nil, err
			}
			for x := 0; x < E; x++ {
				lw.expUp = append(lw.expUp, packWeight(kern, D, F, up[x*D*F:(x+1)*D*F], opts))
				lw.expDown = append(lw.expDown, packWeight(kern, F, D, down[x*F*D:(x+1)*F*D], opts))
			}
		} else {
			if lw.up, err = pack(D, p+"mlp.w_up"); err != nil {
				return nil, err
			}
			if lw.down, err = pack(cfg.DFF, p+"mlp.w_down"); err != nil {
				return nil, err
			}
		}
		m.layers = append(m.layers, lw)
	}
	if w, ok := ck.Tensors[HeadClsW]; ok {
		m.nLabels = len(w) / D
		m.clsW = w
		m.clsB = ck.Tensors[HeadClsB]
		if m.clsB == nil {
			m.clsB = make([]float32, m.nLabels)
		}
		m.pooling = ck.Generation.PoolingKind()
		m.clsQ = ck.Tensors[HeadClsQ]
	}
	if w, ok := ck.Tensors[HeadSpanW]; ok {
		if len(w) != 2*D {
			return nil, fmt.Errorf("tensor %q: %d values, want %d", HeadSpanW, len(w), 2*D)
		}
		m.spanW = w
		m.spanCols = make([]float32, 2*D)
		for d := 0; d < D; d++ {
			m.spanCols[d], m.spanCols[D+d] = w[2*d], w[2*d+1]
		}
		m.spanB = ck.Tensors[HeadSpanB]
		if m.spanB == nil {
			m.spanB = make([]float32, 2)
		}
	}
	half := cfg.SWAHeadDim / 2
	m.invFreq = make([]float64, half)
	for i := range m.invFreq {
		m.invFreq[i] = math.Pow(cfg.RopeTheta, -2*float64(i)/float64(cfg.SWAHeadDim))
	}
	m.ropeN = ropeTablePositions
	m.ropeCos = make([]float32, m.ropeN*half)
	m.ropeSin = make([]float32, m.ropeN*half)
	for p := 0; p < m.ropeN; p++ {
		ropeRow(m.ropeCos[p*half:(p+1)*half], m.ropeSin[p*half:(p+1)*half], p, m.invFreq)
	}
	if m.Gen != nil {
		m.stopIDs = m.Gen.StopIDs
	}
	return m, nil
}

// ropeTablePositions is how many positions the shared RoPE table covers;
// later positions are computed per row.
const ropeTablePositions = 8192

// NumLabels is the classifier head's width (0 without head.cls).
func (m *Model) NumLabels() int { return m.nLabels }

func toBF16(v []float32) []amx.BF16 {
	b := make([]amx.BF16, len(v))
	amx.ToBF16(b, v)
	return b
}
