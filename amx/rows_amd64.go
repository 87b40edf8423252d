//go:build amd64 && !purego

package amx

//go:noescape
func rmsNormRows512(dst *float32, dstBF16 *BF16, x, gain *float32, rows, rowLen, group int, eps float32)

//go:noescape
func ropeHeads512(x *float32, dst *BF16, heads, half int, cos, sin *float32)

//go:noescape
func scaleBF16x512(dst *BF16, x *float32, n int, s float32)

//go:noescape
func mulExpDiffBF16x512(dst *BF16, x, l *float32, n int, c float32)

//go:noescape
func transpose16x16F32(dst, src *float32, lddBytes, ldsBytes, rowBlocks, colBlocks int)

//go:noescape
func softplus512(dst, x *float32, n int)

func init() {
	if c := CPU(); c.AVX512F && c.OSAVX512 {
		useRows512()
	}
}

// useRows512 installs the AVX-512 row-batched kernels. Groups and half
// heads must be whole 16-lane vectors for the assembly; other shapes take
// the per-row loops.
func useRows512() {
	rmsNormRowsImpl = func(dst []float32, dstBF16 []BF16, x, g []float32, group int, eps float32) {
		if group%16 != 0 || len(x) == 0 {
			rmsNormRowsLoop(dst, dstBF16, x, g, group, eps)
			return
		}
		var d *float32
		var db *BF16
		if dst != nil {
			d = &dst[0]
		}
		if dstBF16 != nil {
			db = &dstBF16[0]
		}
		rmsNormRows512(d, db, &x[0], &g[0], len(x)/len(g), len(g), group, eps)
	}
	ropeHeadsImpl = func(x []float32, dst []BF16, hd int, cos, sin []float32) {
		if (hd/2)%16 != 0 || len(x) == 0 {
			ropeHeadsLoop(x, dst, hd, cos, sin)
			return
		}
		var db *BF16
		if dst != nil {
			db = &dst[0]
		}
		ropeHeads512(&x[0], db, len(x)/hd, hd/2, &cos[0], &sin[0])
	}
	softmaxRowBF16Impl = func(dst []BF16, x []float32) {
		n := len(x)
		if n == 0 {
			return
		}
		m := max512(&x[0], n)
		if m < -maxFloat32 { // all −Inf
			clear(dst)
			return
		}
		s := expSubSum512(&x[0], n, m)
		scaleBF16x512(&dst[0], &x[0], n, 1/s)
	}
	transposeF32Impl = func(dst []float32, ldd int, src []float32, lds, rows, cols int) {
		rb, cb := rows/16, cols/16
		if rb > 0 && cb > 0 {
			transpose16x16F32(&dst[0], &src[0], ldd*4, lds*4, rb, cb)
		}
		transposeF32Part(dst, ldd, src, lds, 0, rb*16, cb*16, cols) // right edge
		transposeF32Part(dst, ldd, src, lds, rb*16, rows, 0, cols)  // bottom rows
	}
	softplusImpl = func(dst, x []float32) {
		if len(x) > 0 {
			softplus512(&dst[0], &x[0], len(x))
		}
	}
	mulExpDiffBF16Impl = func(dst []BF16, x, l []float32, c float32) {
		if len(x) > 0 {
			mulExpDiffBF16x512(&dst[0], &x[0], &l[0], len(x), c)
		}
	}
}
