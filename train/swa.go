package train

import "math"

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

// swaFwd: sliding-window softmax attention with the document mask
// j ≤ i ∧ i−j < W ∧ doc(i) = doc(j).
func (m *Model[T]) swaFwd(lc *layerCache[T], pre string, out []T) {
	c := m.Cfg
	N, D, H, hd, W := m.n, c.DModel, c.SWAHeads, c.SWAHeadDim, c.Window
	HD := H * hd
	lc.q = grow(lc.q, N*HD)
	lc.k = grow(lc.k, N*HD)
	lc.v = grow(lc.v, N*HD)
	lc.o = growZero(lc.o, N*HD)
	lc.p = grow(lc.p, N*H*W)
	gemm(m.ws, N, D, HD, lc.n1, false, m.P.W(pre+"swa.wq"), false, lc.q, false)
	gemm(m.ws, N, D, HD, lc.n1, false, m.P.W(pre+"swa.wk"), false, lc.k, false)
	gemm(m.ws, N, D, HD, lc.n1, false, m.P.W(pre+"swa.wv"), false, lc.v, false)
	m.ropeRows(lc.q, false)
	m.ropeRows(lc.k, false)
	scale := T(1 / math.Sqrt(float64(hd)))
	for i := 0; i < N; i++ {
		lo := max(int(m.start[i]), i-W+1)
		for h := 0; h < H; h++ {
			qi := lc.q[i*HD+h*hd : i*HD+(h+1)*hd]
			p := lc.p[(i*H+h)*W : (i*H+h)*W+(i-lo+1)]
			mx := T(math.Inf(-1))
			for j := lo; j <= i; j++ {
				kj := lc.k[j*HD+h*hd : j*HD+(h+1)*hd]
				var s T
				for d, qv := range qi {
					s += qv * kj[d]
				}
				s *= scale
				p[j-lo] = s
				mx = max(mx, s)
			}
			var sum T
			for j := range p {
				e := T(math.Exp(float64(p[j] - mx)))
				p[j] = e
				sum += e
			}
			inv := 1 / sum
			oi := lc.o[i*HD+h*hd : i*HD+(h+1)*hd]
			for j := lo; j <= i; j++ {
				pj := p[j-lo] * inv
				p[j-lo] = pj
				vj := lc.v[j*HD+h*hd : j*HD+(h+1)*hd]
				for d, vv := range vj {
					oi[d] += pj * vv
				}
			}
		}
	}
	gemm(m.ws, N, HD, D, lc.o, false, m.P.W(pre+"swa.wo"), false, out, false)
}

func (m *Model[T]) swaBwd(lc *layerCache[T], pre string, dy, dx []T) {
	c := m.Cfg
	N, D, H, hd, W := m.n, c.DModel, c.SWAHeads, c.SWAHeadDim, c.Window
	HD := H * hd
	gemm(m.ws, HD, N, D, lc.o, true, dy, false, m.P.G(pre+"swa.wo"), true)
	do := make([]T, N*HD)
	gemm(m.ws, N, D, HD, dy, false, m.P.W(pre+"swa.wo"), true, do, false)
	dq := make([]T, N*HD)
	dk := make([]T, N*HD)
	dv := make([]T, N*HD)
	scale := T(1 / math.Sqrt(float64(hd)))
	dp := make([]T, W)
	for i := 0; i < N; i++ {
		lo := max(int(m.start[i]), i-W+1)
		for h := 0; h < H; h++ {
			p := lc.p[(i*H+h)*W : (i*H+h)*W+(i-lo+1)]
			doi := do[i*HD+h*hd : i*HD+(h+1)*hd]
			qi := lc.q[i*HD+h*hd : i*HD+(h+1)*hd]
			dqi := dq[i*HD+h*hd : i*HD+(h+1)*hd]
			var sum T
			for j := lo; j <= i; j++ {
				vj := lc.v[j*HD+h*hd : j*HD+(h+1)*hd]
				dvj := dv[j*HD+h*hd : j*HD+(h+1)*hd]
				pj := p[j-lo]
				var s T
				for d, g := range doi {
					s += g * vj[d]
					dvj[d] += pj * g
				}
				dp[j-lo] = s
				sum += pj * s
			}
			for j := lo; j <= i; j++ {
				ds := p[j-lo] * (dp[j-lo] - sum) * scale
				if ds == 0 {
					continue
				}
				kj := lc.k[j*HD+h*hd : j*HD+(h+1)*hd]
				dkj := dk[j*HD+h*hd : j*HD+(h+1)*hd]
				for d := range dqi {
					dqi[d] += ds * kj[d]
					dkj[d] += ds * qi[d]
				}
			}
		}
	}
	m.ropeRows(dq, true)
	m.ropeRows(dk, true)
	for _, w := range []struct {
		name string
		d    []T
	}{{"swa.wq", dq}, {"swa.wk", dk}, {"swa.wv", dv}} {
		gemm(m.ws, D, N, HD, lc.n1, true, w.d, false, m.P.G(pre+w.name), true)
		gemm(m.ws, N, HD, D, w.d, false, m.P.W(pre+w.name), true, dx, true)
	}
}
