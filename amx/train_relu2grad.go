package amx

import "math"

// ReLU2Grad is the backward of act = relu(u)² given only act: it scales
// each upstream gradient du[i] by d act/du = 2·relu(u) = 2·√act[i] in place
// and writes the result rounded to bf16 into dst (the next GEMM's operand).
// act must be ≥ 0 (a ReLU² output). Training (package train) uses it so
// the MLP forward keeps one activation tensor instead of two.
func ReLU2Grad(dst []BF16, du, act []float32) {
	relu2GradImpl(dst[:len(du)], du, act[:len(du)])
}

var relu2GradImpl = relu2GradGeneric

func relu2GradGeneric(dst []BF16, du, act []float32) {
	for i, a := range act {
		d := du[i] * (2 * float32(math.Sqrt(float64(a))))
		du[i] = d
		dst[i] = FromFloat32(d)
	}
}
