package train

import (
	"math"

	"github.com/onecore-dev/onecore/amx"
)

// FullCE is the full-vocabulary cross-entropy of the tied readout
// logits = hf·Eᵀ against targets (−1 = ignored), averaged over the valid
// targets. With grad it returns dL/dhf and adds dL/dE to the emb gradient.
// It also returns the number of valid targets. Rows are processed in chunks
// so memory stays bounded for large vocabularies.
func FullCE[T Float](m *Model[T], hf []T, targets []int32, grad bool) (loss float64, n int, dhf []T) {
	return fullCE(m, hf, targets, grad, 0)
}

// fullCE is FullCE normalised by norm targets instead of its own count
// when norm > 0: a micro-batch's share of a whole batch's mean.
func fullCE[T Float](m *Model[T], hf []T, targets []int32, grad bool, norm int) (loss float64, n int, dhf []T) {
	D, V := m.Cfg.DModel, m.Cfg.VocabSize
	var rows []int // positions with a target: only those need logits
	for t, y := range targets {
		if y >= 0 {
			rows = append(rows, t)
		}
	}
	n = len(rows)
	if grad {
		dhf = make([]T, len(hf))
	}
	if n == 0 {
		return 0, 0, dhf
	}
	div := n
	if norm > 0 {
		div = norm
	}
	emb := m.P.W("emb")
	const chunk = 64
	logits := make([]T, chunk*V)
	h := make([]T, chunk*D)
	dh := make([]T, chunk*D)
	for c0 := 0; c0 < n; c0 += chunk {
		c1 := min(c0+chunk, n)
		k := c1 - c0
		for r, t := range rows[c0:c1] {
			copy(h[r*D:(r+1)*D], hf[t*D:(t+1)*D])
		}
		gemm(m.ws, k, D, V, h[:k*D], false, emb, true, logits[:k*V], false)
		for r, t := range rows[c0:c1] {
			l := logits[r*V : (r+1)*V]
			y := targets[t]
			mx := l[0]
			for _, v := range l {
				mx = max(mx, v)
			}
			var s float64
			for _, v := range l {
				s += math.Exp(float64(v - mx))
			}
			lse := float64(mx) + math.Log(s)
			loss += lse - float64(l[y])
			if grad {
				for i, v := range l {
					l[i] = T(math.Exp(float64(v)-lse) / float64(div))
				}
				l[y] -= T(1 / float64(div))
			}
		}
		if grad {
			gemm(m.ws, k, V, D, logits[:k*V], false, emb, false, dh[:k*D], false)
			for r, t := range rows[c0:c1] {
				copy(dhf[t*D:(t+1)*D], dh[r*D:(r+1)*D])
			}
			gemm(m.ws, V, k, D, logits[:k*V], true, h[:k*D], false, m.P.G("emb"), true)
		}
	}
	return loss / float64(div), n, dhf
}

// SampledSoftmax is the pretraining objective: for each valid target y_t a
// (1+len(negs))-way discrimination between y_t and the shared negatives
// negs (drawn from the unigram distribution q), every candidate's logit
// corrected by −log(len(negs)·q_c) (the log-q correction); a negative equal
// to the target is masked out. logq[c] = log q_c. It returns the mean loss,
// the number of valid targets and dL/dhf, and adds dL/dE to the emb gradient.
func SampledSoftmax[T Float](m *Model[T], hf []T, targets []int32, negs []int32, logq []float64) (loss float64, n int, dhf []T) {
	return sampledSoftmax(m, hf, targets, negs, logq, 0)
}

// sampledSoftmax is SampledSoftmax normalised by norm targets instead of
// its own count when norm > 0: a micro-batch's share of a batch's mean.
func sampledSoftmax[T Float](m *Model[T], hf []T, targets []int32, negs []int32, logq []float64, norm int) (loss float64, n int, dhf []T) {
	D := m.Cfg.DModel
	N, S := len(targets), len(negs)
	emb, demb := m.P.W("emb"), m.P.G("emb")
	dhf = m.bufRaw("dhf", len(hf)) // the first GEMM below writes every row
	for _, y := range targets {
		if y >= 0 {
			n++
		}
	}
	if n == 0 {
		clear(dhf)
		return 0, 0, dhf
	}
	eneg := m.bufRaw("eneg", S*D)
	corr := m.bufRaw("corr", S)
	lns := math.Log(float64(S))
	for j, id := range negs {
		copy(eneg[j*D:(j+1)*D], emb[int(id)*D:(int(id)+1)*D])
		corr[j] = T(lns + logq[id])
	}
	// hits[id] lists the negatives equal to id (masked when id is the target).
	hits := make(map[int32][]int, S)
	for j, id := range negs {
		hits[id] = append(hits[id], j)
	}
	sc := m.bufRaw("sc", N*S)
	prow := m.bufRaw("sc.row", S+1)
	d0s := m.bufRaw("sc.d0", N)
	gemm(m.ws, N, D, S, hf, false, eneg, true, sc, false)
	invn := 1 / float64(n)
	if norm > 0 {
		invn = 1 / float64(norm)
	}
	for t, y := range targets {
		row := sc[t*S : (t+1)*S]
		if y < 0 {
			clear(row)
			continue
		}
		h := hf[t*D : (t+1)*D]
		ey := emb[int(y)*D : (int(y)+1)*D]
		var l0 T
		mx := l0
		if r32, ok := any(row).([]float32); ok {
			// SIMD dot and correction; accidental hits from the posting list
			l0 = T(amx.Dot(any(h).([]float32), any(ey).([]float32))) - T(lns+logq[y])
			amx.Axpy(-1, any(corr).([]float32), r32)
			for _, j := range hits[y] {
				r32[j] = float32(math.Inf(-1))
			}
			m32 := float32(l0)
			for _, v := range r32 {
				if v > m32 {
					m32 = v
				}
			}
			mx = T(m32)
		} else {
			for i, v := range h {
				l0 += v * ey[i]
			}
			l0 -= T(lns + logq[y])
			mx = l0
			for j := range row {
				if negs[j] == y {
					row[j] = T(math.Inf(-1))
					continue
				}
				row[j] -= corr[j]
				mx = max(mx, row[j])
			}
		}
		var d0 T
		if p, ok := any(prow).([]float32); ok {
			// float32: one SIMD softmax over [l0, row]; p of the
			// largest logit (≥ 1/(S+1), never underflows) gives lse
			p[0] = float32(l0)
			copy(p[1:], any(row).([]float32))
			jm := 0
			for j, v := range p {
				if v == float32(mx) {
					jm = j
					break
				}
			}
			amx.SoftmaxRow(p)
			loss += float64(mx) - math.Log(float64(p[jm])) - float64(l0)
			amx.Axpy(float32(invn)-1, p[1:], p[1:])
			copy(any(row).([]float32), p[1:])
			d0 = T((float64(p[0]) - 1) * invn)
		} else {
			s := math.Exp(float64(l0 - mx))
			for _, v := range row {
				s += math.Exp(float64(v - mx))
			}
			lse := float64(mx) + math.Log(s)
			loss += lse - float64(l0)
			for j, v := range row {
				row[j] = T(math.Exp(float64(v)-lse) * invn)
			}
			d0 = T((math.Exp(float64(l0)-lse) - 1) * invn)
		}
		d0s[t] = d0
		axpy(d0, h, demb[int(y)*D:(int(y)+1)*D])
	}
	scb := roundBF(&m.ws.sbf, sc) // float32: rounded once for both products
	gemmBF(m.ws, N, S, D, sc, scb, false, eneg, nil, false, dhf, false)
	for t, y := range targets {
		if y >= 0 {
			axpy(d0s[t], emb[int(y)*D:(int(y)+1)*D], dhf[t*D:(t+1)*D])
		}
	}
	// dEnegᵀ = hfᵀ·sc (D×S): transposing hf (N×D) for the GEMM's A is
	// cheaper than transposing sc (N×S)
	dnegT := m.bufRaw("dneg", D*S)
	gemmBF(m.ws, D, N, S, hf, nil, true, sc, scb, false, dnegT, false)
	for j, id := range negs {
		row := demb[int(id)*D : (int(id)+1)*D]
		for i := range row {
			row[i] += dnegT[i*S+j]
		}
	}
	return loss * invn, n, dhf
}

// ContractTargets builds the targets of the reference-gradient contract
// (scripts/ref/onecore_ref.py grad): every position t < T−1 whose next id is
// not <bos> predicts ids[t+1] (even <pad>).
func ContractTargets(ids []int32) []int32 {
	tg := make([]int32, len(ids))
	for t := range ids {
		tg[t] = -1
		if t+1 < len(ids) && ids[t+1] != bosID {
			tg[t] = ids[t+1]
		}
	}
	return tg
}

// ContractLossGrad computes, on one packed stream, the loss of the
// reference contract (mean full-vocabulary cross-entropy over
// ContractTargets; no auxiliary loss) and accumulates its gradients into
// m.P.Grad with the training backward pass.
func ContractLossGrad[T Float](m *Model[T], ids []int32) float64 {
	aux := m.AuxCoef
	m.AuxCoef = 0
	defer func() { m.AuxCoef = aux }()
	hf := m.Forward(ids, 0)
	loss, _, dhf := FullCE(m, hf, ContractTargets(ids), true)
	m.Backward(dhf)
	return loss
}
