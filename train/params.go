package train

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Float is the element type of a model: float32 for training (bf16 GEMM
// operands through amx), float64 for the exact reference path the gradient
// tests use.
type Float interface{ ~float32 | ~float64 }

// TensorSpec names one parameter tensor and its shape (docs/design.md §3).
type TensorSpec struct {
	Name  string
	Shape []int
}

// Size is the number of elements.
func (s TensorSpec) Size() int {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// ParamSpecs lists the model's parameter tensors in checkpoint order. With
// nLabels > 0 a classifier head (head.cls.w, head.cls.b) is appended.
func ParamSpecs(c *Config, nLabels int) []TensorSpec {
	D := c.DModel
	s := []TensorSpec{{"emb", []int{c.VocabSize, D}}}
	for i, kind := range c.Layers {
		p := fmt.Sprintf("layers.%d.", i)
		s = append(s, TensorSpec{p + "norm1.g", []int{D}})
		switch kind {
		case "swa":
			hd := c.SWAHeads * c.SWAHeadDim
			s = append(s,
				TensorSpec{p + "swa.wq", []int{D, hd}},
				TensorSpec{p + "swa.wk", []int{D, hd}},
				TensorSpec{p + "swa.wv", []int{D, hd}},
				TensorSpec{p + "swa.wo", []int{hd, D}})
		case "lin":
			hk, hv := c.LinHeads*c.DState, c.LinHeads*c.LinHeadDim
			s = append(s,
				TensorSpec{p + "lin.wq", []int{D, hk}},
				TensorSpec{p + "lin.wk", []int{D, hk}},
				TensorSpec{p + "lin.wv", []int{D, hv}},
				TensorSpec{p + "lin.wa", []int{D, c.LinHeads}},
				TensorSpec{p + "lin.ba", []int{c.LinHeads}},
				TensorSpec{p + "lin.gn", []int{hv}},
				TensorSpec{p + "lin.wo", []int{hv, D}})
		}
		s = append(s, TensorSpec{p + "norm2.g", []int{D}})
		if c.IsMoE(i) {
			s = append(s,
				TensorSpec{p + "moe.router.w", []int{D, c.Experts}},
				TensorSpec{p + "moe.router.b", []int{c.Experts}},
				TensorSpec{p + "moe.w_up", []int{c.Experts, D, c.DFFExpert}},
				TensorSpec{p + "moe.w_down", []int{c.Experts, c.DFFExpert, D}})
		} else {
			s = append(s,
				TensorSpec{p + "mlp.w_up", []int{D, c.DFF}},
				TensorSpec{p + "mlp.w_down", []int{c.DFF, D}})
		}
	}
	s = append(s, TensorSpec{"norm.g", []int{D}})
	if nLabels > 0 {
		s = append(s, TensorSpec{"head.cls.w", []int{D, nLabels}}, TensorSpec{"head.cls.b", []int{nLabels}})
	}
	return s
}

// Params holds every parameter of a model in one flat slice (so the
// optimizer is a loop over it) plus a same-shaped gradient slice.
type Params[T Float] struct {
	Specs []TensorSpec
	Off   map[string]int
	Data  []T
	Grad  []T
}

// NewParams allocates zeroed parameters for specs.
func NewParams[T Float](specs []TensorSpec) *Params[T] {
	p := &Params[T]{Specs: specs, Off: map[string]int{}}
	n := 0
	for _, s := range specs {
		p.Off[s.Name] = n
		n += s.Size()
	}
	p.Data = make([]T, n)
	p.Grad = make([]T, n)
	return p
}

// spec returns the spec named name.
func (p *Params[T]) spec(name string) TensorSpec {
	for _, s := range p.Specs {
		if s.Name == name {
			return s
		}
	}
	panic("train: no tensor " + name)
}

// W returns the weight view of tensor name.
func (p *Params[T]) W(name string) []T {
	off, ok := p.Off[name]
	if !ok {
		panic("train: no tensor " + name)
	}
	return p.Data[off : off+p.spec(name).Size()]
}

// G returns the gradient view of tensor name.
func (p *Params[T]) G(name string) []T {
	off := p.Off[name]
	return p.Grad[off : off+p.spec(name).Size()]
}

// Has reports whether tensor name exists.
func (p *Params[T]) Has(name string) bool { _, ok := p.Off[name]; return ok }

// ZeroGrad clears every gradient.
func (p *Params[T]) ZeroGrad() { clear(p.Grad) }

// isGain reports whether a tensor is a norm gain (initialised to 1).
func isGain(name string) bool {
	return hasSuffix(name, "norm1.g") || hasSuffix(name, "norm2.g") || name == "norm.g" || hasSuffix(name, "lin.gn")
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// Decayed reports whether AdamW applies weight decay to tensor name:
// matrices yes; gains and biases no.
func Decayed(s TensorSpec) bool { return len(s.Shape) >= 2 }

// Init fills the parameters for training from scratch: gains 1, biases 0
// (lin.ba such that the initial decay exp(a) is about 0.9…0.99 per head),
// matrices N(0, 1/fan_in) scaled down for residual outputs.
func (p *Params[T]) Init(c *Config, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6f6e65636f7265))
	nl := float64(len(c.Layers))
	for _, s := range p.Specs {
		w := p.W(s.Name)
		switch {
		case isGain(s.Name):
			for i := range w {
				w[i] = 1
			}
		case hasSuffix(s.Name, "lin.ba"):
			// decay exp(-softplus(b)) spread over heads from slow to fast
			for h := range w {
				target := 0.99 - 0.09*float64(h)/math.Max(1, float64(len(w)-1)) // exp(a)
				sp := -math.Log(target)                                         // softplus(b)
				w[h] = T(math.Log(math.Expm1(sp)))
			}
		case len(s.Shape) == 1:
			// biases: zero
		default:
			fanIn := s.Shape[len(s.Shape)-2]
			std := 1 / math.Sqrt(float64(fanIn))
			if s.Name == "emb" {
				std = 0.02 * math.Sqrt(256/float64(c.DModel)) * 2.5
			}
			if hasSuffix(s.Name, ".wo") || hasSuffix(s.Name, "w_down") {
				std /= math.Sqrt(2 * nl)
			}
			if hasSuffix(s.Name, "lin.wa") || hasSuffix(s.Name, "router.w") {
				std *= 0.1
			}
			for i := range w {
				w[i] = T(rng.NormFloat64() * std)
			}
		}
	}
}
