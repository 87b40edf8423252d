//go:build amd64 && !purego

package amx

//go:noescape
func rmsNormBwdRows512(dx, dg, x, gain, dy, r *float32, rows, width, group int, acc bool, invGroup float32)

func init() {
	if c := CPU(); c.AVX512F && c.OSAVX512 {
		rmsNormBwdRowsImpl = func(dx, dg, x, g, dy, r []float32, D, group int, acc bool) {
			rows := len(x) / D
			if group%16 != 0 || rows == 0 {
				rmsNormBwdRowsGeneric(dx, dg, x, g, dy, r, D, group, acc)
				return
			}
			rmsNormBwdRows512(&dx[0], &dg[0], &x[0], &g[0], &dy[0], &r[0], rows, D, group, acc, 1/float32(group))
		}
	}
}
