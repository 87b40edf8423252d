package train

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func tinyConfig(moe bool) *Config {
	c := &Config{
		Arch: "onecore-hybrid", VocabSize: 23, DModel: 8,
		Layers:   []string{"lin", "swa", "swa", "lin"},
		SWAHeads: 2, SWAHeadDim: 4, Window: 3, RopeTheta: 10000,
		LinHeads: 2, DState: 3, LinHeadDim: 2, DFF: 6,
		MoELayers: []int{}, Experts: 4, TopK: 2, DFFExpert: 3, RouteBlock: 2, NormEps: 1e-5,
	}
	if moe {
		c.MoELayers = []int{0, 2}
	}
	return c
}

// tinyBatch: two rows of 9 tokens, documents of several lengths, a row that
// starts mid-document (no <bos>) and one ending in padding.
func tinyBatch() (ids, targets []int32, rowLen int) {
	ids = []int32{1, 5, 7, 9, 2, 1, 4, 4, 8, 6, 11, 12, 13, 14, 2, 1, 3, 0}
	rowLen = 9
	targets = make([]int32, len(ids))
	for t := range ids {
		targets[t] = -1
		if (t+1)%rowLen != 0 && ids[t+1] != bosID && ids[t+1] != padID {
			targets[t] = ids[t+1]
		}
	}
	return
}

func randomParams64(c *Config, seed uint64) *Params[float64] { return randomParams64L(c, seed, 0) }

// withTensor is p with one more tensor (zero), the others' values kept.
func withTensor(p *Params[float64], s TensorSpec) *Params[float64] {
	q := NewParams[float64](append(slices.Clone(p.Specs), s))
	for _, sp := range p.Specs {
		copy(q.W(sp.Name), p.W(sp.Name))
	}
	return q
}

func randomParams64L(c *Config, seed uint64, nLabels int) *Params[float64] {
	p := NewParams[float64](ParamSpecs(c, nLabels))
	p.Init(c, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	// perturb gains and biases so their gradients are not trivially symmetric
	for _, s := range p.Specs {
		if len(s.Shape) == 1 {
			for i, w := range p.W(s.Name) {
				p.W(s.Name)[i] = w + 0.3*rng.NormFloat64()
			}
		}
	}
	for i, w := range p.W("emb") {
		p.W("emb")[i] = w * 20 // larger logits exercise the softmax
	}
	return p
}

// checkGrads compares analytic gradients of loss() with central finite
// differences for every parameter.
func checkGrads(t *testing.T, p *Params[float64], loss func(grad bool) float64) {
	t.Helper()
	p.ZeroGrad()
	loss(true)
	analytic := append([]float64(nil), p.Grad...)
	const h = 1e-6
	for _, s := range p.Specs {
		w, ga := p.W(s.Name), analytic[p.Off[s.Name]:p.Off[s.Name]+s.Size()]
		var num, den, maxAbs float64
		for i := range w {
			old := w[i]
			w[i] = old + h
			lp := loss(false)
			w[i] = old - h
			lm := loss(false)
			w[i] = old
			fd := (lp - lm) / (2 * h)
			num += (fd - ga[i]) * (fd - ga[i])
			den += fd*fd + ga[i]*ga[i]
			maxAbs = math.Max(maxAbs, math.Abs(ga[i]))
		}
		if maxAbs == 0 {
			t.Errorf("%s: gradient identically zero", s.Name)
			continue
		}
		if rel := math.Sqrt(num / den); rel > 1e-5 {
			t.Errorf("%s: relative gradient error %.3g (max |g| %.3g)", s.Name, rel, maxAbs)
		}
	}
}

func TestGradFiniteDifferences(t *testing.T) {
	ids, targets, rowLen := tinyBatch()
	for _, tc := range []struct {
		name    string
		moe     bool
		sampled bool
	}{
		{"dense/full", false, false},
		{"moe/full", true, false},
		{"dense/sampled", false, true},
		{"moe/sampled", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(tc.moe)
			p := randomParams64(c, 7)
			m := NewModel(c, p)
			m.AuxCoef = 0.5
			// linear-attention chunks of 2 (decay sub-blocks of 1): the
			// documents span first, middle and last chunks
			m.linChunk, m.linSub = 2, 1
			logq := make([]float64, c.VocabSize)
			for i := range logq {
				logq[i] = math.Log(float64(i+1) / float64(c.VocabSize*(c.VocabSize+1)/2))
			}
			negs := []int32{3, 5, 5, 9, 12, 20, 0, 7}
			checkGrads(t, p, func(grad bool) float64 {
				hf := m.Forward(ids, rowLen)
				var l float64
				var dhf []float64
				if tc.sampled {
					l, _, dhf = SampledSoftmax(m, hf, targets, negs, logq)
				} else {
					l, _, dhf = FullCE(m, hf, targets, grad)
				}
				if grad {
					m.Backward(dhf)
				}
				return l + m.AuxLoss
			})
		})
	}
}

// TestGradClassifierHead: the head loss's gradient, through the body, for
// every head kind (multiclass softmax, multilabel sigmoids, regression).
func TestGradClassifierHead(t *testing.T) {
	for _, tc := range []struct {
		kind, pooling string
		L             int
		ys            [][]float32
	}{
		{"multiclass", "", 3, nil},
		{"multilabel", "", 3, [][]float32{{1, 0, 1}, {0, 0, 0}, {0, 1, 0}}},
		{"regression", "", 1, [][]float32{{0.7}, {-1.3}, {0.2}}},
		{"multiclass", "last", 3, nil},
		{"multiclass", "attention", 3, nil},
		{"regression", "attention", 1, [][]float32{{0.7}, {-1.3}, {0.2}}},
	} {
		t.Run(tc.kind+"/"+tc.pooling, func(t *testing.T) {
			c := tinyConfig(true)
			p := randomParams64L(c, 3, tc.L)
			heads := []string{"head.cls.w", "head.cls.b"}
			if tc.pooling == "attention" {
				// a nonzero query (zero is the mean) so the softmax's own
				// gradient is exercised
				p = withTensor(p, TensorSpec{"head.cls.q", []int{c.DModel}})
				heads = append(heads, "head.cls.q")
			}
			rng := rand.New(rand.NewPCG(3, 3))
			for _, name := range heads {
				for i := range p.W(name) {
					p.W(name)[i] = rng.NormFloat64()
				}
			}
			m := NewModel(c, p)
			m.AuxCoef = 0
			batch := []labeledDoc{{ids: []int32{1, 5, 6, 7}, label: 0}, {ids: []int32{1, 9}, label: 2}, {ids: []int32{1, 4, 4, 4, 8, 3}, label: 1}}
			for i := range batch {
				if tc.ys != nil {
					batch[i].y = tc.ys[i]
				}
			}
			var ids []int32
			for _, d := range batch {
				ids = append(ids, d.ids...)
			}
			checkGrads(t, p, func(grad bool) float64 {
				hf := m.Forward(ids, 0)
				l, dhf := headLoss(tc.kind, tc.pooling, p, hf, batch, tc.L, 0)
				if grad {
					m.Backward(dhf)
				}
				return l
			})
		})
	}
}

// The float32 training path (bf16 GEMM operands through amx, SIMD vector
// helpers) must give the float64 reference's gradients up to bf16 rounding.
func TestGradFloat32MatchesFloat64(t *testing.T) {
	// the small config: the tiny one's 2-wide heads are too ill-conditioned
	// for bf16 operands
	rng := rand.New(rand.NewPCG(4, 4))
	rowLen := 48
	ids := make([]int32, 2*rowLen)
	for i := range ids {
		ids[i] = int32(3 + rng.IntN(250))
	}
	ids[0], ids[20], ids[rowLen+30] = bosID, bosID, bosID
	targets := make([]int32, len(ids))
	Targets(ids, rowLen, targets, nil)
	negs := make([]int32, 40)
	nrng := rand.New(rand.NewPCG(5, 5))
	for i := range negs {
		negs[i] = int32(nrng.IntN(259))
	}
	logq := make([]float64, 259)
	for i := range logq {
		logq[i] = -math.Log(259) + 0.01*float64(i%7)
	}
	for _, tc := range []struct{ moe, sampled bool }{{false, false}, {true, false}, {false, true}} {
		moe := tc.moe
		c := smallConfig()
		if moe {
			c.MoELayers = []int{0, 2}
		}
		p64 := NewParams[float64](ParamSpecs(c, 0))
		p64.Init(c, 9)
		for _, s := range p64.Specs {
			if len(s.Shape) == 1 {
				for i := range p64.W(s.Name) {
					p64.W(s.Name)[i] += 0.3 * rng.NormFloat64()
				}
			}
		}
		p32 := NewParams[float32](p64.Specs)
		for i, v := range p64.Data {
			p32.Data[i] = float32(v)
		}
		m64, m32 := NewModel(c, p64), NewModel(c, p32)
		m64.AuxCoef, m32.AuxCoef = 0.1, 0.1
		m64.linChunk, m64.linSub, m32.linChunk, m32.linSub = 16, 4, 16, 4
		var l64, l32 float64
		var d64 []float64
		var d32 []float32
		if tc.sampled { // the float32 loss runs amx.SoftmaxRow
			l64, _, d64 = SampledSoftmax(m64, m64.Forward(ids, rowLen), targets, negs, logq)
			l32, _, d32 = SampledSoftmax(m32, m32.Forward(ids, rowLen), targets, negs, logq)
		} else {
			l64, _, d64 = FullCE(m64, m64.Forward(ids, rowLen), targets, true)
			l32, _, d32 = FullCE(m32, m32.Forward(ids, rowLen), targets, true)
		}
		if math.Abs(l32-l64) > 0.01*math.Abs(l64) {
			t.Errorf("%+v: float32 loss %.6g, float64 %.6g", tc, l32, l64)
		}
		m64.Backward(d64)
		m32.Backward(d32)
		for _, s := range p64.Specs {
			g64, g32 := p64.G(s.Name), p32.G(s.Name)
			var num, den float64
			for i := range g64 {
				d := float64(g32[i]) - g64[i]
				num += d * d
				den += g64[i] * g64[i]
			}
			// biases sum dz over every token, with cancellation: looser
			tol := 0.05
			if len(s.Shape) == 1 {
				tol = 0.15
			}
			if rel := math.Sqrt(num / math.Max(den, 1e-30)); rel > tol {
				t.Errorf("%+v %s: float32 gradient differs by %.3g from float64", tc, s.Name, rel)
			}
		}
	}
}
