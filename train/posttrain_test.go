package train

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// randomCheckpoint writes a freshly initialised small model.
func randomCheckpoint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c := smallConfig()
	p := NewParams[float32](ParamSpecs(c, 0))
	p.Init(c, 5)
	if err := SaveCheckpoint(dir, c, p, &Generation{VocabMask: []int32{200, 201}, StopIDs: []int32{eosID}}, ""); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeJSONL(t *testing.T, recs []map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.jsonl")
	var b strings.Builder
	for _, r := range recs {
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSFTLearnsAnswersAndStop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var recs []map[string]string
	for i := 0; i < 160; i++ {
		w := string(rune('a' + rng.IntN(6)))
		recs = append(recs, map[string]string{"prompt": fmt.Sprintf("say %s (%d):", w, i), "answer": strings.Repeat(w, 3)})
	}
	from := randomCheckpoint(t)
	out := t.TempDir()
	var logs strings.Builder
	err := SFT(context.Background(), SFTOptions{
		From: from, Out: out, Data: []string{writeJSONL(t, recs)}, PromptField: "prompt", AnswerField: "answer",
		Tokenizer: byteTok{}, Epochs: 4, SeqLen: 64, Batch: 4, LR: 3e-3, MinLR: 3e-4, Warmup: 10,
		Clip: 1, Seed: 1, ValPermille: 100, LogEvery: 1000, Samples: 10,
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(logs.String())
	var evals []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "msg=\"sft eval\"") {
			evals = append(evals, l)
		}
	}
	if len(evals) != 2 || !strings.Contains(evals[1], "exact=1 stopped=1") {
		t.Errorf("after SFT the model should answer every held-out prompt exactly and stop:\n%s", strings.Join(evals, "\n"))
	}
	_, _, gen, err := LoadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gen.VocabMask) != "[200 201]" {
		t.Errorf("vocab mask %v, want the source's [200 201]", gen.VocabMask)
	}
}

func TestClassifyHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	words := map[string][]string{"sport": {"ball", "goal", "team", "match"}, "food": {"bread", "soup", "rice", "salt"}, "tech": {"chip", "code", "disk", "wire"}}
	filler := []string{"the", "a", "of", "and", "to", "is"}
	var recs []map[string]string
	for i := 0; i < 150; i++ {
		label := []string{"sport", "food", "tech"}[i%3]
		var ws []string
		for j := 0; j < 10; j++ {
			if rng.IntN(3) == 0 {
				ws = append(ws, words[label][rng.IntN(4)])
			} else {
				ws = append(ws, filler[rng.IntN(len(filler))])
			}
		}
		recs = append(recs, map[string]string{"text": strings.Join(ws, " ") + fmt.Sprintf(" #%d", i), "label": label})
	}
	from := randomCheckpoint(t)
	for _, finetune := range []bool{false, true} {
		out := t.TempDir()
		rep, err := Classify(context.Background(), ClassifyOptions{
			From: from, Out: out, Data: []string{writeJSONL(t, recs)}, TextField: "text", LabelField: "label",
			Tokenizer: byteTok{}, MaxTokens: 128, ValPermille: 250, HeadEpochs: 300, HeadLR: 0.05,
			Finetune: finetune, Epochs: 6, LR: 5e-4, BatchTokens: 1024, Seed: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("finetune=%v: accuracy %.3f macro-F1 %.3f on %d", finetune, rep.Accuracy, rep.MacroF1, rep.N)
		// a random body already gives usable bag-of-embedding features;
		// fine-tuning it must do clearly better
		want := 0.7
		if finetune {
			want = 0.9
		}
		if rep.Accuracy < want || rep.MacroF1 < want {
			t.Errorf("finetune=%v: accuracy %.3f, macro-F1 %.3f; want ≥ %.2f", finetune, rep.Accuracy, rep.MacroF1, want)
		}
		_, p, gen, err := LoadCheckpoint(out)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(gen.Labels) != "[food sport tech]" || !p.Has("head.cls.w") {
			t.Errorf("checkpoint labels %v, head present %v", gen.Labels, p.Has("head.cls.w"))
		}
	}
}
