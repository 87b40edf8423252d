package amx

// TransposeBF16 writes the transpose of the r×c row-major matrix src into
// dst (c×r). Training (package train) needs it for every weight gradient
// dW = Xᵀ·dY: the GEMM's A operand must have the token dimension
// contiguous. Fast paths move 16×16 blocks through vector registers.
func TransposeBF16(dst, src []BF16, r, c int) {
	transposeImpl16(dst[:r*c], src[:r*c], r, c)
}

var transposeImpl16 = transposeBF16Generic

// transposeBF16Generic moves 16×16 tiles through a local block: with
// power-of-two strides a plain loop thrashes L1 sets (4 KiB aliasing).
func transposeBF16Generic(dst, src []BF16, r, c int) {
	const t = 16
	i0 := 0
	for ; i0+t <= r; i0 += t {
		j0 := 0
		for ; j0+t <= c; j0 += t {
			var blk [t][t]BF16
			for i := 0; i < t; i++ {
				copy(blk[i][:], src[(i0+i)*c+j0:(i0+i)*c+j0+t])
			}
			for j := 0; j < t; j++ {
				d := dst[(j0+j)*r+i0 : (j0+j)*r+i0+t]
				for i := 0; i < t; i++ {
					d[i] = blk[i][j]
				}
			}
		}
		for j := j0; j < c; j++ {
			for i := i0; i < i0+t; i++ {
				dst[j*r+i] = src[i*c+j]
			}
		}
	}
	for i := i0; i < r; i++ {
		for j := 0; j < c; j++ {
			dst[j*r+i] = src[i*c+j]
		}
	}
}
