//go:build amd64 && !purego

package amx

//go:noescape
func adamWAVX2(w, gr, m, v *float32, n int, c *AdamWConsts)

// init installs the AVX2 kernel even where AVX-512 exists: the step is
// bound by the divide/sqrt unit, and on the Xeon it was measured on
// (Sapphire Rapids class) a 16-lane VDIVPS/VSQRTPS takes 2.1-2.2× the
// time of an 8-lane one, so the 512-bit kernel came out 5-8% slower
// (n=2048 and 131072; equal at 1M, where memory bounds both), so none
// is kept.
func init() {
	if c := CPU(); c.AVX2 && c.OSAVX {
		adamWImpl = adamWFast
	}
}

// adamWFast does whole blocks of 8 in AVX2 assembly and the tail in Go.
func adamWFast(w, g, m, v []float32, c *AdamWConsts) {
	n := len(w) &^ 7
	if n > 0 {
		adamWAVX2(&w[0], &g[0], &m[0], &v[0], n, c)
	}
	adamWGeneric(w[n:], g[n:], m[n:], v[n:], c)
}
