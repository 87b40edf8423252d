package amx

import "math"

// Elementwise kernels the model needs. Each has a pure-Go reference below;
// fast paths replace the *Impl variables at init time on capable CPUs.
var (
	toBF16Impl    = toBF16Generic
	toFloat32Impl = toFloat32Generic
	rmsNormImpl   = rmsNormGeneric
	softmaxImpl   = softmaxGeneric
	relu2Impl     = relu2Generic
	addImpl       = addGeneric
	dotImpl       = dotGeneric
	axpyImpl      = axpyGeneric
	ropeImpl      = ropeGeneric
)

// elementwiseKernel names the installed elementwise fast path.
var elementwiseKernel = "generic"

// ElementwiseKernel names the implementation behind RMSNorm, SoftmaxRow,
// ToBF16 and the other elementwise kernels ("generic", "avx2", or
// "avx2+avx512" when softmax uses AVX-512).
func ElementwiseKernel() string { return elementwiseKernel }

const maxFloat32 = math.MaxFloat32

// expf is e^x rounded to fp32 (0 for −Inf).
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// RMSNorm writes x / sqrt(mean(x²) + eps) * g into dst (fp32) and, when
// dstBF16 is non-nil, the same values rounded to bf16 (the next GEMM's A).
// Either destination may be nil.
func RMSNorm(dst []float32, dstBF16 []BF16, x, g []float32, eps float32) {
	rmsNormImpl(dst, dstBF16, x, g, eps)
}

// SoftmaxRow replaces x by softmax(x) in place. -Inf entries become 0; a row
// of all -Inf becomes all zeros.
func SoftmaxRow(x []float32) { softmaxImpl(x) }

// ReLU2 replaces x by relu(x)² in place.
func ReLU2(x []float32) { relu2Impl(x) }

// Add does dst[i] += x[i].
func Add(dst, x []float32) { addImpl(dst[:len(x)], x) }

// Dot returns Σ a[i]·b[i] (len(a) terms).
func Dot(a, b []float32) float32 { return dotImpl(a, b[:len(a)]) }

// Axpy does y[i] += alpha·x[i].
func Axpy(alpha float32, x, y []float32) { axpyImpl(alpha, x, y[:len(x)]) }

// RoPE rotates one head vector x in place, rotate-half (GPT-NeoX) style:
// for i < len(x)/2, (x[i], x[i+h]) ← (x[i]c − x[i+h]s, x[i+h]c + x[i]s)
// with c = cos[i], s = sin[i], h = len(x)/2.
func RoPE(x, cos, sin []float32) {
	h := len(x) / 2
	ropeImpl(x[:h], x[h:2*h], cos[:h], sin[:h])
}

func ropeGeneric(lo, hi, cos, sin []float32) {
	for i := range lo {
		a, b := lo[i], hi[i]
		// float32() rounds each product, as the assembly does: without it
		// GOAMD64=v3 builds fuse them into FMAs and the results differ.
		lo[i] = float32(a*cos[i]) - float32(b*sin[i])
		hi[i] = float32(b*cos[i]) + float32(a*sin[i])
	}
}

func rmsNormGeneric(dst []float32, dstBF16 []BF16, x, g []float32, eps float32) {
	scaleMulGeneric(dst, dstBF16, x, g, rmsInv(dotGeneric(x, x), len(x), eps))
}

// rmsInv is 1/sqrt(ss/n + eps).
func rmsInv(ss float32, n int, eps float32) float32 {
	return float32(1 / math.Sqrt(float64(ss/float32(n)+eps)))
}

// scaleMulGeneric writes x[i]·inv·g[i] to dst and/or dstBF16.
func scaleMulGeneric(dst []float32, dstBF16 []BF16, x, g []float32, inv float32) {
	for i, v := range x {
		y := v * inv * g[i]
		if dst != nil {
			dst[i] = y
		}
		if dstBF16 != nil {
			dstBF16[i] = FromFloat32(y)
		}
	}
}

func softmaxGeneric(x []float32) {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	if math.IsInf(float64(m), -1) {
		clear(x)
		return
	}
	var s float32
	for i, v := range x {
		e := expf(v - m)
		x[i] = e
		s += e
	}
	inv := 1 / s
	for i := range x {
		x[i] *= inv
	}
}

func relu2Generic(x []float32) {
	for i, v := range x {
		if v < 0 {
			v = 0
		}
		x[i] = v * v
	}
}

func addGeneric(dst, x []float32) {
	for i, v := range x {
		dst[i] += v
	}
}

func dotGeneric(a, b []float32) float32 {
	var s float32
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func axpyGeneric(alpha float32, x, y []float32) {
	for i, v := range x {
		y[i] += alpha * v
	}
}
