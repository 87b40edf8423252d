//go:build amd64 && !purego

package amx

//go:noescape
func max512(x *float32, n int) float32

//go:noescape
func expSubSum512(x *float32, n int, m float32) float32

//go:noescape
func scale512(x *float32, n int, s float32)

// softmax512 is SoftmaxRow in three AVX-512 passes (max, exp and sum,
// scale), the last partial vector masked.
func softmax512(x []float32) {
	n := len(x)
	if n == 0 {
		return
	}
	m := max512(&x[0], n)
	if m < -maxFloat32 { // all −Inf
		clear(x)
		return
	}
	s := expSubSum512(&x[0], n, m)
	scale512(&x[0], n, 1/s)
}
