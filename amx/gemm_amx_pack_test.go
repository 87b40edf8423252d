//go:build amd64 && !purego

package amx

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// packAMXRef is the layout of packAMX written one element at a time.
func packAMXRef(k, n int, b []BF16, ldb int, transposed bool) []BF16 {
	kt := (k + kAMX - 1) / kAMX
	plen := amxPanelLen(k)
	out := make([]BF16, (n+nrAMX-1)/nrAMX*plen)
	for j := 0; j < n; j++ {
		pn, s, h, c := j/nrAMX, j%nrAMX/32, j%32/16, j%16
		base := pn*plen + s*kt*1024 + h*512 + 2*c
		for kk := 0; kk < k; kk++ {
			var v BF16
			if transposed {
				v = b[j*ldb+kk]
			} else {
				v = b[kk*ldb+j]
			}
			// K tile kk/32, pair row (kk%32)/2, element kk%2.
			out[base+(kk/kAMX)*1024+(kk%kAMX/2)*32+kk%2] = v
		}
	}
	return out
}

// TestPackAMXMatchesReference checks packAMX, with its AVX-512 kernels
// (where the CPU has them) and with the scalar loops, on ragged shapes.
func TestPackAMXMatchesReference(t *testing.T) {
	t.Cleanup(func() { packAMXReference = false })
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 2, 3, 31, 32, 33, 64, 65, 96, 100, 256} {
		for _, n := range []int{1, 15, 16, 17, 32, 33, 48, 63, 64, 65, 96, 130, 256} {
			for _, mode := range []int{0, 1, 2, 3} {
				tr, ref := mode&1 != 0, mode&2 != 0
				packAMXReference = ref
				rows, cols := k, n
				if tr {
					rows, cols = n, k
				}
				ld := cols + rng.IntN(3)
				b := make([]BF16, (rows-1)*ld+cols)
				for i := range b {
					b[i] = BF16(rng.Uint32())
				}
				// A dirty destination: packAMX must overwrite or clear everything.
				dst := &Matrix{K: k, N: n, bf16: make([]BF16, 8<<10)}
				for i := range dst.bf16 {
					dst.bf16[i] = 0xffff
				}
				packAMX(dst, b, ld, tr)
				if want := packAMXRef(k, n, b, ld, tr); !slices.Equal(dst.bf16, want) {
					t.Fatalf("k=%d n=%d transposed=%v scalar=%v: packed layout differs", k, n, tr, ref)
				}
			}
		}
	}
}
