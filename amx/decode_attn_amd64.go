//go:build amd64 && !purego

package amx

//go:noescape
func decodeScores512(s *float32, q, k *BF16, ldkBytes, nk, pairs int, scale float32)

//go:noescape
func decodePV64512(out *float32, p, v *BF16, nk int)

//go:noescape
func decodePV32512(out *float32, p, v *BF16, nk int)

func init() {
	if c := CPU(); c.AVX512F && c.AVX512BF16 && c.OSAVX512 {
		useDecodeAttn512()
	}
}

// useDecodeAttn512 installs the VDPBF16PS decode-attention kernels. The
// scores kernel takes any even head dim; P·V has register tiles for head
// dims 32 and 64 only, others keep the pure-Go loop.
func useDecodeAttn512() {
	decodeScoresImpl = func(s []float32, q, k []BF16, ldk int, scale float32) {
		decodeScores512(&s[0], &q[0], &k[0], 4*ldk, len(s), len(q)/2, scale)
	}
	decodePVImpl = func(out []float32, p, v []BF16) {
		switch len(out) {
		case 64:
			decodePV64512(&out[0], &p[0], &v[0], len(p))
		case 32:
			decodePV32512(&out[0], &p[0], &v[0], len(p))
		default:
			decodePVGeneric(out, p, v)
		}
	}
}
