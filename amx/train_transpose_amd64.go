//go:build amd64 && !purego

package amx

//go:noescape
func transpose16AVX2(dst *BF16, ldd int, src *BF16, lds int, tmp *BF16)

//go:noescape
func transpose16BF16x512(dst *BF16, lddBytes int, src *BF16, ldsBytes int, rowBlocks, colBlocks int)

func init() {
	c := CPU()
	if c.AVX2 && c.OSAVX {
		transposeImpl16 = transposeBF16AVX2
	}
	if c.AVX512F && c.AVX512BW && c.OSAVX512 { // BW: word unpacks on zmm
		transposeImpl16 = transposeBF16x512
	}
}

// transposeBF16AVX2 does the full 16×16 blocks in assembly and the ragged
// edges in Go.
func transposeBF16AVX2(dst, src []BF16, r, c int) {
	var tmp [256]BF16
	r16, c16 := r&^15, c&^15
	for i0 := 0; i0 < r16; i0 += 16 {
		for j0 := 0; j0 < c16; j0 += 16 {
			_ = src[(i0+15)*c+j0+15]
			_ = dst[(j0+15)*r+i0+15]
			transpose16AVX2(&dst[j0*r+i0], 2*r, &src[i0*c+j0], 2*c, &tmp[0])
		}
	}
	transposeEdges(dst, src, r, c)
}

// transposeBF16x512 does all full 16×16 blocks in one assembly call and
// the ragged edges in Go.
func transposeBF16x512(dst, src []BF16, r, c int) {
	if r >= 16 && c >= 16 {
		_ = src[(r&^15-1)*c+c&^15-1] // the last element the blocks read
		_ = dst[(c&^15-1)*r+r&^15-1] // and write
		transpose16BF16x512(&dst[0], 2*r, &src[0], 2*c, r/16, c/16)
	}
	transposeEdges(dst, src, r, c)
}

// transposeEdges moves what the 16×16 blocks leave: the columns past
// c&^15 of the block rows, and every column of the rows past r&^15.
func transposeEdges(dst, src []BF16, r, c int) {
	r16, c16 := r&^15, c&^15
	for i := 0; i < r; i++ {
		j := c16
		if i >= r16 {
			j = 0
		}
		for ; j < c; j++ {
			dst[j*r+i] = src[i*c+j]
		}
	}
}
