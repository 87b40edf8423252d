package engine

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Sampling chooses how the next token is picked from the logits (after
// the vocabulary mask). Temperature 0 is greedy (argmax, ties to the lower
// id); otherwise logits are divided by Temperature, restricted to the TopK
// most likely ids (0: no limit) and to the smallest set whose probability
// reaches TopP (0 or ≥ 1: no limit), and sampled with a generator seeded
// by Seed, so a document's continuation depends only on its own request.
type Sampling struct {
	Temperature float32
	TopK        int
	TopP        float32
	Seed        uint64
}

// sampler holds reusable scratch for sampling.
type sampler struct {
	probs []float32
	cand  []int32
}

// pick returns the next token from logits (modified in place).
func (sp *sampler) pick(logits []float32, p *Sampling, rng *rand.Rand) int32 {
	if p.Temperature <= 0 {
		return argmax(logits)
	}
	V := len(logits)
	if cap(sp.probs) < V {
		sp.probs = make([]float32, V)
		sp.cand = make([]int32, 0, V)
	}
	probs := sp.probs[:V]
	inv := 1 / p.Temperature
	m := logits[argmax(logits)]
	var sum float64
	for i, l := range logits {
		e := expf((l - m) * inv)
		probs[i] = e
		sum += float64(e)
	}
	// Candidates: ids whose probability lies within a factor of the top
	// that can matter for top-k/top-p; sorting only those keeps a step
	// O(V) instead of O(V log V).
	cand := sp.cand[:0]
	needSort := (p.TopK > 0 && p.TopK < V) || (p.TopP > 0 && p.TopP < 1)
	if !needSort {
		u := rng.Float64() * sum
		var acc float64
		for i, pr := range probs {
			acc += float64(pr)
			if acc > u && pr > 0 {
				return int32(i)
			}
		}
		return argmax(logits)
	}
	cut := cutoff(probs, sum, p)
	for i, pr := range probs {
		if pr >= cut && pr > 0 {
			cand = append(cand, int32(i))
		}
	}
	slices.SortFunc(cand, func(a, b int32) int {
		if probs[a] != probs[b] {
			if probs[a] > probs[b] {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	if p.TopK > 0 && len(cand) > p.TopK {
		cand = cand[:p.TopK]
	}
	var kept float64
	if p.TopP > 0 && p.TopP < 1 {
		target := float64(p.TopP) * sum
		for i, id := range cand {
			kept += float64(probs[id])
			if kept >= target {
				cand = cand[:i+1]
				break
			}
		}
	}
	kept = 0
	for _, id := range cand {
		kept += float64(probs[id])
	}
	u := rng.Float64() * kept
	var acc float64
	for _, id := range cand {
		acc += float64(probs[id])
		if acc > u {
			return id
		}
	}
	return cand[len(cand)-1]
}

// cutoff returns a probability threshold such that every id needed by
// top-k/top-p has probability ≥ it: ids are histogrammed by
// quarter-octaves below the maximum (probs[max] = 1) and whole buckets are
// taken until both limits are certainly covered.
func cutoff(probs []float32, sum float64, p *Sampling) float32 {
	const nb = 160
	var mass [nb]float64
	var count [nb]int
	for _, pr := range probs {
		b := bucket(pr)
		mass[b] += float64(pr)
		count[b]++
	}
	target := sum
	if p.TopP > 0 && p.TopP < 1 {
		target = float64(p.TopP) * sum
	}
	var acc float64
	n := 0
	for b := 0; b < nb; b++ {
		acc += mass[b]
		n += count[b]
		kOK := p.TopK <= 0 || n >= p.TopK
		pOK := acc >= target*(1-1e-6)
		if kOK && pOK || b == nb-1 {
			return bucketFloor(b)
		}
		// Top-k alone: as soon as k candidates are in, stop.
		if p.TopK > 0 && n >= p.TopK && !(p.TopP > 0 && p.TopP < 1) {
			return bucketFloor(b)
		}
	}
	return 0
}

// bucket maps a probability relative to the max (≤ 1) to quarter-octaves.
func bucket(pr float32) int {
	if pr <= 0 {
		return 159
	}
	b := int(-4 * math.Log2(float64(pr)))
	return min(max(b, 0), 159)
}

// bucketFloor is the smallest probability in bucket b (0 for the last).
func bucketFloor(b int) float32 {
	if b >= 159 {
		return 0
	}
	return float32(math.Exp2(-float64(b+1)/4) * 0.999) // margin for rounding
}

// argmax returns the index of the largest value (ties to the lower index).
// Four independent running maxima keep the loop free of a serial
// dependency; NaNs never win.
func argmax(x []float32) int32 {
	n := len(x) &^ 3
	var bi [4]int
	var bv [4]float32
	for l := range bv {
		bv[l] = float32(math.Inf(-1))
		bi[l] = -1
	}
	for i := 0; i < n; i += 4 {
		v := x[i : i+4 : i+4]
		if v[0] > bv[0] {
			bv[0], bi[0] = v[0], i
		}
		if v[1] > bv[1] {
			bv[1], bi[1] = v[1], i+1
		}
		if v[2] > bv[2] {
			bv[2], bi[2] = v[2], i+2
		}
		if v[3] > bv[3] {
			bv[3], bi[3] = v[3], i+3
		}
	}
	best, bestV := -1, float32(math.Inf(-1))
	for l := range bv {
		if bi[l] >= 0 && (best < 0 || bv[l] > bestV || (bv[l] == bestV && bi[l] < best)) {
			best, bestV = bi[l], bv[l]
		}
	}
	for i := n; i < len(x); i++ {
		if best < 0 || x[i] > bestV {
			best, bestV = i, x[i]
		}
	}
	if best < 0 {
		return 0 // all −Inf or NaN
	}
	return int32(best)
}
