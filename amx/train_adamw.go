package amx

import "math"

// AdamWConsts are the per-step constants of AdamWStep.
type AdamWConsts struct {
	GradScale    float32 // gradient clipping factor
	Beta1, Beta2 float32
	OneMinusB1   float32 // 1 − Beta1
	OneMinusB2   float32 // 1 − Beta2
	Decay        float32 // 1 − lr·weight_decay, or 1 for undecayed tensors
	InvC2        float32 // 1 / (1 − Beta2^step)
	Eps          float32
	StepSize     float32 // lr / (1 − Beta1^step)
}

// AdamWStep applies one AdamW update to the fp32 master weights w with
// gradients g and moments m, v (all the same length), element by element:
//
//	g' = g·GradScale;  m = Beta1·m + (1−Beta1)·g';  v = Beta2·v + ((1−Beta2)·g')·g'
//	w = w·Decay − (StepSize·m) / (√(v·InvC2) + Eps)
//
// Every kernel rounds each operation to fp32 in this order (no fused
// multiply-add), so results are identical on every CPU. Training (package
// train) calls it once per tensor.
func AdamWStep(w, g, m, v []float32, c *AdamWConsts) {
	n := len(w)
	adamWImpl(w, g[:n], m[:n], v[:n], c)
}

var adamWImpl = adamWGeneric

func adamWGeneric(w, g, m, v []float32, c *AdamWConsts) {
	// The float32 conversions round each product before its sum: without
	// them Go may fuse a·b+c into one FMA (it does with GOAMD64=v3), and
	// the generic loop would disagree with the assembly.
	for i := range w {
		gi := g[i] * c.GradScale
		mi := float32(c.Beta1*m[i]) + float32(c.OneMinusB1*gi)
		vi := float32(c.Beta2*v[i]) + float32(c.OneMinusB2*gi*gi)
		m[i], v[i] = mi, vi
		wi := w[i] * c.Decay
		w[i] = wi - float32(c.StepSize*mi)/(float32(math.Sqrt(float64(vi*c.InvC2)))+c.Eps)
	}
}
