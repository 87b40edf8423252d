//go:build amd64 && !purego

package amx

//go:noescape
func adamWAVX2(w, gr, m, v *float32, n int, c *AdamWConsts)

func init() {
	if c := CPU(); c.AVX2 && c.OSAVX {
		adamWImpl = func(w, g, m, v []float32, c *AdamWConsts) {
			n := len(w) &^ 7
			if n > 0 {
				adamWAVX2(&w[0], &g[0], &m[0], &v[0], n, c)
			}
			adamWGeneric(w[n:], g[n:], m[n:], v[n:], c)
		}
	}
}
