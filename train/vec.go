package train

import "github.com/onecore-dev/onecore/amx"

// Small vector helpers: float32 goes through amx's SIMD kernels, float64
// (the reference path) through plain loops.

// axpy does y += alpha·x.
func axpy[T Float](alpha T, x, y []T) {
	if xs, ok := any(x).([]float32); ok {
		amx.Axpy(float32(alpha), xs, any(y).([]float32))
		return
	}
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// dot returns Σ a[i]·b[i].
func dot[T Float](a, b []T) T {
	if as, ok := any(a).([]float32); ok {
		return T(amx.Dot(as, any(b).([]float32)))
	}
	b = b[:len(a)]
	var s T
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// scale does x *= alpha (float32: as x += (alpha−1)·x on the SIMD axpy).
func scale[T Float](alpha T, x []T) {
	if xs, ok := any(x).([]float32); ok {
		amx.Axpy(float32(alpha)-1, xs, xs)
		return
	}
	for i := range x {
		x[i] *= alpha
	}
}

// softmaxRow replaces x by softmax(x); −Inf entries become 0.
func softmaxRow[T Float](x []T) {
	if xs, ok := any(x).([]float32); ok {
		amx.SoftmaxRow(xs)
		return
	}
	softmaxInPlace(x)
}

// relu2 replaces x by relu(x)².
func relu2[T Float](x []T) {
	if xs, ok := any(x).([]float32); ok {
		amx.ReLU2(xs)
		return
	}
	for i, v := range x {
		if v < 0 {
			v = 0
		}
		x[i] = v * v
	}
}
