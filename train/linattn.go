package train

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// softplus(z) = log(1+e^z), computed without overflow.
func softplus(z float64) float64 { return math.Max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) }

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// Default chunking of the linear attention (the engine's prefill uses the
// same chunk length): chunks of linChunk positions counted from each
// document start; the intra-chunk decay matrix is built from sub-blocks of
// linSub positions (see decayMatrix).
const (
	defaultLinChunk = 64
	defaultLinSub   = 16
)

// linChunkSpan is one chunk [c0, c1) of the linear attention. first: c0
// starts a document (no state comes in); last: the document ends at c1 (no
// state goes out).
type linChunkSpan struct {
	c0, c1      int
	first, last bool
}

// linChunks lists the chunks of the current stream.
func (m *Model[T]) linChunks(dst []linChunkSpan) []linChunkSpan {
	C := m.linChunk
	dst = dst[:0]
	for t := 0; t < m.n; {
		s := int(m.start[t])
		c1 := t + 1
		for c1 < m.n && int(m.start[c1]) == s && (c1-s)%C != 0 {
			c1++
		}
		dst = append(dst, linChunkSpan{t, c1, t == s, c1 == m.n || int(m.start[c1]) == c1})
		t = c1
	}
	return dst
}

func expT[T Float](x T) T { return T(math.Exp(float64(x))) }

// cumDecay fills L[i] (i < c1−c0) with the cumulative log-decay
// Σ_{t=c0..c0+i} a_t of head h, a_t = −softplus(z_t) (sp holds softplus(z),
// N×H). In a document's first chunk a_{c0} is left out: the state is reset
// before the <bos> update, so its decay multiplies nothing (and its
// gradient is exactly 0).
func cumDecay[T Float](L, sp []T, ch linChunkSpan, h, H int) []T {
	L = L[:ch.c1-ch.c0]
	var s float64
	for i := range L {
		if i > 0 || !ch.first {
			s -= float64(sp[(ch.c0+i)*H+h])
		}
		L[i] = T(s)
	}
	return L
}

// softplusAll sets sp = softplus(z) elementwise (float32: the engine's
// SIMD kernel, so training decays are the ones inference computes).
func softplusAll[T Float](sp, z []T) {
	if zs, ok := any(z).([]float32); ok {
		amx.Softplus(any(sp).([]float32), zs)
		return
	}
	for i, v := range z {
		sp[i] = T(softplus(float64(v)))
	}
}

// decayMatrix writes M[i][j] = e^(L_i−L_j) for j ≤ i, 0 above the diagonal
// (n×n, row-major). Within a sub-block of sub positions it is one exp per
// pair; across sub-blocks it is the product of two factors ≤ 1 through the
// later block's first position b, e^(L_i−L_b)·e^(L_b−L_j): every exponent is
// ≤ 0, so nothing overflows however strong the decay, and a 64-chunk costs
// ~700 exps instead of 2080. w is scratch of n elements.
//
// float32 takes amx.DecayMatrix instead: one SIMD exp per pair is cheaper
// than the factored products.
func decayMatrix[T Float](M, L, w []T, n, sub int) {
	if ms, ok := any(M).([]float32); ok {
		amx.DecayMatrix(ms[:n*n], any(L).([]float32)[:n], n)
		return
	}
	for i := 0; i < n; i++ {
		b := i - i%sub
		if i == b {
			for j := 0; j < b; j++ {
				w[j] = expT(L[b] - L[j])
			}
		}
		row := M[i*n : (i+1)*n]
		ui := expT(L[i] - L[b])
		for j, wj := range w[:b] {
			row[j] = ui * wj
		}
		for j := b; j <= i; j++ {
			row[j] = expT(L[i] - L[j])
		}
		clear(row[i+1:])
	}
}

// scatterHead copies src (contiguous rows) into the head columns of x.
func scatterHead[T Float](x, src []T, r0, r1, ld, h, hd int) {
	if xs, ok := any(x).([]float32); ok && r1 > r0 {
		amx.CopyRows(xs[r0*ld+h*hd:], ld, any(src).([]float32), hd, r1-r0, hd)
		return
	}
	for r := r0; r < r1; r++ {
		copy(x[r*ld+h*hd:r*ld+(h+1)*hd], src[(r-r0)*hd:(r-r0+1)*hd])
	}
}

// linFwd: log-decay linear attention, S_t = exp(a_t)·S_{t−1} + k_t v_tᵀ with
// S reset at each document start, o_t = (q_t/√d_state)ᵀ S_t, per-head
// RMSNorm, output projection. It runs the chunked form (docs/design.md §2), per
// head and chunk, with q' = q/√d_state, L the cumulative log-decay in the
// chunk and M = [e^(L_i−L_j)]_{i≥j}:
//
//	O = (Q'·Kᵀ ⊙ M)·V + e^L ⊙ (Q'·S_prev)
//	S = e^(L_last)·S_prev + (K ⊙ e^(L_last−L))ᵀ·V
//
// and keeps every chunk's incoming state for the backward pass.
func (m *Model[T]) linFwd(lc *layerCache[T], pre string, out []T) {
	c := m.Cfg
	N, H, ds, dv := m.n, c.LinHeads, c.DState, c.LinHeadDim
	HK, HV := H*ds, H*dv
	lc.q = grow(lc.q, N*HK)
	lc.k = grow(lc.k, N*HK)
	lc.v = grow(lc.v, N*HV)
	lc.z = grow(lc.z, N*H)
	lc.o = grow(lc.o, N*HV)
	lc.on = grow(lc.on, N*HV)
	lc.ro = grow(lc.ro, N*H)
	m.projQKV(lc, pre, []string{"lin.wq", "lin.wk", "lin.wv"}, lc.q, lc.k, lc.v)
	linDecayLogits(m, lc.n1, m.P.W(pre+"lin.wa"), m.P.W(pre+"lin.ba"), lc.z)
	lc.sp = grow(lc.sp, N*H)
	softplusAll(lc.sp, lc.z)
	lc.lch = m.linChunks(lc.lch)
	SS := ds * dv
	lc.sprev = grow(lc.sprev, len(lc.lch)*H*SS)
	C := m.linChunk
	qs := T(1 / math.Sqrt(float64(ds)))
	S := m.bufRaw("lin.S", SS)
	qh := m.bufRaw("lin.qh", C*ds)
	kh := m.bufRaw("lin.kh", C*ds)
	vh := m.bufRaw("lin.vh", C*dv)
	oh := m.bufRaw("lin.oh", C*dv)
	tmp := m.bufRaw("lin.tmp", C*max(ds, dv))
	A := m.bufRaw("lin.A", C*C)
	M := m.bufRaw("lin.M", C*C)
	L := m.bufRaw("lin.L", C)
	w := m.bufRaw("lin.w", C)
	for h := 0; h < H; h++ {
		for ci, ch := range lc.lch {
			n := ch.c1 - ch.c0
			if ch.first {
				clear(S)
			}
			copy(lc.sprev[(ci*H+h)*SS:(ci*H+h+1)*SS], S)
			qh = gatherHead(qh[:cap(qh)], lc.q, ch.c0, ch.c1, HK, h, ds)
			scale(qs, qh)
			kh = gatherHead(kh[:cap(kh)], lc.k, ch.c0, ch.c1, HK, h, ds)
			vh = gatherHead(vh[:cap(vh)], lc.v, ch.c0, ch.c1, HV, h, dv)
			L = cumDecay(L[:cap(L)], lc.sp, ch, h, H)
			decayMatrix(M, L, w, n, m.linSub)
			a := A[:n*n]
			gemmABt3(m.ws, n, ds, n, qh, kh, a)
			for i, mv := range M[:n*n] {
				a[i] *= mv
			}
			o := oh[:n*dv]
			gemm(m.ws, n, n, dv, a, false, vh, false, o, false)
			if !ch.first {
				t := tmp[:n*dv]
				gemm(m.ws, n, ds, dv, qh, false, S, false, t, false)
				for i := 0; i < n; i++ {
					axpy(expT(L[i]), t[i*dv:(i+1)*dv], o[i*dv:(i+1)*dv])
				}
			}
			scatterHead(lc.o, o, ch.c0, ch.c1, HV, h, dv)
			if !ch.last {
				Ln := L[n-1]
				scale(expT(Ln), S)
				for j := 0; j < n; j++ {
					scale(expT(Ln-L[j]), kh[j*ds:(j+1)*ds])
				}
				gemm(m.ws, ds, n, dv, kh, true, vh, false, S, true)
			}
		}
	}
	gn := m.P.W(pre + "lin.gn")
	eps := T(c.NormEps)
	if o32, ok := any(lc.o).([]float32); ok {
		// all rows and heads in one SIMD call; the per-head 1/rms for the
		// backward from a dot per head
		o32 = o32[:N*HV]
		amx.RMSNormRows(any(lc.on).([]float32)[:N*HV], nil, o32, any(gn).([]float32), dv, float32(eps))
		ro := any(lc.ro).([]float32)
		for i := range N * H {
			x := o32[i*dv : (i+1)*dv]
			ro[i] = float32(1 / math.Sqrt(float64(amx.Dot(x, x))/float64(dv)+float64(eps)))
		}
	} else {
		for t := 0; t < N; t++ {
			for h := 0; h < H; h++ {
				o := t*HV + h*dv
				rmsnormFwd(lc.o[o:o+dv], gn[h*dv:(h+1)*dv], lc.on[o:o+dv], lc.ro[t*H+h:t*H+h+1], dv, eps)
			}
		}
	}
	m.outProj(lc.on, HV, pre+"lin.wo", out)
}

// linDecayLogits computes z = x·wa + ba (N×H), in full precision: the decay
// is sensitive and the GEMM is tiny (float32: fp32 dot products against
// the transposed wa).
func linDecayLogits[T Float](m *Model[T], x, wa, ba, z []T) {
	D, H := m.Cfg.DModel, m.Cfg.LinHeads
	if xs, ok := any(x).([]float32); ok {
		waT := any(m.bufRaw("lin.waT", H*D)).([]float32)
		amx.TransposeF32(waT, D, any(wa).([]float32), H, D, H)
		zs, bs := any(z).([]float32), any(ba).([]float32)
		for t := 0; t < m.n; t++ {
			xt := xs[t*D : (t+1)*D]
			for h := 0; h < H; h++ {
				zs[t*H+h] = bs[h] + amx.Dot(xt, waT[h*D:(h+1)*D])
			}
		}
		return
	}
	for t := 0; t < m.n; t++ {
		zt := z[t*H : (t+1)*H]
		copy(zt, ba)
		for i, xv := range x[t*D : (t+1)*D] {
			for h, w := range wa[i*H : (i+1)*H] {
				zt[h] += xv * w
			}
		}
	}
}

// linDecayLogitsBwd adds the gradients of z = x·wa + ba: dba += Σ_t dz_t,
// dwa += xᵀ·dz, dx += dz·waᵀ.
func linDecayLogitsBwd[T Float](m *Model[T], x, wa, dz, dwa, dba, dx []T) {
	D, H, N := m.Cfg.DModel, m.Cfg.LinHeads, m.n
	for t := 0; t < N; t++ {
		for h, g := range dz[t*H : (t+1)*H] {
			dba[h] += g
		}
	}
	if xs, ok := any(x).([]float32); ok {
		// Rows of waT and dwaT are length-D vectors: H axpys per token.
		waT := any(m.bufRaw("lin.waT", H*D)).([]float32)
		amx.TransposeF32(waT, D, any(wa).([]float32), H, D, H)
		dwaT := any(m.buf("lin.dwaT", H*D)).([]float32)
		dzs, dxs := any(dz).([]float32), any(dx).([]float32)
		for t := 0; t < N; t++ {
			xt, dxt := xs[t*D:(t+1)*D], dxs[t*D:(t+1)*D]
			for h, g := range dzs[t*H : (t+1)*H] {
				if g == 0 {
					continue
				}
				amx.Axpy(g, xt, dwaT[h*D:(h+1)*D])
				amx.Axpy(g, waT[h*D:(h+1)*D], dxt)
			}
		}
		dw := any(dwa).([]float32)
		for i := 0; i < D; i++ {
			for h := 0; h < H; h++ {
				dw[i*H+h] += dwaT[h*D+i]
			}
		}
		return
	}
	for t := 0; t < N; t++ {
		zt := dz[t*H : (t+1)*H]
		xt := x[t*D : (t+1)*D]
		dxt := dx[t*D : (t+1)*D]
		for i, xv := range xt {
			w := wa[i*H : (i+1)*H]
			dw := dwa[i*H : (i+1)*H]
			var s T
			for h, g := range zt {
				dw[h] += xv * g
				s += g * w[h]
			}
			dxt[i] += s
		}
	}
}

// linBwd differentiates the chunked form, per head, chunks in reverse with
// dS = dL/dS at the chunk's end carried backwards. With A = Q'Kᵀ ⊙ M and
// dA = dO·Vᵀ (lower triangle):
//
//	dV = Aᵀ·dO,  dQ' = (dA⊙M)·K,  dK = (dA⊙M)ᵀ·Q',  dL_i += Σ_j dA_ij A_ij, dL_j −= Σ_i dA_ij A_ij
//	inter:  dQ'_i += e^(L_i)·(dO·S_prevᵀ)_i,  dL_i += e^(L_i)⟨dO_i, (Q'·S_prev)_i⟩,  dS_prev = (e^L⊙Q')ᵀ·dO
//	state:  w_j = e^(L_last−L_j):  dK_j += w_j·(dS·v_j),  dV_j += w_j·(dSᵀk_j),
//	        dL_j −= w_j⟨k_j, dS·v_j⟩ (and + to dL_last),  dS_prev += e^(L_last)·dS,
//	        dL_last += e^(L_last)⟨S_prev, dS⟩
//
// and da_t = Σ_{i≥t} dL_i within the chunk, dz = −σ(z)·da.
func (m *Model[T]) linBwd(lc *layerCache[T], pre string, dy, dx []T) {
	c := m.Cfg
	N, H, ds, dv := m.n, c.LinHeads, c.DState, c.LinHeadDim
	HK, HV := H*ds, H*dv
	don := m.bufRaw("lin.don", N*HV)
	m.outProjBwd(lc.on, HV, pre+"lin.wo", dy, don)
	do := m.bufRaw("lin.do", N*HV)
	gn, dgn := m.P.W(pre+"lin.gn"), m.P.G(pre+"lin.gn")
	if os, ok := any(lc.o).([]float32); ok { // all rows and heads in one call
		amx.RMSNormBwdRows(any(do).([]float32), any(dgn).([]float32), os[:N*HV], any(gn).([]float32),
			any(don).([]float32), any(lc.ro).([]float32), HV, dv, false)
	} else {
		for t := 0; t < N; t++ {
			for h := 0; h < H; h++ {
				o := t*HV + h*dv
				rmsnormBwdTo(lc.o[o:o+dv], gn[h*dv:(h+1)*dv], lc.ro[t*H+h:t*H+h+1], don[o:o+dv], do[o:o+dv], dgn[h*dv:(h+1)*dv], dv, false)
			}
		}
	}
	dq := m.bufRaw("lin.dq", N*HK)
	dk := m.bufRaw("lin.dk", N*HK)
	dvv := m.bufRaw("lin.dvv", N*HV)
	dz := m.bufRaw("lin.dz", N*H)
	SS := ds * dv
	C := m.linChunk
	qs := T(1 / math.Sqrt(float64(ds)))
	qh := m.bufRaw("lin.qh", C*ds)
	kh := m.bufRaw("lin.kh", C*ds)
	vh := m.bufRaw("lin.vh", C*dv)
	doh := m.bufRaw("lin.doh", C*dv)
	dqh := m.bufRaw("lin.dqh", C*ds)
	dkh := m.bufRaw("lin.dkh", C*ds)
	dvh := m.bufRaw("lin.dvh", C*dv)
	t1 := m.bufRaw("lin.t1", C*max(ds, dv))
	t2 := m.bufRaw("lin.t2", C*max(ds, dv))
	A := m.bufRaw("lin.A", C*C)
	dA := m.bufRaw("lin.dA", C*C)
	M := m.bufRaw("lin.M", C*C)
	L := m.bufRaw("lin.L", C)
	dL := m.bufRaw("lin.dL", C)
	eL := m.bufRaw("lin.eL", C)
	w := m.bufRaw("lin.w", C)
	dS := m.bufRaw("lin.dS", SS)
	dSp := m.bufRaw("lin.dSp", SS)
	for h := 0; h < H; h++ {
		for ci := len(lc.lch) - 1; ci >= 0; ci-- {
			ch := lc.lch[ci]
			n := ch.c1 - ch.c0
			Sprev := lc.sprev[(ci*H+h)*SS : (ci*H+h+1)*SS]
			qh = gatherHead(qh[:cap(qh)], lc.q, ch.c0, ch.c1, HK, h, ds)
			scale(qs, qh)
			kh = gatherHead(kh[:cap(kh)], lc.k, ch.c0, ch.c1, HK, h, ds)
			vh = gatherHead(vh[:cap(vh)], lc.v, ch.c0, ch.c1, HV, h, dv)
			doh = gatherHead(doh[:cap(doh)], do, ch.c0, ch.c1, HV, h, dv)
			L = cumDecay(L[:cap(L)], lc.sp, ch, h, H)
			decayMatrix(M, L, w, n, m.linSub)
			a, da := A[:n*n], dA[:n*n]
			gemmABt3(m.ws, n, ds, n, qh, kh, a)
			for i, mv := range M[:n*n] {
				a[i] *= mv
			}
			gemm(m.ws, n, dv, n, doh, false, vh, true, da, false)
			gemm(m.ws, n, n, dv, a, true, doh, false, dvh[:n*dv], false)
			dl := dL[:n]
			clear(dl)
			for i := 0; i < n; i++ {
				ar, dr, mr := a[i*n:(i+1)*n], da[i*n:(i+1)*n], M[i*n:(i+1)*n]
				var rs T
				for j := 0; j <= i; j++ {
					r := dr[j] * ar[j]
					rs += r
					dl[j] -= r
					dr[j] *= mr[j]
				}
				dl[i] += rs
				clear(dr[i+1:])
			}
			gemm(m.ws, n, n, ds, da, false, kh, false, dqh[:n*ds], false)
			gemm(m.ws, n, n, ds, da, true, qh, false, dkh[:n*ds], false)
			if !ch.first {
				for i := range dl {
					eL[i] = expT(L[i])
				}
				t := t1[:n*dv]
				gemm(m.ws, n, ds, dv, qh, false, Sprev, false, t, false)
				for i := 0; i < n; i++ {
					dl[i] += eL[i] * dot(doh[i*dv:(i+1)*dv], t[i*dv:(i+1)*dv])
				}
				t = t1[:n*ds]
				gemm(m.ws, n, dv, ds, doh, false, Sprev, true, t, false)
				for i := 0; i < n; i++ {
					axpy(eL[i], t[i*ds:(i+1)*ds], dqh[i*ds:(i+1)*ds])
					scale(eL[i], qh[i*ds:(i+1)*ds])
				}
				gemm(m.ws, ds, n, dv, qh, true, doh, false, dSp, false)
			}
			if !ch.last {
				Ln := L[n-1]
				P, Kd := t1[:n*ds], t2[:n*dv]
				gemm(m.ws, n, dv, ds, vh, false, dS, true, P, false)
				gemm(m.ws, n, ds, dv, kh, false, dS, false, Kd, false)
				for j := 0; j < n; j++ {
					wj := expT(Ln - L[j])
					term := wj * dot(kh[j*ds:(j+1)*ds], P[j*ds:(j+1)*ds])
					dl[n-1] += term
					dl[j] -= term
					axpy(wj, P[j*ds:(j+1)*ds], dkh[j*ds:(j+1)*ds])
					axpy(wj, Kd[j*dv:(j+1)*dv], dvh[j*dv:(j+1)*dv])
				}
				if !ch.first {
					e := expT(Ln)
					dl[n-1] += e * dot(Sprev, dS)
					axpy(e, dS, dSp)
				}
			}
			dS, dSp = dSp, dS
			var acc T
			for i := n - 1; i >= 0; i-- {
				acc += dl[i]
				t := ch.c0 + i
				if i == 0 && ch.first {
					dz[t*H+h] = 0
				} else {
					dz[t*H+h] = -acc * T(sigmoid(float64(lc.z[t*H+h])))
				}
			}
			scale(qs, dqh[:n*ds])
			scatterHead(dq, dqh, ch.c0, ch.c1, HK, h, ds)
			scatterHead(dk, dkh, ch.c0, ch.c1, HK, h, ds)
			scatterHead(dvv, dvh, ch.c0, ch.c1, HV, h, dv)
		}
	}
	m.projQKVBwd(lc, pre, []string{"lin.wq", "lin.wk", "lin.wv"}, dx, dq, dk, dvv)
	linDecayLogitsBwd(m, lc.n1, m.P.W(pre+"lin.wa"), dz, m.P.G(pre+"lin.wa"), m.P.G(pre+"lin.ba"), dx)
}
