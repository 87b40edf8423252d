//go:build amd64 && !purego

package amx

//go:noescape
func sumSqGroups512(out, x *float32, units, group int)

//go:noescape
func scaleGroups512(dst *float32, dstBF16 *BF16, x, gain, inv *float32, rows, rowLen, group int)

//go:noescape
func ropeHeads512(x *float32, dst *BF16, heads, half int, cos, sin *float32, inPlace int)

//go:noescape
func scaleBF16x512(dst *BF16, x *float32, n int, s float32)

//go:noescape
func mulExpDiffBF16x512(dst *BF16, x, l *float32, n int, c float32)

//go:noescape
func transpose16x16F32(dst, src *float32, lddBytes, ldsBytes, rowBlocks, colBlocks int)

//go:noescape
func softplus512(dst, x *float32, n int)

//go:noescape
func decayMaskBF16x512(dst *BF16, x, l *float32, n int)

//go:noescape
func scaleRowsBF16x512(dst *BF16, lddBytes int, x *float32, ldxBytes int, s *float32, rows, cols int)

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
		rmsNormRows512(dst, dstBF16, x, g, group, eps)
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
		ropeHeads512(&x[0], db, len(x)/hd, hd/2, &cos[0], &sin[0], 1)
	}
	ropeHeadsBF16Impl = func(dst []BF16, x []float32, hd int, cos, sin []float32) {
		if (hd/2)%16 != 0 || len(x) == 0 {
			ropeHeadsBF16Copy(dst, x, hd, cos, sin)
			return
		}
		ropeHeads512(&x[0], &dst[0], len(x)/hd, hd/2, &cos[0], &sin[0], 0)
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
	decayMaskBF16Impl = func(dst []BF16, x, l []float32, n int) {
		if n > 0 {
			decayMaskBF16x512(&dst[0], &x[0], &l[0], n)
		}
	}
	scaleImpl = func(x []float32, s float32) {
		if len(x) > 0 {
			scale512(&x[0], len(x), s)
		}
	}
	scaleRowsBF16Impl = func(dst []BF16, ldd int, x []float32, ldx int, s []float32, rows, cols int) {
		scaleRowsBF16x512(&dst[0], ldd*2, &x[0], ldx*4, &s[0], rows, cols)
	}
	mulExpDiffBF16Impl = func(dst []BF16, x, l []float32, c float32) {
		if len(x) > 0 {
			mulExpDiffBF16x512(&dst[0], &x[0], &l[0], len(x), c)
		}
	}
}

// rmsBlockUnits bounds the groups rmsNormRows512 handles per block: the
// block's rows (≤ 32 KiB of x at 128 floats per group) are still in L1
// when the scale pass reads them again.
const rmsBlockUnits = 64

// rmsNormRows512 is RMSNormRows in three passes per block of rows: every
// group's Σx² (assembly), every group's 1/√(Σx²/group + eps) in Go, then
// the scaling (assembly). The reciprocal roots are independent of each
// other, so the core overlaps their divide/sqrt latencies; computed inside
// the per-row loop, each row waited for its own (~70 cycles: half the
// kernel's time at 128 floats per row). Results are bit-identical: the
// same sums in the same order, the same rmsInv.
func rmsNormRows512(dst []float32, dstBF16 []BF16, x, g []float32, group int, eps float32) {
	rowLen := len(g)
	perRow := rowLen / group
	rows := max(1, rmsBlockUnits/perRow) // rows wider than a block: one at a time
	var ssArr, invArr [rmsBlockUnits]float32
	ss, inv := ssArr[:], invArr[:]
	if perRow > rmsBlockUnits {
		ss, inv = make([]float32, perRow), make([]float32, perRow)
	}
	for o := 0; o < len(x); o += rows * rowLen {
		nr := min(rows, (len(x)-o)/rowLen)
		units := nr * perRow
		sumSqGroups512(&ss[0], &x[o], units, group)
		for u := range units {
			inv[u] = rmsInv(ss[u], group, eps)
		}
		var d *float32
		var db *BF16
		if dst != nil {
			d = &dst[o]
		}
		if dstBF16 != nil {
			db = &dstBF16[o]
		}
		scaleGroups512(d, db, &x[o], &g[0], &inv[0], nr, rowLen, group)
	}
}
