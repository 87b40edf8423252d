//go:build amd64 && !purego

package amx

//go:noescape
func splitBF16x512(hi, lo *BF16, x *float32, n int)

func init() {
	if c := CPU(); c.AVX512F && c.AVX512BW && c.OSAVX512 {
		splitBF16Impl = func(hi, lo []BF16, x []float32) {
			if len(x) > 0 {
				splitBF16x512(&hi[0], &lo[0], &x[0], len(x))
			}
		}
	}
}
