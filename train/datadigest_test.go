package train

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestResumeRefusesChangedData: every trainer, stopped after a few steps,
// refuses to resume once a record of its data file was edited in place
// (same path, so the options' fingerprint cannot tell), resumes when the
// file is rewritten with its original content (a new mtime, the same
// data), and resumes a state written before the digest existed.
func TestResumeRefusesChangedData(t *testing.T) {
	from := randomCheckpoint(t)
	var docs []map[string]string
	for i := 0; i < 60; i++ {
		label := []string{"x", "y", "z"}[i%3]
		docs = append(docs, map[string]string{"text": strings.Repeat(label+" q ", 2+i%9) + fmt.Sprint(i), "label": label,
			"prompt": fmt.Sprintf("say %s (%d):", label, i), "answer": strings.Repeat(label, 3)})
	}
	spans := codeRecords(60, 5)
	cases := []struct {
		name string
		data func(t *testing.T) string
		run  func(data, out string, resume bool) error
	}{
		{"pretrain", func(t *testing.T) string { return writeJSONL(t, docs) }, func(data, out string, resume bool) error {
			o := smallOptions(out)
			o.Data, o.Log, o.EvalEvery, o.Generations = []string{data}, quietLog(), 0, 0
			o.CkptEvery, o.StopAfterSteps, o.Resume = 64*2*2, 3, resume
			return Pretrain(context.Background(), o)
		}},
		{"sft", func(t *testing.T) string { return writeJSONL(t, docs) }, func(data, out string, resume bool) error {
			o := SFTOptions{From: from, Out: out, Data: []string{data}, PromptField: "prompt", AnswerField: "answer",
				Tokenizer: byteTok{}, Epochs: 1, SeqLen: 64, Batch: 3, LR: 3e-3, MinLR: 3e-4, Warmup: 1, Clip: 1, Seed: 1,
				ValPermille: 100, Workers: 1, CkptEvery: 2, StopAfterSteps: 3, Resume: resume, Log: quietLog()}
			return SFT(context.Background(), o)
		}},
		{"classify", func(t *testing.T) string { return writeJSONL(t, docs) }, func(data, out string, resume bool) error {
			o := ClassifyOptions{From: from, Out: out, Data: []string{data}, TextField: "text", LabelField: "label",
				Tokenizer: byteTok{}, MaxTokens: 40, ValPermille: 200, HeadEpochs: 2, HeadLR: 0.05, Finetune: true, Epochs: 1,
				LR: 5e-4, BatchTokens: 200, Seed: 1, Workers: 1, CkptEvery: 2, StopAfterSteps: 3, Resume: resume, Log: quietLog()}
			_, err := Classify(context.Background(), o)
			return err
		}},
		{"extract", func(t *testing.T) string { return writeRecords(t, spans) }, func(data, out string, resume bool) error {
			o := extractTestOptions(from, out, data)
			o.Epochs, o.Workers, o.Samples, o.Log = 1, 1, 0, quietLog()
			o.CkptEvery, o.StopAfterSteps, o.Resume = 2, 3, resume
			_, err := Extract(context.Background(), o)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data(t)
			orig, err := os.ReadFile(data)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "run")
			if err := tc.run(data, out, false); err != nil {
				t.Fatal(err)
			}
			state := filepath.Join(out, "train_state", "state.json")
			var st TrainState
			if b, err := os.ReadFile(state); err != nil || json.Unmarshal(b, &st) != nil || st.Data == "" {
				t.Fatalf("state.json carries no data digest: %+v %v", st, err)
			}
			// one record edited in place: the 2nd line's text and prompt
			// gain a character
			lines := strings.SplitN(string(orig), "\n", 3)
			lines[1] = strings.Replace(lines[1], `"text":"`, `"text":"Q`, 1)
			lines[1] = strings.Replace(lines[1], `"prompt":"`, `"prompt":"Q`, 1)
			if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			err = tc.run(data, out, true)
			if err == nil || !strings.Contains(err.Error(), "training data differ") {
				t.Fatalf("resume on edited data: %v, want a refusal", err)
			}
			// the same content written again (a new mtime): resumes
			if err := os.WriteFile(data, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.run(data, out, true); err != nil {
				t.Fatalf("resume on the original data: %v", err)
			}
			// a state from before the digest existed resumes, and gets one
			b, _ := os.ReadFile(state)
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			delete(m, "data")
			b, _ = json.Marshal(m)
			if err := os.WriteFile(state, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.run(data, out, true); err != nil {
				t.Fatalf("resume of a state without a digest: %v", err)
			}
		})
	}
}

// TestDataDigest: field boundaries and every number count, across the
// buffer's chunk boundary.
func TestDataDigest(t *testing.T) {
	of := func(f func(d *dataDigest)) string {
		d := newDataDigest()
		f(d)
		return d.String()
	}
	if of(func(d *dataDigest) { d.add("ab", "c") }) == of(func(d *dataDigest) { d.add("a", "bc") }) {
		t.Error(`("ab", "c") and ("a", "bc") digest alike`)
	}
	if of(func(d *dataDigest) { d.add("a"); d.add("b") }) == of(func(d *dataDigest) { d.add("a", "b") }) {
		t.Error("two records and one record of two fields digest alike")
	}
	nums := make([]int64, 1300)
	for i := range nums {
		nums[i] = int64(i * 7)
	}
	base := of(func(d *dataDigest) { d.addInts(nums...) })
	if base != of(func(d *dataDigest) { d.addInts(slices.Clone(nums)...) }) {
		t.Error("the same numbers digest differently")
	}
	for _, i := range []int{0, 511, 512, 1023, 1299} {
		c := slices.Clone(nums)
		c[i]++
		if of(func(d *dataDigest) { d.addInts(c...) }) == base {
			t.Errorf("changing number %d leaves the digest", i)
		}
	}
	if of(func(d *dataDigest) { d.addInts(nums[:600]...); d.addInts(nums[600:]...) }) == base {
		t.Error("one list and the same numbers in two lists digest alike")
	}
}
