package amx

// SplitBF16 writes hi[i] = bf16(x[i]) and lo[i] = bf16(x[i] − hi[i]) for
// i < len(x): hi + lo carries about 16 significant bits of x, so a GEMM
// over [hi lo] operands recovers near-fp32 products on the bf16 kernels.
func SplitBF16(hi, lo []BF16, x []float32) {
	splitBF16Impl(hi[:len(x)], lo[:len(x)], x)
}

var splitBF16Impl = splitBF16Generic

func splitBF16Generic(hi, lo []BF16, x []float32) {
	for i, v := range x {
		h := FromFloat32(v)
		hi[i], lo[i] = h, FromFloat32(v-h.Float32())
	}
}
