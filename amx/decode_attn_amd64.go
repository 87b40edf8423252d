//go:build amd64 && !purego

package amx

//go:noescape
func decodeScores512(s *float32, q, k *BF16, ldkBytes, nk, pairs int, scale float32)

//go:noescape
func decodePV64512(out *float32, p, v *BF16, nk int)

//go:noescape
func decodePV32512(out *float32, p, v *BF16, nk int)

//go:noescape
func linAttnStep512(o, s, q, k, v *float32, ds, hd int, decay, qscale float32)

//go:noescape
func decodeScoresAVX2(s *float32, q, k *BF16, ldkBytes, n8, pairs int, scale float32)

//go:noescape
func decodePVAVX2(out *float32, p, v *BF16, nk, hd int)

//go:noescape
func linAttnStepAVX2(o, s, q, k, v *float32, ds, hd int, decay, qscale float32)

// The best kernels the CPU has, AVX-512 over AVX2 (all bit-identical to
// the Go loops on normal numbers; VDPBF16PS flushes denormals).
func init() {
	c := CPU()
	if c.AVX2 && c.FMA && c.OSAVX {
		useDecodeAttnAVX2()
	}
	if c.AVX512F && c.OSAVX512 {
		useLinAttn512()
		if c.AVX512BF16 {
			useDecodeAttn512()
		}
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

// useLinAttn512 installs the AVX-512 linear-attention step for head dims
// that are whole 16-lane vectors.
func useLinAttn512() {
	linAttnStepImpl = func(o, S, q, k, v []float32, decay, qscale float32) {
		if len(v)%16 != 0 {
			linAttnStepGeneric(o, S, q, k, v, decay, qscale)
			return
		}
		linAttnStep512(&o[0], &S[0], &q[0], &k[0], &v[0], len(k), len(v), decay, qscale)
	}
}

// useDecodeAttnAVX2 installs the AVX2/FMA kernels: scores for whole
// 8-slot vectors (the last < 8 slots take the Go loop), P·V for head dims
// that are multiples of 16, the linear-attention step for multiples of 8.
func useDecodeAttnAVX2() {
	decodeScoresImpl = func(s []float32, q, k []BF16, ldk int, scale float32) {
		n8 := len(s) &^ 7
		if n8 > 0 {
			decodeScoresAVX2(&s[0], &q[0], &k[0], 4*ldk, n8, len(q)/2, scale)
		}
		if n8 < len(s) {
			decodeScoresGeneric(s[n8:], q, k[2*n8:], ldk, scale)
		}
	}
	decodePVImpl = func(out []float32, p, v []BF16) {
		if len(out)%16 != 0 {
			decodePVGeneric(out, p, v)
			return
		}
		decodePVAVX2(&out[0], &p[0], &v[0], len(p), len(out))
	}
	linAttnStepImpl = func(o, S, q, k, v []float32, decay, qscale float32) {
		if len(v)%8 != 0 {
			linAttnStepGeneric(o, S, q, k, v, decay, qscale)
			return
		}
		linAttnStepAVX2(&o[0], &S[0], &q[0], &k[0], &v[0], len(k), len(v), decay, qscale)
	}
}
