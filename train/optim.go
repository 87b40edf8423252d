package train

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// AdamW is Adam with decoupled weight decay over fp32 master weights.
type AdamW struct {
	Beta1, Beta2, Eps, WeightDecay float64
	// Step counts the updates applied so far.
	Step int64
	M, V []float32
	// tensors are the parameter ranges, each decayed (matrices) or not.
	tensors []adamRange
}

type adamRange struct {
	off, n int
	decay  bool
}

// NewAdamW makes an optimizer for p with the usual LM settings.
func NewAdamW(p *Params[float32], weightDecay float64) *AdamW {
	o := &AdamW{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: weightDecay,
		M: make([]float32, len(p.Data)), V: make([]float32, len(p.Data))}
	for _, s := range p.Specs {
		o.tensors = append(o.tensors, adamRange{p.Off[s.Name], s.Size(), Decayed(s)})
	}
	return o
}

// Update applies one step with learning rate lr to p using p.Grad scaled
// by gradScale (gradient clipping), one SIMD pass per tensor.
func (o *AdamW) Update(p *Params[float32], lr, gradScale float64) {
	k, wd := o.begin(lr, gradScale)
	for _, t := range o.tensors {
		k.Decay = 1
		if t.decay {
			k.Decay = wd
		}
		r := t.off
		amx.AdamWStep(p.Data[r:r+t.n], p.Grad[r:r+t.n], o.M[r:r+t.n], o.V[r:r+t.n], &k)
	}
}

// begin counts a step and returns its constants (Decay unset) and the
// decay factor of decayed tensors: the serial part of Update, shared with
// the data-parallel update.
func (o *AdamW) begin(lr, gradScale float64) (amx.AdamWConsts, float32) {
	o.Step++
	b1, b2 := float32(o.Beta1), float32(o.Beta2)
	c1 := 1 - math.Pow(o.Beta1, float64(o.Step))
	c2 := 1 - math.Pow(o.Beta2, float64(o.Step))
	k := amx.AdamWConsts{GradScale: float32(gradScale), Beta1: b1, Beta2: b2, OneMinusB1: 1 - b1, OneMinusB2: 1 - b2,
		InvC2: float32(1 / c2), Eps: float32(o.Eps), StepSize: float32(lr / c1)}
	return k, float32(1 - lr*o.WeightDecay)
}

// GradNorm is the global L2 norm of p.Grad: SIMD fp32 sums of squares
// over blocks of 1024, accumulated in float64 (a block's fp32 sum is
// accurate to ~1e-7 relative, far below what clipping needs).
func GradNorm(p *Params[float32]) float64 {
	var s float64
	for g := p.Grad; len(g) > 0; {
		b := g[:min(len(g), gradBlock)]
		s += float64(amx.Dot(b, b))
		g = g[len(b):]
	}
	return math.Sqrt(s)
}

// Schedule is linear warmup then cosine decay to MinLR at Total steps.
type Schedule struct {
	LR, MinLR     float64
	Warmup, Total int64
}

// At returns the learning rate of step (0-based).
func (s Schedule) At(step int64) float64 {
	if s.Warmup > 0 && step < s.Warmup {
		return s.LR * float64(step+1) / float64(s.Warmup)
	}
	if step >= s.Total || s.Total <= s.Warmup {
		return s.MinLR
	}
	x := float64(step-s.Warmup) / float64(s.Total-s.Warmup)
	return s.MinLR + (s.LR-s.MinLR)*0.5*(1+math.Cos(math.Pi*x))
}
