package train

import "math"

// softplus(z) = log(1+e^z), computed without overflow.
func softplus(z float64) float64 { return math.Max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) }

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// linFwd: log-decay linear attention, S_t = exp(a_t)·S_{t−1} + k_t v_tᵀ with
// S reset at each document start, o_t = (q_t/√d_state)ᵀ S_t, per-head
// RMSNorm, output projection. Training uses the exact recurrence.
func (m *Model[T]) linFwd(lc *layerCache[T], pre string, out []T) {
	c := m.Cfg
	N, D, H, ds, dv := m.n, c.DModel, c.LinHeads, c.DState, c.LinHeadDim
	HK, HV := H*ds, H*dv
	lc.q = grow(lc.q, N*HK)
	lc.k = grow(lc.k, N*HK)
	lc.v = grow(lc.v, N*HV)
	lc.z = grow(lc.z, N*H)
	lc.o = grow(lc.o, N*HV)
	lc.on = grow(lc.on, N*HV)
	lc.ro = grow(lc.ro, N*H)
	gemmShared(m.ws, N, D, lc.n1, false,
		gemmOp[T]{m.P.W(pre + "lin.wq"), false, HK, lc.q, false},
		gemmOp[T]{m.P.W(pre + "lin.wk"), false, HK, lc.k, false},
		gemmOp[T]{m.P.W(pre + "lin.wv"), false, HV, lc.v, false})
	linDecayLogits(m, lc.n1, m.P.W(pre+"lin.wa"), m.P.W(pre+"lin.ba"), lc.z)
	qs := T(1 / math.Sqrt(float64(ds)))
	S := m.buf("lin.S", ds*dv)
	for h := 0; h < H; h++ {
		for t := 0; t < N; t++ {
			if int(m.start[t]) == t {
				clear(S)
			} else {
				scale(T(math.Exp(-softplus(float64(lc.z[t*H+h])))), S)
			}
			kt := lc.k[t*HK+h*ds : t*HK+(h+1)*ds]
			vt := lc.v[t*HV+h*dv : t*HV+(h+1)*dv]
			qt := lc.q[t*HK+h*ds : t*HK+(h+1)*ds]
			ot := lc.o[t*HV+h*dv : t*HV+(h+1)*dv]
			clear(ot)
			for i := 0; i < ds; i++ {
				row := S[i*dv : (i+1)*dv]
				axpy(kt[i], vt, row)
				axpy(qt[i]*qs, row, ot)
			}
		}
	}
	gn := m.P.W(pre + "lin.gn")
	eps := T(c.NormEps)
	for t := 0; t < N; t++ {
		for h := 0; h < H; h++ {
			o := t*HV + h*dv
			rmsnormFwd(lc.o[o:o+dv], gn[h*dv:(h+1)*dv], lc.on[o:o+dv], lc.ro[t*H+h:t*H+h+1], dv, eps)
		}
	}
	gemm(m.ws, N, HV, D, lc.on, false, m.P.W(pre+"lin.wo"), false, out, false)
}

// linDecayLogits computes z = x·wa + ba (N×H), in full precision: the decay
// is sensitive and the GEMM is tiny.
func linDecayLogits[T Float](m *Model[T], x, wa, ba, z []T) {
	D, H := m.Cfg.DModel, m.Cfg.LinHeads
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

func (m *Model[T]) linBwd(lc *layerCache[T], pre string, dy, dx []T) {
	c := m.Cfg
	N, D, H, ds, dv := m.n, c.DModel, c.LinHeads, c.DState, c.LinHeadDim
	HK, HV := H*ds, H*dv
	gemm(m.ws, HV, N, D, lc.on, true, dy, false, m.P.G(pre+"lin.wo"), true)
	don := m.bufRaw("lin.don", N*HV)
	gemm(m.ws, N, D, HV, dy, false, m.P.W(pre+"lin.wo"), true, don, false)
	do := m.buf("lin.do", N*HV)
	gn, dgn := m.P.W(pre+"lin.gn"), m.P.G(pre+"lin.gn")
	for t := 0; t < N; t++ {
		for h := 0; h < H; h++ {
			o := t*HV + h*dv
			rmsnormBwd(lc.o[o:o+dv], gn[h*dv:(h+1)*dv], lc.ro[t*H+h:t*H+h+1], don[o:o+dv], do[o:o+dv], dgn[h*dv:(h+1)*dv], dv)
		}
	}
	dq := m.bufRaw("lin.dq", N*HK)
	dk := m.bufRaw("lin.dk", N*HK)
	dvv := m.buf("lin.dvv", N*HV)
	dz := m.buf("lin.dz", N*H)
	qs := T(1 / math.Sqrt(float64(ds)))
	St := m.bufRaw("lin.St", N*ds*dv) // every state of one head, recomputed
	dS := m.buf("lin.dS", ds*dv)
	ea := m.buf("lin.ea", N)
	for h := 0; h < H; h++ {
		// recompute every state S_t of this head
		for t := 0; t < N; t++ {
			ea[t] = T(math.Exp(-softplus(float64(lc.z[t*H+h]))))
			cur := St[t*ds*dv : (t+1)*ds*dv]
			kt := lc.k[t*HK+h*ds : t*HK+(h+1)*ds]
			vt := lc.v[t*HV+h*dv : t*HV+(h+1)*dv]
			if int(m.start[t]) == t {
				clear(cur)
			} else {
				copy(cur, St[(t-1)*ds*dv:t*ds*dv])
				scale(ea[t], cur)
			}
			for i := 0; i < ds; i++ {
				axpy(kt[i], vt, cur[i*dv:(i+1)*dv])
			}
		}
		// reverse pass: dS_t = q'_t do_tᵀ + exp(a_{t+1}) dS_{t+1}
		clear(dS)
		for t := N - 1; t >= 0; t-- {
			if t+1 < N && int(m.start[t+1]) != t+1 {
				scale(ea[t+1], dS)
			} else {
				clear(dS)
			}
			qt := lc.q[t*HK+h*ds : t*HK+(h+1)*ds]
			kt := lc.k[t*HK+h*ds : t*HK+(h+1)*ds]
			vt := lc.v[t*HV+h*dv : t*HV+(h+1)*dv]
			dot_ := do[t*HV+h*dv : t*HV+(h+1)*dv]
			dqt := dq[t*HK+h*ds : t*HK+(h+1)*ds]
			dkt := dk[t*HK+h*ds : t*HK+(h+1)*ds]
			dvt := dvv[t*HV+h*dv : t*HV+(h+1)*dv]
			cur := St[t*ds*dv : (t+1)*ds*dv]
			for i := 0; i < ds; i++ {
				row := dS[i*dv : (i+1)*dv]
				axpy(qt[i]*qs, dot_, row)
				dqt[i] = dot(cur[i*dv:(i+1)*dv], dot_) * qs
				dkt[i] = dot(row, vt)
				axpy(kt[i], row, dvt)
			}
			if int(m.start[t]) != t {
				da := dot(St[(t-1)*ds*dv:t*ds*dv], dS) * ea[t]
				dz[t*H+h] = -da * T(sigmoid(float64(lc.z[t*H+h])))
			}
		}
	}
	gemmShared(m.ws, D, N, lc.n1, true,
		gemmOp[T]{dq, false, HK, m.P.G(pre + "lin.wq"), true},
		gemmOp[T]{dk, false, HK, m.P.G(pre + "lin.wk"), true},
		gemmOp[T]{dvv, false, HV, m.P.G(pre + "lin.wv"), true})
	for _, w := range []struct {
		name string
		d    []T
		n    int
	}{{"lin.wq", dq, HK}, {"lin.wk", dk, HK}, {"lin.wv", dvv, HV}} {
		gemm(m.ws, N, w.n, D, w.d, false, m.P.W(pre+w.name), true, dx, true)
	}
	wa, dwa, dba := m.P.W(pre+"lin.wa"), m.P.G(pre+"lin.wa"), m.P.G(pre+"lin.ba")
	for t := 0; t < N; t++ {
		zt := dz[t*H : (t+1)*H]
		for h, g := range zt {
			dba[h] += g
		}
		xt := lc.n1[t*D : (t+1)*D]
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
