//go:build amd64 && !purego

package amx

//go:noescape
func toFloat32AVX2(dst *float32, src *BF16, n int)

//go:noescape
func toBF16AVX2(dst *BF16, src *float32, n int)

//go:noescape
func toBF16x512(dst *BF16, src *float32, n int)

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func scaleMulAVX2(dst *float32, dstBF16 *BF16, x, gain *float32, s float32, n int)

//go:noescape
func relu2AVX2(x *float32, n int)

//go:noescape
func addAVX2(dst, x *float32, n int)

//go:noescape
func axpyAVX2(alpha float32, x, y *float32, n int)

//go:noescape
func ropeAVX2(lo, hi, cos, sin *float32, n int)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func expSubSumAVX2(x *float32, n int, m float32) float32

//go:noescape
func scaleAVX2(x *float32, n int, s float32)

func init() {
	c := CPU()
	if c.AVX2 && c.FMA && c.OSAVX {
		useAVX2Elementwise()
	}
	if c.AVX512F && c.OSAVX512 {
		softmaxImpl = softmax512 // twice the lanes for the exp-heavy kernel
		elementwiseKernel += "+avx512"
	}
	if c.AVX512F && c.AVX512BW && c.OSAVX512 {
		toBF16Impl = toBF16Fast512
	}
}

// toBF16Fast512 is ToBF16 on 16 lanes; the assembly masks the last
// partial vector, so there is no Go tail.
func toBF16Fast512(dst []BF16, src []float32) {
	if len(src) > 0 {
		toBF16x512(&dst[0], &src[0], len(src))
	}
}

// useAVX2Elementwise installs the AVX2 elementwise kernels. The
// assembly does whole blocks of 8 (32 for Dot); the generic code finishes
// the tail, so results for the same length are always computed the same
// way.
func useAVX2Elementwise() {
	elementwiseKernel = "avx2"
	toFloat32Impl = func(dst []float32, src []BF16) {
		n := len(src) &^ 7
		if n > 0 {
			toFloat32AVX2(&dst[0], &src[0], n)
		}
		toFloat32Generic(dst[n:], src[n:])
	}
	toBF16Impl = toBF16Fast
	dotImpl = dotFast
	rmsNormImpl = rmsNormFast
	relu2Impl = func(x []float32) {
		n := len(x) &^ 7
		if n > 0 {
			relu2AVX2(&x[0], n)
		}
		relu2Generic(x[n:])
	}
	addImpl = func(dst, x []float32) {
		n := len(x) &^ 7
		if n > 0 {
			addAVX2(&dst[0], &x[0], n)
		}
		addGeneric(dst[n:], x[n:])
	}
	axpyImpl = func(alpha float32, x, y []float32) {
		n := len(x) &^ 7
		if n > 0 {
			axpyAVX2(alpha, &x[0], &y[0], n)
		}
		axpyGeneric(alpha, x[n:], y[n:])
	}
	ropeImpl = func(lo, hi, cos, sin []float32) {
		n := len(lo) &^ 7
		if n > 0 {
			ropeAVX2(&lo[0], &hi[0], &cos[0], &sin[0], n)
		}
		ropeGeneric(lo[n:], hi[n:], cos[n:], sin[n:])
	}
	softmaxImpl = softmaxFast
}

// toBF16Fast: blocks of 8 in AVX2 assembly, the rest in Go.
func toBF16Fast(dst []BF16, src []float32) {
	n := len(src) &^ 7
	if n > 0 {
		toBF16AVX2(&dst[0], &src[0], n)
	}
	toBF16Generic(dst[n:], src[n:])
}

// dotFast: blocks of 32 in assembly (four 8-lane sums), the rest in Go.
func dotFast(a, b []float32) float32 {
	n := len(a) &^ 31
	var s float32
	if n > 0 {
		s = dotAVX2(&a[0], &b[0], n)
	}
	return s + dotGeneric(a[n:], b[n:])
}

func rmsNormFast(dst []float32, dstBF16 []BF16, x, g []float32, eps float32) {
	inv := rmsInv(dotFast(x, x), len(x), eps)
	n := len(x) &^ 7
	if n > 0 {
		var d *float32
		var db *BF16
		if dst != nil {
			d = &dst[0]
		}
		if dstBF16 != nil {
			db = &dstBF16[0]
		}
		scaleMulAVX2(d, db, &x[0], &g[0], inv, n)
	}
	var dt []float32
	var dbt []BF16
	if dst != nil {
		dt = dst[n:]
	}
	if dstBF16 != nil {
		dbt = dstBF16[n:]
	}
	scaleMulGeneric(dt, dbt, x[n:], g[n:], inv)
}

func softmaxFast(x []float32) {
	n := len(x) &^ 7
	if n == 0 {
		softmaxGeneric(x)
		return
	}
	m := maxAVX2(&x[0], n)
	for _, v := range x[n:] {
		m = max(m, v)
	}
	if m < -maxFloat32 { // all −Inf (or empty)
		clear(x)
		return
	}
	s := expSubSumAVX2(&x[0], n, m)
	for i := n; i < len(x); i++ {
		e := expf(x[i] - m)
		x[i] = e
		s += e
	}
	inv := 1 / s
	scaleAVX2(&x[0], n, inv)
	for i := n; i < len(x); i++ {
		x[i] *= inv
	}
}
