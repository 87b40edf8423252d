package train

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// rope makes sure the RoPE tables cover positions < n and returns them.
func (m *Model[T]) rope(n int) (cos, sin []T) {
	half := m.Cfg.SWAHeadDim / 2
	have := len(m.ropeCos) / max(half, 1)
	if have < n {
		m.ropeCos = make([]T, n*half)
		m.ropeSin = make([]T, n*half)
		for p := 0; p < n; p++ {
			for i := 0; i < half; i++ {
				ang := float64(p) * math.Pow(m.Cfg.RopeTheta, -2*float64(i)/float64(m.Cfg.SWAHeadDim))
				m.ropeCos[p*half+i] = T(math.Cos(ang))
				m.ropeSin[p*half+i] = T(math.Sin(ang))
			}
		}
	}
	return m.ropeCos, m.ropeSin
}

// ropeRows rotates every head of every row of x (N×H·hd) by its token's
// position; inverse rotates by the negative angle (the backward pass).
func (m *Model[T]) ropeRows(x []T, inverse bool) {
	H, hd := m.Cfg.SWAHeads, m.Cfg.SWAHeadDim
	half := hd / 2
	cos, sin := m.rope(m.n)
	if xs, ok := any(x).([]float32); ok {
		// SIMD rotation of all heads of a row; the inverse is the rotation
		// by −θ, from a negated sine table.
		sin32 := any(sin).([]float32)
		if inverse {
			m.ropeSinNeg = grow(m.ropeSinNeg, len(sin))
			for i, v := range sin {
				m.ropeSinNeg[i] = -v
			}
			sin32 = any(m.ropeSinNeg).([]float32)
		}
		cos32 := any(cos).([]float32)
		HD := H * hd
		for t := 0; t < m.n; t++ {
			p := t - int(m.start[t])
			amx.RoPEHeads(xs[t*HD:(t+1)*HD], nil, hd, cos32[p*half:(p+1)*half], sin32[p*half:(p+1)*half])
		}
		return
	}
	for t := 0; t < m.n; t++ {
		p := t - int(m.start[t])
		cs, sn := cos[p*half:(p+1)*half], sin[p*half:(p+1)*half]
		for h := 0; h < H; h++ {
			lo := x[t*H*hd+h*hd : t*H*hd+h*hd+half]
			hi := x[t*H*hd+h*hd+half : t*H*hd+(h+1)*hd]
			for i := range lo {
				a, b := lo[i], hi[i]
				s := sn[i]
				if inverse {
					s = -s
				}
				lo[i] = a*cs[i] - b*s
				hi[i] = b*cs[i] + a*s
			}
		}
	}
}

// swaChunk is one block of queries [c0, c1) of one document with its keys
// [k0, c1): the chunk itself and the previous one (docs/design.md §2: chunks are
// window long, counted from the document start). poff locates its
// probabilities (H × (c1−c0) × (c1−k0)) in the layer cache.
type swaChunk struct{ c0, c1, k0, poff int }

// swaChunks lists the chunks of the current stream.
func (m *Model[T]) swaChunks(dst []swaChunk) ([]swaChunk, int) {
	W, H := m.Cfg.Window, m.Cfg.SWAHeads
	dst = dst[:0]
	off := 0
	for t := 0; t < m.n; {
		s := int(m.start[t])
		c1 := t + 1
		for c1 < m.n && int(m.start[c1]) == s && (c1-s)%W != 0 {
			c1++
		}
		k0 := max(s, t-W)
		dst = append(dst, swaChunk{t, c1, k0, off})
		off += H * (c1 - t) * (c1 - k0)
		t = c1
	}
	return dst, off
}

// gatherHead copies columns [h·hd, (h+1)·hd) of rows [r0, r1) of x (rows of
// width ld) into dst, contiguous.
func gatherHead[T Float](dst, x []T, r0, r1, ld, h, hd int) []T {
	dst = dst[:(r1-r0)*hd]
	if xs, ok := any(x).([]float32); ok && r1 > r0 {
		amx.CopyRows(any(dst).([]float32), hd, xs[r0*ld+h*hd:], ld, r1-r0, hd)
		return dst
	}
	for r := r0; r < r1; r++ {
		copy(dst[(r-r0)*hd:(r-r0+1)*hd], x[r*ld+h*hd:r*ld+(h+1)*hd])
	}
	return dst
}

// scatterAddHead adds src (contiguous rows) into the head columns of x.
func scatterAddHead[T Float](x, src []T, r0, r1, ld, h, hd int) {
	if xs, ok := any(x).([]float32); ok && r1 > r0 {
		amx.AddRows(xs[r0*ld+h*hd:], ld, any(src).([]float32), hd, r1-r0, hd)
		return
	}
	for r := r0; r < r1; r++ {
		d := x[r*ld+h*hd : r*ld+(h+1)*hd]
		for i, v := range src[(r-r0)*hd : (r-r0+1)*hd] {
			d[i] += v
		}
	}
}

// scatterAddHeadT writes srcT (hd × (r1−r0), the transpose of the head's
// rows) into the head columns of rows [r0, r1) of x: added for rows below
// rs, stored from rs on. tmp is scratch of (r1−r0)·hd elements.
func scatterAddHeadT[T Float](x, srcT, tmp []T, r0, rs, r1, ld, h, hd int) {
	n := r1 - r0
	if xs, ok := any(x).([]float32); ok && n > 0 {
		// transpose back to rows (SIMD), then add / store the head columns
		tmp := any(tmp).([]float32)[:n*hd]
		amx.TransposeF32(tmp, hd, any(srcT).([]float32), n, hd, n)
		if k := rs - r0; k > 0 {
			amx.AddRows(xs[r0*ld+h*hd:], ld, tmp, hd, k, hd)
		}
		if k := r1 - rs; k > 0 {
			amx.CopyRows(xs[rs*ld+h*hd:], ld, tmp[(rs-r0)*hd:], hd, k, hd)
		}
		return
	}
	for r := r0; r < r1; r++ {
		d := x[r*ld+h*hd : r*ld+(h+1)*hd]
		if r >= rs {
			for i := range d {
				d[i] = srcT[i*n+r-r0]
			}
			continue
		}
		for i := range d {
			d[i] += srcT[i*n+r-r0]
		}
	}
}

// swaFwd: sliding-window softmax attention with the document mask
// j ≤ i ∧ i−j < W ∧ doc(i) = doc(j), chunked so every product is a GEMM.
func (m *Model[T]) swaFwd(lc *layerCache[T], pre string, out []T) {
	c := m.Cfg
	N, H, hd, W := m.n, c.SWAHeads, c.SWAHeadDim, c.Window
	HD := H * hd
	lc.q = grow(lc.q, N*HD)
	lc.k = grow(lc.k, N*HD)
	lc.v = grow(lc.v, N*HD)
	lc.o = growZero(lc.o, N*HD)
	m.projQKV(lc, pre, []string{"swa.wq", "swa.wk", "swa.wv"}, lc.q, lc.k, lc.v)
	m.ropeRows(lc.q, false)
	m.ropeRows(lc.k, false)
	var np int
	lc.chunks, np = m.swaChunks(lc.chunks)
	lc.p = grow(lc.p, np)
	if _, ok := any(lc.p).([]float32); ok {
		lc.pb = growBF(lc.pb, np)
	}
	scale := T(1 / math.Sqrt(float64(hd)))
	qh := m.bufRaw("swa.qh", W*hd)
	kh := m.bufRaw("swa.kh", 2*W*hd)
	vh := m.bufRaw("swa.vh", 2*W*hd)
	oh := m.bufRaw("swa.oh", W*hd)
	ninf := T(math.Inf(-1))
	for _, ch := range lc.chunks {
		nq, nk := ch.c1-ch.c0, ch.c1-ch.k0
		for h := 0; h < H; h++ {
			p := lc.p[ch.poff+h*nq*nk : ch.poff+(h+1)*nq*nk]
			qh = gatherHead(qh[:cap(qh)], lc.q, ch.c0, ch.c1, HD, h, hd)
			kh = gatherHead(kh[:cap(kh)], lc.k, ch.k0, ch.c1, HD, h, hd)
			vh = gatherHead(vh[:cap(vh)], lc.v, ch.k0, ch.c1, HD, h, hd)
			gemm(m.ws, nq, hd, nk, qh, false, kh, true, p, false)
			for qi := 0; qi < nq; qi++ {
				i := ch.c0 + qi
				row := p[qi*nk : (qi+1)*nk]
				for kj := range row {
					j := ch.k0 + kj
					if j > i || i-j >= W {
						row[kj] = ninf
					} else {
						row[kj] *= scale
					}
				}
				softmaxRow(row)
			}
			// float32: P in bf16 once, for P·V here and dVᵀ = dOᵀ·P in the backward
			var pb []amx.BF16
			if lc.pb != nil {
				pb = lc.pb[ch.poff+h*nq*nk : ch.poff+(h+1)*nq*nk]
				amx.ToBF16(pb, any(p).([]float32))
			}
			gemmBF(m.ws, nq, nk, hd, p, pb, false, vh, nil, false, oh[:nq*hd], false)
			scatterAddHead(lc.o, oh, ch.c0, ch.c1, HD, h, hd)
		}
	}
	m.outProj(lc.o, HD, pre+"swa.wo", out)
}

func (m *Model[T]) swaBwd(lc *layerCache[T], pre string, dy, dx []T) {
	c := m.Cfg
	N, H, hd, W := m.n, c.SWAHeads, c.SWAHeadDim, c.Window
	HD := H * hd
	do := m.bufRaw("swa.do", N*HD)
	m.outProjBwd(lc.o, HD, pre+"swa.wo", dy, do)
	// chunks come in stream order: a chunk's queries and its own keys are
	// written first (set), keys of the previous chunk accumulate
	dq := m.bufRaw("swa.dq", N*HD)
	dk := m.bufRaw("swa.dk", N*HD)
	dv := m.bufRaw("swa.dv", N*HD)
	scale := T(1 / math.Sqrt(float64(hd)))
	qh := m.bufRaw("swa.qh", W*hd)
	kh := m.bufRaw("swa.kh", 2*W*hd)
	vh := m.bufRaw("swa.vh", 2*W*hd)
	doh := m.bufRaw("swa.doh", W*hd)
	dqh := m.bufRaw("swa.dqh", W*hd)
	dkh := m.bufRaw("swa.dkh", 2*W*hd)
	dvh := m.bufRaw("swa.dvh", 2*W*hd)
	dp := m.bufRaw("swa.dp", 2*W*W)
	tmpT := m.bufRaw("swa.tmpT", 2*W*hd)
	for _, ch := range lc.chunks {
		nq, nk := ch.c1-ch.c0, ch.c1-ch.k0
		for h := 0; h < H; h++ {
			p := lc.p[ch.poff+h*nq*nk : ch.poff+(h+1)*nq*nk]
			qh = gatherHead(qh[:cap(qh)], lc.q, ch.c0, ch.c1, HD, h, hd)
			kh = gatherHead(kh[:cap(kh)], lc.k, ch.k0, ch.c1, HD, h, hd)
			vh = gatherHead(vh[:cap(vh)], lc.v, ch.k0, ch.c1, HD, h, hd)
			doh = gatherHead(doh[:cap(doh)], do, ch.c0, ch.c1, HD, h, hd)
			ds := dp[:nq*nk]
			gemm(m.ws, nq, hd, nk, doh, false, vh, true, ds, false)
			for qi := 0; qi < nq; qi++ {
				pr, dr := p[qi*nk:(qi+1)*nk], ds[qi*nk:(qi+1)*nk]
				sum := dot(pr, dr)
				for j, pv := range pr {
					dr[j] = pv * (dr[j] - sum) * scale
				}
			}
			dsb := roundBF(&m.ws.sbf, ds) // float32: dS rounded once for both products
			gemmBF(m.ws, nq, nk, hd, ds, dsb, false, kh, nil, false, dqh[:nq*hd], false)
			// dK = dSᵀ·Q and dV = Pᵀ·dO computed transposed (dKᵀ = Qᵀ·dS):
			// the GEMM's transposed A is then hd×nq, not nk×nq
			gemmBF(m.ws, hd, nq, nk, qh, nil, true, ds, dsb, false, dkh[:hd*nk], false)
			var pb []amx.BF16
			if lc.pb != nil {
				pb = lc.pb[ch.poff+h*nq*nk : ch.poff+(h+1)*nq*nk]
			}
			gemmBF(m.ws, hd, nq, nk, doh, nil, true, p, pb, false, dvh[:hd*nk], false)
			scatterHead(dq, dqh, ch.c0, ch.c1, HD, h, hd)
			scatterAddHeadT(dk, dkh, tmpT, ch.k0, ch.c0, ch.c1, HD, h, hd)
			scatterAddHeadT(dv, dvh, tmpT, ch.k0, ch.c0, ch.c1, HD, h, hd)
		}
	}
	m.ropeRows(dq, true)
	m.ropeRows(dk, true)
	m.projQKVBwd(lc, pre, []string{"swa.wq", "swa.wk", "swa.wv"}, dx, dq, dk, dv)
}
