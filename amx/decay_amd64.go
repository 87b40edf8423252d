//go:build amd64 && !purego

package amx

//go:noescape
func decayMatrix512(dst, l *float32, n int)

func init() {
	if c := CPU(); c.AVX512F && c.OSAVX512 {
		decayMatrixImpl = func(dst, l []float32, n int) {
			if n > 0 {
				decayMatrix512(&dst[0], &l[0], n)
			}
		}
	}
}
