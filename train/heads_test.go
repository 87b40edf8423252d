package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/engine"
)

// TestClassifyMultilabelHead: documents carry any subset of three topics
// (the empty set too), each topic's words mixed into filler; the head must
// recover the sets, and the checkpoint must say multilabel with a
// threshold per label.
func TestClassifyMultilabelHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	topics := []string{"food", "sport", "tech"}
	words := map[string][]string{"sport": {"ball", "goal", "team"}, "food": {"bread", "soup", "rice"}, "tech": {"chip", "code", "disk"}}
	filler := []string{"the", "a", "of", "and", "to", "is"}
	var recs []map[string]any
	for i := 0; i < 240; i++ {
		tags := []string{}
		for _, tp := range topics {
			if rng.IntN(2) == 0 {
				tags = append(tags, tp)
			}
		}
		var ws []string
		for j := 0; j < 12; j++ {
			if len(tags) > 0 && rng.IntN(2) == 0 {
				tp := tags[rng.IntN(len(tags))]
				ws = append(ws, words[tp][rng.IntN(3)])
			} else {
				ws = append(ws, filler[rng.IntN(len(filler))])
			}
		}
		for _, tp := range tags { // every topic of the set appears at least once
			ws[rng.IntN(len(ws))] = words[tp][0]
		}
		recs = append(recs, map[string]any{"text": strings.Join(ws, " ") + fmt.Sprintf(" #%d", i), "tags": tags})
	}
	recs[0]["tags"] = "food" // one label as a plain string is a set of one
	from := randomCheckpoint(t)
	out := t.TempDir()
	rep, err := Classify(context.Background(), ClassifyOptions{
		From: from, Out: out, Data: []string{writeRecords(t, recs)}, TextField: "text", LabelField: "tags", Head: engine.HeadMultilabel,
		Tokenizer: byteTok{}, MaxTokens: 128, ValPermille: 250, HeadEpochs: 300, HeadLR: 0.05,
		Finetune: true, Epochs: 4, LR: 5e-4, BatchTokens: 1024, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.MicroF1 < 0.9 || rep.MacroF1 < 0.9 || rep.Accuracy < 0.6 {
		t.Errorf("multilabel head: %v; want micro/macro-F1 ≥ 0.9 and set accuracy ≥ 0.6", rep)
	}
	_, p, gen, err := LoadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	if gen.Head != engine.HeadMultilabel || !slices.Equal(gen.Labels, topics) || !slices.Equal(gen.Thresholds, rep.Thresholds) || len(p.W("head.cls.b")) != 3 {
		t.Errorf("checkpoint: head %q labels %v thresholds %v (report %v)", gen.Head, gen.Labels, gen.Thresholds, rep.Thresholds)
	}
}

// TestClassifyRegressionHead: the target is the number of "star" words in
// a fixed-length document (0–5); the head must track it, and the saved
// head (mapped back from the standardized target) must give the same
// errors as the report when run on the checkpoint.
func TestClassifyRegressionHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	filler := []string{"the", "a", "of", "and", "to", "is", "was", "it"}
	var recs []map[string]any
	var texts []string
	var vals []float64
	for i := 0; i < 240; i++ {
		n := rng.IntN(6)
		ws := make([]string, 10)
		for j := range ws {
			ws[j] = filler[rng.IntN(len(filler))]
		}
		for _, j := range rng.Perm(10)[:n] {
			ws[j] = "star"
		}
		text := strings.Join(ws, " ")
		// targets on a scale far from 0..1, so a missing de-standardization shows
		texts, vals = append(texts, text), append(vals, 100+20*float64(n))
		recs = append(recs, map[string]any{"text": text, "score": 100 + 20*n})
	}
	recs[1]["score"] = fmt.Sprint(recs[1]["score"]) // numbers as strings are read too
	from := randomCheckpoint(t)
	out := t.TempDir()
	o := ClassifyOptions{
		From: from, Out: out, Data: []string{writeRecords(t, recs)}, TextField: "text", LabelField: "score", Head: engine.HeadRegression,
		Tokenizer: byteTok{}, MaxTokens: 128, ValPermille: 250, HeadEpochs: 300, HeadLR: 0.05, Seed: 1,
	}
	rep, err := Classify(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Pearson < 0.9 || rep.MAE > 10 {
		t.Errorf("regression head: %v; want Pearson ≥ 0.9, MAE ≤ 10 (targets 100..200 in steps of 20)", rep)
	}
	c, p, gen, err := LoadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	if gen.Head != engine.HeadRegression || !slices.Equal(gen.Labels, []string{"score"}) {
		t.Fatalf("checkpoint: head %q labels %v", gen.Head, gen.Labels)
	}
	// the checkpoint's head, run directly, in target units
	m := NewModel(c, p)
	hs := make([]uint64, len(texts))
	for i, s := range texts {
		hs[i] = textHash(s)
	}
	var ae float64
	n := 0
	feat := make([]float32, c.DModel)
	out1 := make([]float64, 1)
	for i, held := range heldOutSplit(hs, o.ValPermille) {
		if !held {
			continue
		}
		ids := append([]int32{bosID}, byteTok{}.Encode(texts[i])...)
		meanRows(m.Forward(ids, 0), c.DModel, feat)
		headLogits(p.W("head.cls.w"), p.W("head.cls.b"), feat, 1, out1)
		ae += math.Abs(out1[0] - vals[i])
		n++
	}
	// bf16 rounding of the saved head moves outputs by well under a unit
	if got := ae / float64(n); n != rep.N || math.Abs(got-rep.MAE) > 0.5 {
		t.Errorf("checkpoint MAE %.3f on %d documents, report %.3f on %d", got, n, rep.MAE, rep.N)
	}
}

func TestClassifyHeadDataErrors(t *testing.T) {
	from := randomCheckpoint(t)
	for _, tc := range []struct {
		head, want string
		label      any
	}{
		{engine.HeadRegression, `row 1: field "y": "high" is not a finite number`, "high"},
		{engine.HeadMultilabel, `row 1: field "y": "[1,2]" is not a JSON array of label strings`, []int{1, 2}},
		{"ordinal", `unknown head kind "ordinal"`, "a"},
	} {
		recs := []map[string]any{{"text": "a", "y": 1}, {"text": "b", "y": tc.label}}
		path := writeRecords(t, recs)
		_, err := Classify(context.Background(), ClassifyOptions{From: from, Out: t.TempDir(), Data: []string{path}, TextField: "text", LabelField: "y",
			Head: tc.head, Tokenizer: byteTok{}, MaxTokens: 32, ValPermille: 500, HeadEpochs: 1, HeadLR: 0.05})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v; want it to name %s and say %q", tc.head, err, path, tc.want)
		}
	}
}

func TestBestThreshold(t *testing.T) {
	docs := []labeledDoc{{y: []float32{1}}, {y: []float32{1}}, {y: []float32{0}}, {y: []float32{0}}}
	// positives at 0.9 and 0.7, negatives at 0.4 and 0.2: any threshold in
	// (0.4, 0.7] is perfect; the midpoint 0.55 is chosen
	if th := bestThreshold([]float64{0.9, 0.7, 0.4, 0.2}, docs, 0, 2); math.Abs(float64(th)-0.55) > 1e-6 {
		t.Errorf("threshold %v, want 0.55", th)
	}
	// all probabilities tiny: the threshold stays ≥ 0.01
	if th := bestThreshold([]float64{0.003, 0.002, 0.001, 0.0005}, docs, 0, 2); th < 0.01 {
		t.Errorf("threshold %v below the 0.01 floor", th)
	}
}
