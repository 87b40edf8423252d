package engine

import (
	"github.com/onecore-dev/onecore/amx"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// testModel builds a model of smallConfig (or cfg) with random weights and
// a classifier head.
func testModel(t testing.TB, cfg *Config, seed uint64) *Model {
	t.Helper()
	return testModelFor(t, cfg, seed, amx.Selected())
}

// testModelFor is testModel packed for kernel kern.
func testModelFor(t testing.TB, cfg *Config, seed uint64, kern amx.Kernel) *Model {
	t.Helper()
	return testModelWith(t, cfg, seed, kern, ModelOptions{})
}

// testModelWith is testModelFor packed as opts says.
func testModelWith(t testing.TB, cfg *Config, seed uint64, kern amx.Kernel, opts ModelOptions) *Model {
	t.Helper()
	if cfg == nil {
		cfg = smallConfig()
	}
	ts := InitTensors(cfg, seed)
	ts[HeadClsW] = make([]float32, cfg.DModel*3)
	rng := rand.New(rand.NewPCG(seed, 9))
	for i := range ts[HeadClsW] {
		ts[HeadClsW][i] = float32(rng.NormFloat64())
	}
	ts[HeadClsB] = []float32{0.1, -0.2, 0.3}
	ts[HeadSpanW] = make([]float32, cfg.DModel*2)
	for i := range ts[HeadSpanW] {
		ts[HeadSpanW][i] = float32(rng.NormFloat64())
	}
	ts[HeadSpanB] = []float32{0.25, -0.5}
	// Give the router a strong bias spread so block 0 is not a near-tie
	// and the rest of the router input matters.
	for i := range cfg.Layers {
		if cfg.IsMoE(i) {
			b := ts[layerName(i, "moe.router.b")]
			for e := range b {
				b[e] = float32(rng.NormFloat64())
			}
			w := ts[layerName(i, "moe.router.w")]
			for j := range w {
				w[j] *= 8
			}
		}
	}
	dir := t.TempDir()
	if err := SaveCheckpoint(dir, cfg, ts, &Generation{VocabMask: []int32{0, 1, 5}, StopIDs: []int32{2}}); err != nil {
		t.Fatal(err)
	}
	ck, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModelWith(ck, kern, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func layerName(i int, s string) string { return "layers." + itoa(i) + "." + s }

var allWant = Want{Hidden: true, Mean: true, Logits: LogitsAll, LogProbs: true, Classify: true, Span: true}

func sameResult(t *testing.T, what string, a, b Result) {
	t.Helper()
	for _, f := range []struct {
		name string
		x, y []float32
	}{{"hidden", a.Hidden, b.Hidden}, {"mean", a.Mean, b.Mean}, {"logits", a.Logits, b.Logits}, {"logprobs", a.LogProbs, b.LogProbs}, {"class", a.Class, b.Class}, {"span", a.Span, b.Span}} {
		if len(f.x) != len(f.y) {
			t.Fatalf("%s: %s lengths %d vs %d", what, f.name, len(f.x), len(f.y))
		}
		for i := range f.x {
			if math.Float32bits(f.x[i]) != math.Float32bits(f.y[i]) {
				t.Fatalf("%s: %s[%d] = %v vs %v: not bit-identical", what, f.name, i, f.x[i], f.y[i])
			}
		}
	}
}

// TestBatchInvariance: a document's outputs are bit-identical alone, packed
// with others in any order and position, with any pass size (long documents
// split in pieces), on two instances at once — with every kernel this CPU has.
func TestBatchInvariance(t *testing.T) {
	for _, kern := range amx.Available() {
		t.Run(kern.String(), func(t *testing.T) { testBatchInvariance(t, testModelFor(t, nil, 1, kern)) })
	}
}

func testBatchInvariance(t *testing.T, m *Model) {
	// Lengths cross SWA chunks (8), route blocks (8) and linear chunks (64).
	docs := randDocs(2, m.Cfg.VocabSize, 150, 1, 9, 64, 65, 17, 130, 2)
	alone := make([]Result, len(docs))
	in := NewInstance(m)
	for i, d := range docs {
		r, err := in.Prefill([][]int32{d}, allWant)
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = r[0]
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for trial, pass := range []int{0, 1, 40, 200, 10000} {
		perm := rng.Perm(len(docs))
		var packed [][]int32
		for _, p := range perm {
			packed = append(packed, docs[p])
		}
		in.PassTokens = pass
		res, err := in.Prefill(packed, allWant)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range perm {
			sameResult(t, "trial "+itoa(trial)+" doc "+itoa(p), alone[p], res[i])
		}
	}
	// Two instances concurrently, half the documents each.
	var wg sync.WaitGroup
	out := make([][]Result, 2)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var mine [][]int32
			for i := w; i < len(docs); i += 2 {
				mine = append(mine, docs[i])
			}
			var err error
			if out[w], err = NewInstance(m).Prefill(mine, allWant); err != nil {
				t.Error(err)
			}
		}(w)
	}
	wg.Wait()
	for i := range docs {
		sameResult(t, "two instances doc "+itoa(i), alone[i], out[i%2][i/2])
	}
}

// TestDocumentIsolation: what follows a document in the stream never
// changes it, and a stream split at <bos> equals prefilling its documents.
func TestDocumentIsolation(t *testing.T) {
	m := testModel(t, nil, 3)
	docs := randDocs(4, m.Cfg.VocabSize, 20, 33, 70)
	var stream []int32
	for _, d := range docs {
		stream = append(stream, d...)
	}
	split := SplitDocs(stream)
	if len(split) != 3 || !slices.Equal(split[1], docs[1]) {
		t.Fatalf("SplitDocs: %v", split)
	}
	if got := SplitDocs([]int32{7, 8, 1, 9, 1}); len(got) != 3 || !slices.Equal(got[0], []int32{7, 8}) {
		t.Fatalf("SplitDocs without leading bos: %v", got)
	}
	in := NewInstance(m)
	a, _ := in.Prefill(docs, Want{Logits: LogitsAll})
	other := randDocs(9, m.Cfg.VocabSize, 50)
	b, _ := in.Prefill([][]int32{other[0], docs[1], docs[0]}, Want{Logits: LogitsAll})
	sameResult(t, "doc 1", a[1], b[1])
	sameResult(t, "doc 0", a[0], b[2])
}

// TestCausal: logits at position p do not depend on later tokens (within
// the bf16 tolerance: a shorter last chunk changes GEMM shapes).
func TestCausal(t *testing.T) {
	m := testModel(t, nil, 4)
	doc := randDocs(5, m.Cfg.VocabSize, 100)[0]
	in := NewInstance(m)
	full, _ := in.Prefill([][]int32{doc}, Want{Logits: LogitsAll})
	V := m.Cfg.VocabSize
	for _, k := range []int{1, 7, 8, 9, 40, 64, 65, 99} {
		pre, _ := in.Prefill([][]int32{doc[:k]}, Want{Logits: LogitsAll})
		if d := maxAbsDiff(pre[0].Logits, full[0].Logits[:k*V]); d > 1e-3 {
			t.Errorf("prefix %d: logits differ by %g", k, d)
		}
	}
}

func maxAbsDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// TestPrefillOutputs checks the derived outputs against the logits.
func TestPrefillOutputs(t *testing.T) {
	m := testModel(t, nil, 6)
	docs := randDocs(7, m.Cfg.VocabSize, 12, 3)
	in := NewInstance(m)
	res, err := in.Prefill(docs, Want{Hidden: true, Mean: true, Logits: LogitsAll, LogProbs: true, Classify: true, Span: true})
	if err != nil {
		t.Fatal(err)
	}
	last, _ := in.Prefill(docs, Want{Logits: LogitsLast, LogProbs: true})
	D, V := m.Cfg.DModel, m.Cfg.VocabSize
	for di, d := range docs {
		r := res[di]
		n := len(d)
		if len(r.Hidden) != n*D || len(r.Logits) != n*V || len(r.LogProbs) != n-1 || len(r.Class) != 3 {
			t.Fatalf("doc %d: sizes %d %d %d %d", di, len(r.Hidden), len(r.Logits), len(r.LogProbs), len(r.Class))
		}
		if !slices.Equal(last[0].Logits, res[0].Logits[(len(docs[0])-1)*V:]) && di == 0 {
			t.Fatal("LogitsLast differs from the last row of LogitsAll")
		}
		if !slices.Equal(last[di].LogProbs, r.LogProbs) {
			t.Fatalf("doc %d: log-probs depend on whether full logits were asked", di)
		}
		for i := 0; i < n-1; i++ {
			row := r.Logits[i*V : (i+1)*V]
			var s float64
			for _, v := range row {
				s += math.Exp(float64(v))
			}
			want := float64(row[d[i+1]]) - math.Log(s)
			if math.Abs(want-float64(r.LogProbs[i])) > 1e-4 {
				t.Fatalf("doc %d pos %d: logprob %v want %v", di, i, r.LogProbs[i], want)
			}
		}
		for j := 0; j < D; j++ {
			var s float64
			for i := 0; i < n; i++ {
				s += float64(r.Hidden[i*D+j])
			}
			if math.Abs(s/float64(n)-float64(r.Mean[j])) > 1e-5 {
				t.Fatalf("mean[%d] = %v want %v", j, r.Mean[j], s/float64(n))
			}
		}
		for l := 0; l < 3; l++ {
			s := float64(m.clsB[l])
			for j := 0; j < D; j++ {
				s += float64(r.Mean[j]) * float64(m.clsW[j*3+l])
			}
			if math.Abs(s-float64(r.Class[l])) > 1e-4 {
				t.Fatalf("class[%d] = %v want %v", l, r.Class[l], s)
			}
		}
		if len(r.Span) != 2*n {
			t.Fatalf("doc %d: %d span logits for %d tokens", di, len(r.Span), n)
		}
		for i := 0; i < n; i++ {
			for k := 0; k < 2; k++ {
				s := float64(m.spanB[k])
				for j := 0; j < D; j++ {
					s += float64(r.Hidden[i*D+j]) * float64(m.spanW[j*2+k])
				}
				if math.Abs(s-float64(r.Span[2*i+k])) > 1e-4 {
					t.Fatalf("doc %d pos %d: span[%d] = %v want %v", di, i, k, r.Span[2*i+k], s)
				}
			}
		}
		// Hidden rows are RMS-normalised outputs times norm.g (= 1 here).
		var ss float64
		for j := 0; j < D; j++ {
			ss += float64(r.Hidden[j] * r.Hidden[j])
		}
		if math.Abs(ss/float64(D)-1) > 1e-3 {
			t.Fatalf("final hidden not normalised: mean square %v", ss/float64(D))
		}
	}
	// MaskVocab: log-probs under the mask, logits still raw.
	masked, err := in.Prefill(docs, Want{Logits: LogitsAll, LogProbs: true, MaskVocab: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(masked[0].Logits, res[0].Logits) {
		t.Fatal("MaskVocab changed the returned logits")
	}
	d := docs[0]
	for i := 0; i < len(d)-1; i++ {
		row := res[0].Logits[i*V : (i+1)*V]
		var s float64
		for id, v := range row {
			if id != 0 && id != 1 && id != 5 { // testModel masks 0, 1, 5
				s += math.Exp(float64(v))
			}
		}
		want := float64(row[d[i+1]]) - math.Log(s)
		if math.Abs(want-float64(masked[0].LogProbs[i])) > 1e-4 {
			t.Fatalf("masked logprob %d: %v want %v", i, masked[0].LogProbs[i], want)
		}
	}
	if _, err := in.Prefill([][]int32{{1, 97}}, Want{}); err == nil {
		t.Fatal("out-of-range token accepted")
	}
	if _, err := in.Prefill([][]int32{{}}, Want{}); err == nil {
		t.Fatal("empty document accepted")
	}
}
