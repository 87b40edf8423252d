package amx

import "fmt"

// DecayMatrix writes the n×n causal decay matrix of the cumulative
// log-decays l into dst (row-major): dst[i·n+j] = e^(l[i]−l[j]) for j ≤ i
// and 0 for j > i (the intra-chunk mask of log-decay linear attention in
// training, kept in fp32 for the backward pass). l is non-increasing in
// that use, so every exponent is ≤ 0; the fast path's exp is within a few
// ulp of math.Exp and gives 0 below about −87.
func DecayMatrix(dst, l []float32, n int) {
	if n < 0 || len(dst) < n*n || len(l) < n {
		panic(fmt.Sprintf("amx: DecayMatrix n=%d: len(dst)=%d len(l)=%d", n, len(dst), len(l)))
	}
	decayMatrixImpl(dst, l, n)
}

var decayMatrixImpl = decayMatrixGeneric

func decayMatrixGeneric(dst, l []float32, n int) {
	for i := 0; i < n; i++ {
		row := dst[i*n : (i+1)*n]
		for j := 0; j <= i; j++ {
			row[j] = expf(l[i] - l[j])
		}
		clear(row[i+1:])
	}
}
