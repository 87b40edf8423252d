//go:build amd64 && !purego

package amx

//go:noescape
func transposePairs512(dst *uint32, src *BF16, ldbBytes, cols, pairs int)

//go:noescape
func transpose16Pairs512(dst *uint32, src *BF16, ldbBytes, colBlocks, pairBlocks int)

//go:noescape
func interleaveAMX(dst *uint32, src *BF16, ldbBytes, subs, subStride int)

//go:noescape
func interleavePairs512(dst *uint32, src *BF16, ldbBytes, cols, pairs int)

func init() {
	if c := CPU(); c.AVX512F && c.OSAVX512 {
		transposeImpl = func(panel []uint32, src []BF16, ldb, cols, pairs int) {
			_ = panel[(pairs-1)*nr512+nr512-1] // the assembly writes whole rows of 64
			_ = src[(cols-1)*ldb+2*pairs-1]
			// Whole 16×16 blocks by register transposes; the ragged
			// K-pairs and columns (and the zero columns up to the next
			// 16) by gathers.
			cb, pb := cols/16, pairs/16
			transpose16Pairs512(&panel[0], &src[0], ldb*2, cb, pb)
			if cb > 0 && pairs > pb*16 {
				transposePairs512(&panel[pb*16*nr512], &src[pb*32], ldb*2, cb*16, pairs-pb*16)
			}
			if cols > cb*16 {
				transposePairs512(&panel[cb*16], &src[cb*16*ldb], ldb*2, cols-cb*16, pairs)
			}
		}
		interleaveImpl = func(panel []uint32, src []BF16, ldb, cols, pairs int) {
			_ = panel[(pairs-1)*nr512+nr512-1]
			_ = src[(2*pairs-1)*ldb+cols-1]
			interleavePairs512(&panel[0], &src[0], ldb*2, cols, pairs)
		}
	}
}
