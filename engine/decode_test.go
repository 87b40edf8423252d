package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/onecore-dev/onecore/amx"
)

// TestPrefillThenDecode: prefilling a prompt and feeding the rest of the
// document token by token gives the logits of prefilling the whole
// document, within the bf16 tolerance (different but equivalent sums).
// The third case has an odd window and 32-wide heads: the value ring's
// half-used last slot pair and the assembly's P·V tile (head dims 32, 64).
func TestPrefillThenDecode(t *testing.T) {
	for ci, moe := range []bool{false, true, false} {
		cfg := smallConfig()
		if !moe {
			cfg.MoELayers = nil
		}
		if ci == 2 {
			cfg.SWAHeadDim, cfg.Window = 32, 13
		}
		m := testModel(t, cfg, 31)
		V := cfg.VocabSize
		doc := randDocs(32, V, 150)[0]
		in := NewInstance(m)
		full, err := in.Prefill([][]int32{doc}, Want{Logits: LogitsAll})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{1, 2, 8, 9, 63, 64, 65, 68, 100, 131} {
			// Small passes split long prompts into pieces (of 64 here).
			in.PassTokens = []int{0, 40}[k%2]
			dec := in.NewDecoder()
			if _, err := dec.Add(Request{Prompt: doc[:k]}); err != nil {
				t.Fatal(err)
			}
			var worst, ss float64
			cnt := 0
			for p := k - 1; p < len(doc); p++ {
				dec.forwardStep([]int32{doc[p]})
				got := dec.logits[:V]
				want := full[0].Logits[p*V : (p+1)*V]
				worst = math.Max(worst, maxAbsDiff(got, want))
				for v := range got {
					ss += float64((got[v] - want[v]) * (got[v] - want[v]))
					cnt++
				}
			}
			// Logits have std ≈ 1; bf16 activations give an RMS difference
			// near 1e-2 (the same as prefill vs a float64 reference); a
			// wrong position, state or routing gives ≥ 0.1.
			if rms := math.Sqrt(ss / float64(cnt)); rms > 0.03 || worst > 0.3 {
				t.Errorf("moe=%v prompt %d: decode logits differ from prefill: rms %.3g, max %.3g", moe, k, rms, worst)
			}
		}
	}
}

// TestDecodeBatchInvariance: documents decoded alone or 16 at a time (with
// joins and leaves) produce bit-identical logits and the same tokens, with
// bf16 weights and with int8 weights.
func TestDecodeBatchInvariance(t *testing.T) {
	for _, opts := range []ModelOptions{{}, {Int8: true}} {
		t.Run(fmt.Sprintf("int8=%v", opts.Int8), func(t *testing.T) {
			testDecodeBatchInvariance(t, testModelWith(t, nil, 41, amx.Selected(), opts))
		})
	}
}

func testDecodeBatchInvariance(t *testing.T, m *Model) {
	V := m.Cfg.VocabSize
	prompts := randDocs(42, V, 1, 5, 9, 20, 3, 17, 8, 2, 30, 12, 7, 1, 16, 140, 25, 6)
	reqs := make([]Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = Request{Prompt: p, MaxNew: 6 + i%5, StopIDs: []int32{}, Sampling: Sampling{Temperature: 0.9, TopK: 20 * (i % 3), TopP: []float32{0, 0.9, 0.5}[i%3], Seed: uint64(i)}}
	}
	type trace struct{ toks []int32 }
	run := func(batch bool) []trace {
		in := NewInstance(m)
		dec := in.NewDecoder()
		out := make([]trace, len(reqs))
		ids := map[int]int{}
		add := func(i int) {
			id, err := dec.Add(reqs[i])
			if err != nil {
				t.Fatal(err)
			}
			ids[id] = i
		}
		step := func() {
			toks := dec.Step()
			for _, tk := range toks {
				i := ids[tk.Seq]
				out[i].toks = append(out[i].toks, tk.Token)
			}
		}
		if batch {
			// Staggered joins: half now, the rest after two steps.
			for i := 0; i < len(reqs)/2; i++ {
				add(i)
			}
			step()
			step()
			// The rest joins at once, prefilled packed (AddMany), in
			// small passes so prompts share passes and the long one is
			// split into pieces.
			in.PassTokens = 40
			got, err := dec.AddMany(reqs[len(reqs)/2:])
			if err != nil {
				t.Fatal(err)
			}
			for k, id := range got {
				ids[id] = len(reqs)/2 + k
			}
			for dec.Active() > 0 {
				step()
			}
		} else {
			for i := range reqs {
				add(i)
				for dec.Active() > 0 {
					step()
				}
			}
		}
		return out
	}
	alone, together := run(false), run(true)
	for i := range reqs {
		if len(alone[i].toks) != reqs[i].MaxNew {
			t.Fatalf("doc %d: %d tokens, want MaxNew %d", i, len(alone[i].toks), reqs[i].MaxNew)
		}
		for j := range alone[i].toks {
			if alone[i].toks[j] != together[i].toks[j] {
				t.Fatalf("doc %d token %d: %d alone, %d batched", i, j, alone[i].toks[j], together[i].toks[j])
			}
		}
	}
	// Bit-identical logits: compare the last step's raw logits via a
	// forced step on fresh decoders, batch 1 vs batch 16.
	in1, inB := NewInstance(m), NewInstance(m)
	d1, dB := in1.NewDecoder(), inB.NewDecoder()
	if _, err := dB.AddMany(reqs); err != nil {
		t.Fatal(err)
	}
	forced := make([]int32, len(reqs))
	for i, r := range reqs {
		forced[i] = r.Prompt[len(r.Prompt)-1]
	}
	dB.forwardStep(forced)
	for i := range reqs {
		d1.active = d1.active[:0]
		d1.Add(reqs[i])
		d1.forwardStep(forced[i : i+1])
		for v := 0; v < V; v++ {
			if math.Float32bits(d1.logits[v]) != math.Float32bits(dB.logits[i*V+v]) {
				t.Fatalf("doc %d: logit %d differs between batch 1 and batch %d", i, v, len(reqs))
			}
		}
	}
}

func TestDecodeStopsAndMask(t *testing.T) {
	m := testModel(t, nil, 51)
	in := NewInstance(m)
	dec := in.NewDecoder()
	// Greedy never emits a masked id (0, 1, 5 are masked in testModel).
	id, err := dec.Add(Request{Prompt: []int32{1, 7, 9}, MaxNew: 30, StopIDs: []int32{}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for dec.Active() > 0 {
		for _, tk := range dec.Step() {
			if tk.Seq != id || tk.Token == 0 || tk.Token == 1 || tk.Token == 5 {
				t.Fatalf("bad token %+v", tk)
			}
			n++
		}
	}
	if n != 30 {
		t.Fatalf("%d tokens, want 30", n)
	}
	// A stop id ends the document: make the greedy choice a stop id.
	dec2 := in.NewDecoder()
	dec2.Add(Request{Prompt: []int32{1, 7, 9}, MaxNew: 30, StopIDs: []int32{}})
	first := dec2.Step()[0].Token
	dec3 := in.NewDecoder()
	dec3.Add(Request{Prompt: []int32{1, 7, 9}, MaxNew: 30, StopIDs: []int32{first}})
	if tk := dec3.Step(); len(tk) != 1 || !tk[0].Done || dec3.Active() != 0 {
		t.Fatalf("stop id did not end the document: %+v", tk)
	}
	if _, err := dec.Add(Request{}); err == nil {
		t.Fatal("empty prompt accepted")
	}
	dec.Add(Request{Prompt: []int32{1}})
	dec.Remove(dec.active[0].id)
	if dec.Active() != 0 {
		t.Fatal("Remove left the document in the batch")
	}
}

func TestSamplingFilters(t *testing.T) {
	logits := []float32{2, 1, 0.5, 3, 3, -1}
	var sp sampler
	rng := rand.New(rand.NewPCG(1, 2))
	if g := sp.pick(append([]float32(nil), logits...), &Sampling{}, rng); g != 3 {
		t.Fatalf("greedy picked %d, want 3 (ties to the lower id)", g)
	}
	counts := map[int32]int{}
	for i := 0; i < 4000; i++ {
		counts[sp.pick(append([]float32(nil), logits...), &Sampling{Temperature: 1, TopK: 3}, rng)]++
	}
	if len(counts) != 3 || counts[3] == 0 || counts[4] == 0 || counts[0] == 0 {
		t.Fatalf("top-k 3 sampled %v", counts)
	}
	// p(3)=p(4)≈0.39, p(0)≈0.14: ratio check.
	if r := float64(counts[3]) / float64(counts[0]); r < 2 || r > 3.6 {
		t.Fatalf("top-k frequencies %v off (ratio %v, want e≈2.7)", counts, r)
	}
	counts = map[int32]int{}
	for i := 0; i < 2000; i++ {
		counts[sp.pick(append([]float32(nil), logits...), &Sampling{Temperature: 1, TopP: 0.5}, rng)]++
	}
	if len(counts) != 2 || counts[3] == 0 || counts[4] == 0 {
		t.Fatalf("top-p 0.5 sampled %v, want only ids 3 and 4", counts)
	}
	big := make([]float32, 5000)
	for i := range big {
		big[i] = float32(i%97) / 10
	}
	counts = map[int32]int{}
	for i := 0; i < 300; i++ {
		counts[sp.pick(append([]float32(nil), big...), &Sampling{Temperature: 0.5, TopP: 0.95}, rng)]++
	}
	for id := range counts {
		if big[id] < 7 {
			t.Fatalf("top-p picked a low-probability id %d (logit %v)", id, big[id])
		}
	}
}

func TestDecodeConstraintsAndLogProbs(t *testing.T) {
	m := testModel(t, nil, 71)
	in := NewInstance(m)
	prompt := randDocs(72, m.Cfg.VocabSize, 12)[0]
	dec := in.NewDecoder()
	dec.Add(Request{Prompt: prompt, MaxNew: 6, StopIDs: []int32{}, LogProbs: true})
	var gen []int32
	var lps []float32
	for dec.Active() > 0 {
		for _, tk := range dec.Step() {
			gen = append(gen, tk.Token)
			lps = append(lps, tk.LogProb)
		}
	}
	full := append(append([]int32(nil), prompt...), gen...)
	res, err := in.Prefill([][]int32{full}, Want{LogProbs: true, MaskVocab: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, lp := range lps {
		want := res[0].LogProbs[len(prompt)-1+i]
		if math.Abs(float64(lp-want)) > 0.05 || lp > 0 {
			t.Fatalf("token %d: decode log-prob %v, prefill %v", i, lp, want)
		}
	}
	// Constrained: only ids 10 and 20 (then only 30), with sampling.
	dec.Add(Request{Prompt: prompt, MaxNew: 8, StopIDs: []int32{}, LogProbs: true, Sampling: Sampling{Temperature: 1, Seed: 3},
		Allow: func(g []int32) []int32 {
			if len(g) >= 4 {
				return []int32{30}
			}
			return []int32{10, 20, 5} // 5 is vocabulary-masked
		}})
	var got []int32
	for dec.Active() > 0 {
		for _, tk := range dec.Step() {
			got = append(got, tk.Token)
			if len(got) > 4 && tk.LogProb != 0 {
				t.Fatalf("single allowed id has log-prob %v, want 0", tk.LogProb)
			}
		}
	}
	for i, tok := range got {
		if (i < 4 && tok != 10 && tok != 20) || (i >= 4 && tok != 30) || len(got) != 8 {
			t.Fatalf("constrained tokens %v", got)
		}
	}
	// Constrained with LogProbsBeforeAllow: the log-probs are the model's
	// under the vocabulary mask alone, as a prefill of prompt+answer says.
	allow := func(g []int32) []int32 { return []int32{10, 20, 30, 5} }
	for _, before := range []bool{false, true} {
		dec.Add(Request{Prompt: prompt, MaxNew: 5, StopIDs: []int32{}, LogProbs: true, LogProbsBeforeAllow: before, Allow: allow})
		gen, lps = gen[:0], lps[:0]
		for dec.Active() > 0 {
			for _, tk := range dec.Step() {
				gen, lps = append(gen, tk.Token), append(lps, tk.LogProb)
			}
		}
		full := append(append([]int32(nil), prompt...), gen...)
		res, err := in.Prefill([][]int32{full}, Want{LogProbs: true, MaskVocab: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, lp := range lps {
			want := res[0].LogProbs[len(prompt)-1+i]
			if close := math.Abs(float64(lp-want)) <= 0.05; close != before {
				t.Fatalf("LogProbsBeforeAllow=%v, token %d: decode log-prob %v, prefill %v", before, i, lp, want)
			}
		}
	}
	// Nothing allowed: the document ends without a token.
	dec.Add(Request{Prompt: prompt, MaxNew: 8, Allow: func([]int32) []int32 { return []int32{5} }})
	if tk := dec.Step(); len(tk) != 1 || tk[0].Token != -1 || !tk[0].Done || dec.Active() != 0 {
		t.Fatalf("empty allowed set: %+v", tk)
	}
}

// TestDecodeBatch64Bitwise: 64 documents stepped together give, bit for
// bit, the logits of each document stepped alone, with head dims that take
// the assembly kernels (SWA 64, linear 32), a window the longer prompts
// wrap (ring slots out of position order) and an odd window (a half-used
// last value pair).
func TestDecodeBatch64Bitwise(t *testing.T) {
	for _, W := range []int{24, 13} {
		cfg := smallConfig()
		cfg.MoELayers = nil
		cfg.DModel = 64
		cfg.SWAHeads, cfg.SWAHeadDim, cfg.Window = 2, 64, W
		cfg.LinHeads, cfg.DState, cfg.LinHeadDim = 2, 16, 32
		m := testModel(t, cfg, 61)
		V := cfg.VocabSize
		lens := make([]int, 64)
		for i := range lens {
			lens[i] = 1 + (i*7)%53
		}
		docs := randDocs(62, V, lens...)
		const steps = 12
		forced := randDocs(63, V, repeat(steps+1, 64)...)
		run := func(which []int) [][]float32 {
			in := NewInstance(m)
			dec := in.NewDecoder()
			for _, i := range which {
				if _, err := dec.Add(Request{Prompt: docs[i]}); err != nil {
					t.Fatal(err)
				}
			}
			out := make([][]float32, len(which))
			toks := make([]int32, len(which))
			for s := 0; s < steps; s++ {
				for k, i := range which {
					toks[k] = forced[i][s+1]
				}
				dec.forwardStep(toks)
				for k := range which {
					out[k] = append(out[k], dec.logits[k*V:(k+1)*V]...)
				}
			}
			return out
		}
		all := make([]int, 64)
		for i := range all {
			all[i] = i
		}
		together := run(all)
		for i := range all {
			alone := run([]int{i})[0]
			for j := range alone {
				if math.Float32bits(alone[j]) != math.Float32bits(together[i][j]) {
					t.Fatalf("W=%d doc %d (prompt %d): logit %d: alone %g, in the batch of 64 %g", W, i, lens[i], j, alone[j], together[i][j])
				}
			}
		}
	}
}
