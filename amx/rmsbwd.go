package amx

import "fmt"

// RMSNormBwdRows is the backward pass of an RMSNorm y = x·inv·g applied to
// groups of `group` columns of rows×D matrices (group = D: one norm per
// row; group < D: per-head norms sharing g across rows). For each row t
// and group k, with inv = r[t·D/group + k] the forward's 1/rms and d = dy:
//
//	dg[j] += d[j]·x[j]·inv
//	dx[j] (+)= inv·g[j]·d[j] − x[j]·inv³·Σ_i g[i]·d[i]·x[i] / group
//
// (dx overwritten unless acc). g and dg have D elements; x, dy and dx
// rows·D; r rows·D/group.
func RMSNormBwdRows(dx, dg, x, g, dy, r []float32, D, group int, acc bool) {
	if D <= 0 || group <= 0 || D%group != 0 {
		panic(fmt.Sprintf("amx: RMSNormBwdRows D=%d group=%d", D, group))
	}
	rows := len(x) / D
	if len(x) != rows*D || len(dy) < rows*D || len(dx) < rows*D || len(g) < D || len(dg) < D || len(r) < rows*(D/group) {
		panic(fmt.Sprintf("amx: RMSNormBwdRows D=%d group=%d: len(x)=%d len(dy)=%d len(dx)=%d len(g)=%d len(dg)=%d len(r)=%d",
			D, group, len(x), len(dy), len(dx), len(g), len(dg), len(r)))
	}
	rmsNormBwdRowsImpl(dx, dg, x, g, dy, r, D, group, acc)
}

var rmsNormBwdRowsImpl = rmsNormBwdRowsGeneric

func rmsNormBwdRowsGeneric(dx, dg, x, g, dy, r []float32, D, group int, acc bool) {
	rows, G := len(x)/D, D/group
	for t := 0; t < rows; t++ {
		for k := 0; k < G; k++ {
			o := t*D + k*group
			xr, d, out := x[o:o+group], dy[o:o+group], dx[o:o+group]
			gg, dgg := g[k*group:(k+1)*group], dg[k*group:(k+1)*group]
			inv := r[t*G+k]
			var dot float32
			for i, v := range xr {
				dot += gg[i] * d[i] * v
				dgg[i] += d[i] * v * inv
			}
			c := dot * inv * inv * inv / float32(group)
			for i, v := range xr {
				y := inv*gg[i]*d[i] - v*c
				if acc {
					y += out[i]
				}
				out[i] = y
			}
		}
	}
}
