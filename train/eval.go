package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// ValFlat is the full-vocabulary validation loss (nats/token) over rows of
// val packed rowLen long, at most maxTokens tokens, in batches of batch rows.
func ValFlat(m *Model[float32], val *Corpus, rowLen, batch, maxTokens int) (float64, int) {
	if val == nil || val.Docs() == 0 {
		return math.NaN(), 0
	}
	p := &Packer{C: val, RowLen: rowLen}
	p.order = make([]int, val.Docs())
	for i := range p.order {
		p.order[i] = i
	}
	var sum float64
	var n int
	ids := make([]int32, batch*rowLen)
	tg := make([]int32, batch*rowLen)
	var learn []bool
	if val.Learn != nil {
		learn = make([]bool, len(ids))
	}
	for seen := 0; seen < maxTokens && p.Cur.Epoch == 0; seen += len(ids) {
		for r := 0; r < batch; r++ {
			var lr []bool
			if learn != nil {
				lr = learn[r*rowLen : (r+1)*rowLen]
			}
			p.Next(ids[r*rowLen:(r+1)*rowLen], lr)
		}
		Targets(ids, rowLen, tg, learn)
		hf := m.Forward(ids, rowLen)
		l, k, _ := FullCE(m, hf, tg, false)
		sum += l * float64(k)
		n += k
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}

// unigram draws token ids by corpus frequency.
type unigram struct {
	cum   []int64 // cumulative counts
	total int64
}

func newUnigram(counts []int64, skipSpecial bool) *unigram {
	u := &unigram{cum: make([]int64, len(counts))}
	for id, c := range counts {
		if skipSpecial && id <= eosID {
			c = 0
		}
		u.total += c
		u.cum[id] = u.total
	}
	return u
}

func (u *unigram) draw(rng *rand.Rand) int32 {
	x := rng.Int64N(u.total)
	return int32(sort.Search(len(u.cum), func(i int) bool { return u.cum[i] > x }))
}

// argmaxRow returns the argmax of logits over allowed ids (mask[id] true = never).
func argmaxRow[T Float](logits []T, mask []bool) int32 {
	best, bi := T(math.Inf(-1)), int32(0)
	for i, v := range logits {
		if (mask != nil && mask[i]) || i == padID || i == bosID {
			continue
		}
		if v > best {
			best, bi = v, int32(i)
		}
	}
	return bi
}

// nextLogits returns the readout logits of every position of hf.
func nextLogits(m *Model[float32], hf []float32, rows int) []float32 {
	D, V := m.Cfg.DModel, m.Cfg.VocabSize
	out := make([]float32, rows*V)
	gemm(m.ws, rows, D, V, hf[:rows*D], false, m.P.W("emb"), true, out, false)
	return out
}

// Generate greedily extends prompt (ids, starting with <bos>) by at most n
// tokens, stopping after <eos>, never emitting masked ids.
func Generate(m *Model[float32], prompt []int32, n int, mask []bool) []int32 {
	ids := append([]int32(nil), prompt...)
	D := m.Cfg.DModel
	for i := 0; i < n; i++ {
		hf := m.Forward(ids, 0)
		last := hf[(len(ids)-1)*D : len(ids)*D]
		next := argmaxRow(nextLogits(m, last, 1), mask)
		ids = append(ids, next)
		if next == eosID {
			break
		}
	}
	return ids[len(prompt):]
}

// ProbeScores are the synthetic probes of the paper: accuracy of greedy
// next-token predictions.
type ProbeScores struct {
	// Induct: [bos] x1..xL x1..xL — accuracy on x2..xL of the copy
	// (induction: after a token, predict what followed it before).
	Induct float64 `json:"induct"`
	// Shift: [bos] x1..xL followed by the same tokens rotated by L/2 — the
	// copy is at a different offset, so only content-based copying works;
	// scored like Induct, except at the wrap-around.
	Shift float64 `json:"shift"`
	// Add: "a+b=" for two-digit a, b, greedy continuation read as a number.
	Add float64 `json:"add"`
}

// probeRows is the rows of each copy probe in a training run's evals: 16
// rows of 15 scored positions, 240 items (about ±0.03 of binomial noise at
// 0.5, for one draw of the rows; train probe measures many draws).
const probeRows = 16

// runProbes evaluates the probes with token ids drawn by corpus frequency
// (seeded, so every eval sees the same probes), probeRows rows each.
func runProbes(m *Model[float32], tok Tokenizer, uni *unigram, mask []bool, seed uint64) ProbeScores {
	return runProbesN(m, tok, uni, mask, seed, probeRows)
}

// runProbesN is runProbes with n rows per copy probe (the addition probe,
// run when tok is non-nil, always has 10 items).
func runProbesN(m *Model[float32], tok Tokenizer, uni *unigram, mask []bool, seed uint64, n int) ProbeScores {
	const L = 16
	rng := rand.New(rand.NewPCG(seed, 0x70726f6265))
	copyProbe := func(rot int) float64 {
		rowLen := 1 + 2*L
		ids := make([]int32, n*rowLen)
		for r := 0; r < n; r++ {
			row := ids[r*rowLen : (r+1)*rowLen]
			row[0] = bosID
			for i := 0; i < L; i++ {
				row[1+i] = uni.draw(rng)
			}
			for i := 0; i < L; i++ {
				row[1+L+i] = row[1+(i+rot)%L]
			}
		}
		hf := m.Forward(ids, rowLen)
		logits := nextLogits(m, hf, len(ids))
		V := m.Cfg.VocabSize
		hit, tot := 0, 0
		for r := 0; r < n; r++ {
			for i := 1; i < L; i++ { // predict copy token i from position of token i-1
				if rot > 0 && (i+rot)%L == 0 {
					continue // wrap-around: the previous occurrence is not followed by it
				}
				pos := r*rowLen + L + i // position of copy token i-1
				if argmaxRow(logits[pos*V:(pos+1)*V], mask) == ids[pos+1] {
					hit++
				}
				tot++
			}
		}
		return float64(hit) / float64(tot)
	}
	s := ProbeScores{Induct: copyProbe(0), Shift: copyProbe(L / 2)}
	if tok != nil {
		ok := 0
		const nAdd = 10
		for i := 0; i < nAdd; i++ {
			a, b := 10+rng.IntN(90), 10+rng.IntN(90)
			prompt := append([]int32{bosID}, tok.Encode(fmt.Sprintf("%d+%d=", a, b))...)
			out := tok.Decode(Generate(m, prompt, 4, mask))
			digits := strings.TrimLeft(out, " ")
			end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
			if end >= 0 {
				digits = digits[:end]
			}
			if v, err := strconv.Atoi(digits); err == nil && v == a+b {
				ok++
			}
		}
		s.Add = float64(ok) / nAdd
	}
	return s
}
