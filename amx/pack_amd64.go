//go:build amd64 && !purego

package amx

//go:noescape
func transposePairs512(dst *uint32, src *BF16, ldbBytes, cols, pairs int)

//go:noescape
func interleavePairs512(dst *uint32, src *BF16, ldbBytes, cols, pairs int)

func init() {
	if c := CPU(); c.AVX512F && c.OSAVX512 {
		transposeImpl = func(panel []uint32, src []BF16, ldb, cols, pairs int) {
			_ = panel[(pairs-1)*nr512+nr512-1] // the assembly writes whole rows of 64
			_ = src[(cols-1)*ldb+2*pairs-1]
			transposePairs512(&panel[0], &src[0], ldb*2, cols, pairs)
		}
		interleaveImpl = func(panel []uint32, src []BF16, ldb, cols, pairs int) {
			_ = panel[(pairs-1)*nr512+nr512-1]
			_ = src[(2*pairs-1)*ldb+cols-1]
			interleavePairs512(&panel[0], &src[0], ldb*2, cols, pairs)
		}
	}
}
