package amx

import (
	"fmt"
	"math"
)

// Row-batched elementwise kernels: one call does what the model otherwise
// does with many tiny calls (a norm per head, a rotation per head, a decay
// per score row), so per-call overhead stops dominating at head sizes of
// 32–64. Each has a pure-Go reference below; AVX-512 fast paths replace
// the *Impl variables at init time. The defaults compose the per-row
// kernels, so CPUs without AVX-512 run exactly what they ran before.
var (
	rmsNormRowsImpl    = rmsNormRowsLoop
	ropeHeadsImpl      = ropeHeadsLoop
	softmaxRowBF16Impl = softmaxRowBF16Loop
	mulExpDiffBF16Impl = mulExpDiffBF16Generic
	softplusImpl       = softplusGeneric
)

// RMSNormRows normalises x in groups of group consecutive elements: x is a
// whole number of rows of len(g) elements, each row is split into
// len(g)/group groups, and group k of every row is written as
// RMSNorm(group)·g[k·group:(k+1)·group] to dst (fp32) and/or dstBF16
// (either may be nil). group = len(g) is a plain per-row RMSNorm; group =
// head dim with g the concatenated per-head gains is a per-head norm.
func RMSNormRows(dst []float32, dstBF16 []BF16, x, g []float32, group int, eps float32) {
	if group <= 0 || len(g)%group != 0 || len(g) == 0 || len(x)%len(g) != 0 {
		panic(fmt.Sprintf("amx: RMSNormRows: len(x)=%d len(g)=%d group=%d", len(x), len(g), group))
	}
	if dst != nil {
		dst = dst[:len(x)]
	}
	if dstBF16 != nil {
		dstBF16 = dstBF16[:len(x)]
	}
	rmsNormRowsImpl(dst, dstBF16, x, g, group, eps)
}

func rmsNormRowsLoop(dst []float32, dstBF16 []BF16, x, g []float32, group int, eps float32) {
	rmsNormRowsWith(rmsNormImpl, dst, dstBF16, x, g, group, eps)
}

// rmsNormRowsWith applies norm group by group.
func rmsNormRowsWith(norm func([]float32, []BF16, []float32, []float32, float32), dst []float32, dstBF16 []BF16, x, g []float32, group int, eps float32) {
	for o := 0; o < len(x); o += group {
		gk := o % len(g)
		var d []float32
		var db []BF16
		if dst != nil {
			d = dst[o : o+group]
		}
		if dstBF16 != nil {
			db = dstBF16[o : o+group]
		}
		norm(d, db, x[o:o+group], g[gk:gk+group], eps)
	}
}

// RoPEHeads rotates each of the len(x)/hd consecutive head vectors of x in
// place exactly as RoPE does (cos and sin hold hd/2 values, shared by all
// heads: one position), and when dst is non-nil also writes the rotated
// values rounded to bf16 into dst[:len(x)].
func RoPEHeads(x []float32, dst []BF16, hd int, cos, sin []float32) {
	if hd <= 0 || hd%2 != 0 || len(x)%hd != 0 {
		panic(fmt.Sprintf("amx: RoPEHeads: len(x)=%d hd=%d", len(x), hd))
	}
	if dst != nil {
		dst = dst[:len(x)]
	}
	ropeHeadsImpl(x, dst, hd, cos[:hd/2], sin[:hd/2])
}

func ropeHeadsLoop(x []float32, dst []BF16, hd int, cos, sin []float32) {
	ropeHeadsWith(ropeImpl, toBF16Impl, x, dst, hd, cos, sin)
}

func ropeHeadsWith(rope func(lo, hi, cos, sin []float32), conv func([]BF16, []float32), x []float32, dst []BF16, hd int, cos, sin []float32) {
	h := hd / 2
	for o := 0; o < len(x); o += hd {
		rope(x[o:o+h], x[o+h:o+hd], cos, sin)
	}
	if dst != nil {
		conv(dst, x)
	}
}

// SoftmaxRowBF16 writes softmax(x), rounded to bf16, into dst[:len(x)]
// (−Inf entries give 0, an all −Inf row all zeros). x is used as scratch:
// its contents afterwards are unspecified.
func SoftmaxRowBF16(dst []BF16, x []float32) {
	softmaxRowBF16Impl(dst[:len(x)], x)
}

func softmaxRowBF16Loop(dst []BF16, x []float32) {
	softmaxImpl(x)
	toBF16Impl(dst, x)
}

// MulExpDiffBF16 writes dst[i] = bf16(x[i]·e^(c−l[i])) for i < len(x):
// a row of scores times decay factors (linear attention's intra-chunk
// mask e^(L_i−L_j), or keys weighted by e^(L_last−L_j)). Exponents
// below about −87 give 0; the fast path's exp is within a few ulp of
// math.Exp.
func MulExpDiffBF16(dst []BF16, x, l []float32, c float32) {
	mulExpDiffBF16Impl(dst[:len(x)], x, l[:len(x)], c)
}

func mulExpDiffBF16Generic(dst []BF16, x, l []float32, c float32) {
	for i, v := range x {
		dst[i] = FromFloat32(v * expf(c-l[i]))
	}
}

// TransposeF32 writes the transpose of the rows×cols matrix src (row
// stride lds) into dst (row stride ldd): dst[c·ldd + r] = src[r·lds + c].
func TransposeF32(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if lds < cols || ldd < rows || len(src) < (rows-1)*lds+cols || len(dst) < (cols-1)*ldd+rows {
		panic(fmt.Sprintf("amx: TransposeF32 %dx%d: lds=%d len=%d, ldd=%d len=%d", rows, cols, lds, len(src), ldd, len(dst)))
	}
	transposeF32Impl(dst, ldd, src, lds, rows, cols)
}

var transposeF32Impl = transposeF32Generic

// transposeF32Generic transposes the block [r0, rows) × [c0, cols) —
// everything when r0 = c0 = 0.
func transposeF32Generic(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	transposeF32Part(dst, ldd, src, lds, 0, rows, 0, cols)
}

func transposeF32Part(dst []float32, ldd int, src []float32, lds, r0, rows, c0, cols int) {
	for r := r0; r < rows; r++ {
		for c, v := range src[r*lds+c0 : r*lds+cols] {
			dst[(c0+c)*ldd+r] = v
		}
	}
}

// Softplus writes dst[i] = log(1 + e^x[i]) for i < len(x) (dst may be x):
// the linear-attention log-decay is −Softplus. Accurate to a few fp32 ulp
// (no cancellation for very negative x); results below the normal range
// (x < −87) may be 0.
func Softplus(dst, x []float32) {
	softplusImpl(dst[:len(x)], x)
}

func softplusGeneric(dst, x []float32) {
	for i, v := range x {
		z := float64(v)
		if z > 0 {
			dst[i] = float32(z + math.Log1p(math.Exp(-z)))
		} else {
			dst[i] = float32(math.Log1p(math.Exp(z)))
		}
	}
}
