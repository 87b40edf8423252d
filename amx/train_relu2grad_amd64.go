//go:build amd64 && !purego

package amx

//go:noescape
func relu2GradAVX2(dst *BF16, du, act *float32, n int)

func init() {
	if c := CPU(); c.AVX2 && c.OSAVX {
		relu2GradImpl = func(dst []BF16, du, act []float32) {
			n := len(du) &^ 7
			if n > 0 {
				relu2GradAVX2(&dst[0], &du[0], &act[0], n)
			}
			relu2GradGeneric(dst[n:], du[n:], act[n:])
		}
	}
}
