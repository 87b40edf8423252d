package pipeline

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/onecore-dev/onecore/jobs"
)

// TestClassifyHeadKinds: a multilabel head writes labels (those whose
// sigmoid reaches the label's threshold) and probs; a regression head
// writes value, the head's raw output; each output carries its head kind
// in the schema and nothing of the others' columns. The expected values
// are recomputed here from the fake engine's logits.
func TestClassifyHeadKinds(t *testing.T) {
	labels := []string{"a", "b", "c"}
	thresholds := []float32{0.5, 0.9999, 0.99999999}
	const maxTokens = 128
	logitsOf := func(text string) []float64 {
		sum := int64(BOS)
		b := []byte(text)
		b = b[:min(len(b), maxTokens-1)] // <bos> + the first 127 byte tokens
		for _, c := range b {
			sum += int64(c) + 3
		}
		l := make([]float64, len(labels))
		for k := range l {
			l[k] = float64((sum + int64(k)*13) % 17)
		}
		return l
	}
	for _, tc := range []struct {
		head    string
		labels  []string
		columns []string
	}{
		{jobs.HeadMultilabel, labels, []string{"labels", "probs"}},
		{jobs.HeadRegression, []string{"stars"}, []string{"value"}},
	} {
		t.Run(tc.head, func(t *testing.T) {
			src, shards := corpus(2, 30)
			out := filepath.Join(t.TempDir(), "out")
			j := &jobs.Job{Task: jobs.TaskClassify, MaxTokens: maxTokens}
			if err := j.Normalize(); err != nil {
				t.Fatal(err)
			}
			m := &fakeModel{labels: tc.labels, head: tc.head}
			if tc.head == jobs.HeadMultilabel {
				m.thresholds = thresholds
			}
			cfg := Config{Job: j, Shards: shards, Source: src, Tokenizer: byteTok{}, Model: m,
				ModelID: "fake", Create: createJSON, Out: out, Format: "jsonl", Workers: 2, PackTok: 300}
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			texts := map[string]string{}
			for _, sh := range shards {
				for _, d := range src.shards[sh.Path] {
					texts[d.(Doc).ID] = d.(Doc).Text
				}
			}
			rows := readRows(t, out)
			if len(rows) != 60 {
				t.Fatalf("%d rows, want 60", len(rows))
			}
			seen := map[int]bool{}
			for _, r := range rows {
				for _, c := range []string{"label", "score", "probs", "labels", "value"} {
					if _, ok := r[c]; ok != slices.Contains(tc.columns, c) {
						t.Fatalf("column %q present=%v for a %s head: %v", c, ok, tc.head, r)
					}
				}
				lg := logitsOf(texts[r["id"].(string)])
				switch tc.head {
				case jobs.HeadRegression:
					if got := r["value"].(float64); got != lg[0] {
						t.Fatalf("%s: value %v, want the head output %v", r["id"], got, lg[0])
					}
				case jobs.HeadMultilabel:
					probs := r["probs"].([]any)
					var want []string
					for k, z := range lg {
						p := 1 / (1 + math.Exp(-z))
						if math.Abs(probs[k].(float64)-p) > 1e-6 {
							t.Fatalf("%s: probs[%d] %v, want sigmoid(%v) = %v", r["id"], k, probs[k], z, p)
						}
						if float32(p) >= thresholds[k] {
							want = append(want, labels[k])
						}
					}
					var got []string
					for _, l := range r["labels"].([]any) {
						got = append(got, l.(string))
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%s: labels %q, want %q (logits %v)", r["id"], got, want, lg)
					}
					seen[len(got)] = true
				}
			}
			if tc.head == jobs.HeadMultilabel && len(seen) < 2 {
				t.Errorf("every row has the same number of labels (%v): the test data does not exercise thresholds", seen)
			}
		})
	}
}
