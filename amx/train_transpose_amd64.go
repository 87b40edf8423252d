//go:build amd64 && !purego

package amx

//go:noescape
func transpose16AVX2(dst *BF16, ldd int, src *BF16, lds int, tmp *BF16)

func init() {
	if c := CPU(); c.AVX2 && c.OSAVX {
		transposeImpl16 = transposeBF16AVX2
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
