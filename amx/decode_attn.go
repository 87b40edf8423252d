package amx

import "fmt"

// Decode attention: one query of one head against a ring of cached bf16
// keys and values, the inner loop of token-by-token decoding. The cache
// layouts let every instruction stream whole vectors:
//
//   - keys are feature-pair-major: the dword of features (2i, 2i+1) of
//     slot j is k[2·(i·ldk + j)] (low half) and k[2·(i·ldk + j)+1] (high
//     half), so one 16-lane load holds one feature pair of 16 slots and
//     the scores of all slots build up in registers as the pair rows
//     stream by;
//   - values are slot-pair-major: the dword of slots (2g, 2g+1) at feature
//     f is v[2·(g·hd + f)] (slot 2g) and v[2·(g·hd + f)+1] (slot 2g+1),
//     so one 16-lane load holds 16 features of a slot pair and the output
//     builds up in hd/16 registers.
//
// Both products pair bf16 values the way VDPBF16PS does (each fp32 lane
// adds the odd product, then the even one); the pure-Go loops below do
// exactly that, so the assembly matches them bit for bit.
var (
	decodeScoresImpl = decodeScoresGeneric
	decodePVImpl     = decodePVGeneric
)

// DecodeAttnBF16 writes one head's attention output for one query into
// out[:hd] (hd = len(q), even):
//
//	out[f] = Σ_{j<nk} p_j·V[j][f],  p = bf16(softmax_j(scale·q·K[j]))
//
// over the nk cached keys k (feature-pair-major, pair rows ldk ≥ nk slots
// apart) and values v (slot-pair-major, ⌈nk/2⌉ pair rows): the layouts of
// the package comment above. Probabilities are rounded to bf16 as in the
// prefill's P·V GEMM. s and p are scratch of at least nk elements.
//
// If kNew is non-nil it is the key of slot slot (< nk), not yet in k: it
// is scored on its own and then stored into k, after the scores have
// streamed k, so the store's scattered writes (one per feature pair) hit
// cache lines already loaded instead of missing once each.
func DecodeAttnBF16(out []float32, q, k []BF16, ldk int, v []BF16, nk int, scale float32, kNew []BF16, slot int, s []float32, p []BF16) {
	hd := len(q)
	if hd == 0 || hd%2 != 0 || len(out) < hd || nk < 0 || ldk < nk ||
		(nk > 0 && (len(k) < 2*((hd/2-1)*ldk+nk) || len(v) < (nk+1)/2*2*hd || len(s) < nk || len(p) < nk)) ||
		(kNew != nil && (len(kNew) != hd || slot < 0 || slot >= nk)) {
		panic(fmt.Sprintf("amx: DecodeAttnBF16: hd=%d len(out)=%d nk=%d ldk=%d len(k)=%d len(v)=%d len(s)=%d len(p)=%d len(kNew)=%d slot=%d",
			hd, len(out), nk, ldk, len(k), len(v), len(s), len(p), len(kNew), slot))
	}
	out = out[:hd]
	if nk == 0 {
		clear(out)
		return
	}
	decodeScoresImpl(s[:nk], q, k, ldk, scale)
	if kNew != nil {
		// The same sum as a lane of the scores kernel, then the store.
		var a float32
		for i := 0; i < hd; i += 2 {
			a += q[i+1].Float32() * kNew[i+1].Float32()
			a += q[i].Float32() * kNew[i].Float32()
		}
		s[slot] = a * scale
		for i, o := 0, 2*slot; i < hd; i, o = i+2, o+2*ldk {
			k[o], k[o+1] = kNew[i], kNew[i+1]
		}
	}
	softmaxRowBF16Impl(p[:nk], s[:nk])
	decodePVImpl(out, p[:nk], v)
}

// decodeScoresGeneric sets s[j] = scale·Σ_i (q_{2i+1}·k_{j,2i+1} + q_{2i}·k_{j,2i})
// for j < len(s), summing in VDPBF16PS's order (pair by pair, the odd
// product first; bf16 products are exact in fp32).
func decodeScoresGeneric(s []float32, q, k []BF16, ldk int, scale float32) {
	clear(s)
	for i := 0; i < len(q)/2; i++ {
		q0, q1 := q[2*i].Float32(), q[2*i+1].Float32()
		row := k[2*i*ldk : 2*(i*ldk+len(s))]
		for j := range s {
			a := s[j] + q1*row[2*j+1].Float32()
			s[j] = a + q0*row[2*j].Float32()
		}
	}
	for j := range s {
		s[j] *= scale
	}
}

// decodePVGeneric sets out[f] = Σ_j p[j]·V[j][f] (j < len(p)) in the
// assembly's order: slot pairs g go to accumulator set g%4 while whole
// groups of four pairs remain, then to set 0; each pair adds the odd
// slot's product, then the even one's; an odd last slot adds its product
// to set 0; out = (set0 + set1) + (set2 + set3).
func decodePVGeneric(out []float32, p, v []BF16) {
	hd, nk := len(out), len(p)
	ap := getF32(4 * hd)
	acc := (*ap)[:4*hd]
	clear(acc)
	np := nk / 2
	full := np / 4 * 4
	for g := 0; g < np; g++ {
		set := 0
		if g < full {
			set = g % 4
		}
		a := acc[set*hd : (set+1)*hd]
		p0, p1 := p[2*g].Float32(), p[2*g+1].Float32()
		row := v[2*g*hd : 2*(g+1)*hd]
		for f := range a {
			x := a[f] + p1*row[2*f+1].Float32()
			a[f] = x + p0*row[2*f].Float32()
		}
	}
	if nk%2 == 1 {
		pl := p[nk-1].Float32()
		row := v[2*np*hd : 2*(np+1)*hd]
		for f := range hd {
			acc[f] += pl * row[2*f].Float32()
		}
	}
	for f := range out {
		out[f] = (acc[f] + acc[hd+f]) + (acc[2*hd+f] + acc[3*hd+f])
	}
	f32Pool.Put(ap)
}

var linAttnStepImpl = linAttnStepGeneric

// LinAttnStep advances one head of linear attention by one token: with
// S the ds×hd fp32 state (row-major, ds = len(k) = len(q), hd = len(v)),
//
//	S = decay·S + k vᵀ,  o = Σ_d (qscale·q_d)·S[d]
//
// (S updated in place, o written to o[:hd]). Products and sums are
// rounded one by one (no FMA), as Scale and Axpy would; the output sums
// rows d into four partial sums by d mod 4, added as (0+1)+(2+3).
func LinAttnStep(o, S, q, k, v []float32, decay, qscale float32) {
	ds, hd := len(k), len(v)
	if len(q) != ds || len(S) < ds*hd || len(o) < hd {
		panic(fmt.Sprintf("amx: LinAttnStep: len(q)=%d len(k)=%d len(v)=%d len(S)=%d len(o)=%d", len(q), ds, hd, len(S), len(o)))
	}
	if ds == 0 || hd == 0 {
		clear(o[:hd])
		return
	}
	linAttnStepImpl(o[:hd], S[:ds*hd], q, k, v, decay, qscale)
}

func linAttnStepGeneric(o, S, q, k, v []float32, decay, qscale float32) {
	hd := len(v)
	ap := getF32(4 * hd)
	acc := (*ap)[:4*hd]
	clear(acc)
	for d, kd := range k {
		row := S[d*hd : (d+1)*hd]
		a := acc[(d%4)*hd : (d%4+1)*hd]
		c := q[d] * qscale
		for j, x := range row {
			x = float32(x*decay) + float32(kd*v[j])
			row[j] = x
			a[j] += float32(c * x)
		}
	}
	for j := range o {
		o[j] = (acc[j] + acc[hd+j]) + (acc[2*hd+j] + acc[3*hd+j])
	}
	f32Pool.Put(ap)
}
