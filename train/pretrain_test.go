package train

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// byteTok maps each byte b to id b+3 (after <pad>, <bos>, <eos>).
type byteTok struct{}

func (byteTok) Encode(s string) []int32 {
	ids := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		ids[i] = int32(s[i]) + 3
	}
	return ids
}

func (byteTok) Decode(ids []int32) string {
	b := make([]byte, 0, len(ids))
	for _, id := range ids {
		if id >= 3 && id < 259 {
			b = append(b, byte(id-3))
		}
	}
	return string(b)
}

func smallConfig() *Config {
	c := DefaultConfig()
	c.VocabSize = 259
	c.DModel = 64
	c.Layers = []string{"lin", "swa", "lin"}
	c.SWAHeads, c.SWAHeadDim, c.Window = 2, 32, 32
	c.LinHeads, c.DState, c.LinHeadDim = 2, 16, 16
	c.DFF = 128
	c.Experts, c.TopK, c.DFFExpert, c.RouteBlock = 8, 2, 32, 16
	return &c
}

func smallOptions(out string) PretrainOptions {
	return PretrainOptions{
		Config: smallConfig(), Tokenizer: byteTok{},
		Data: []string{"/usr/local/go/src/unicode/utf8", "/usr/local/go/src/strings", "/usr/local/go/src/sort"}, TextField: "text",
		Out: out, Seed: 3, Tokens: 64 * 2 * 250, SeqLen: 64, Batch: 2,
		LR: 3e-3, MinLR: 3e-4, Warmup: 20, WeightDecay: 0.01, Clip: 1, Negatives: 64, AuxCoef: 0.01,
		ValPermille: 100, ValTokens: 1024, EvalEvery: 64 * 2 * 125, CkptEvery: 64 * 2 * 50, LogEvery: 50, Generations: 1,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
}

type metricLine struct {
	Step    int64    `json:"step"`
	Loss    *float64 `json:"loss"`
	ValFlat *float64 `json:"val_flat"`
}

func readMetrics(t *testing.T, dir string) (loss map[int64]float64, val []float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	loss = map[int64]float64{}
	for _, l := range splitLines(b) {
		var m metricLine
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		if m.Loss != nil {
			loss[m.Step] = *m.Loss
		}
		if m.ValFlat != nil {
			val = append(val, *m.ValFlat)
		}
	}
	return loss, val
}

func TestPretrainLowersLossAndResumes(t *testing.T) {
	full := t.TempDir()
	if err := Pretrain(context.Background(), smallOptions(full)); err != nil {
		t.Fatal(err)
	}
	loss, val := readMetrics(t, full)
	first, last := avg(loss, 1, 20), avg(loss, 231, 250)
	t.Logf("train loss %.3f → %.3f, val_flat %v", first, last, val)
	if !(last < first-0.5) {
		t.Errorf("training loss did not fall enough: %.3f → %.3f", first, last)
	}
	if len(val) < 2 || !(val[len(val)-1] < val[0]-0.1) {
		t.Errorf("val_flat did not fall: %v", val)
	}

	// Killed after 70 steps (last checkpoint at step 50), then resumed for
	// 50 more steps: steps 1..100 must reproduce the uninterrupted run
	// bit for bit.
	part := t.TempDir()
	o := smallOptions(part)
	o.StopAfterSteps = 70
	if err := Pretrain(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	o.Resume, o.StopAfterSteps = true, 50
	if err := Pretrain(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got, _ := readMetrics(t, part)
	if len(got) != 100 {
		t.Fatalf("resumed run logged %d steps, want 100", len(got))
	}
	for s := int64(1); s <= 100; s++ {
		if got[s] != loss[s] {
			t.Fatalf("step %d: resumed loss %v, uninterrupted %v", s, got[s], loss[s])
		}
	}
	// --init-from starts from the trained weights: its first loss is far
	// below the first loss from scratch
	warm := smallOptions(t.TempDir())
	warm.InitFrom, warm.Tokens, warm.EvalEvery, warm.CkptEvery = full, 64*2*5, 0, 0
	if err := Pretrain(context.Background(), warm); err != nil {
		t.Fatal(err)
	}
	wl, _ := readMetrics(t, warm.Out)
	if !(wl[1] < loss[1]-1) {
		t.Errorf("--init-from: first loss %.3f, from scratch %.3f", wl[1], loss[1])
	}

	// resuming with different options is refused
	o.LR *= 2
	if err := Pretrain(context.Background(), o); err == nil {
		t.Error("resume with a different --lr succeeded")
	}
}

func avg(m map[int64]float64, a, b int64) float64 {
	var s float64
	for i := a; i <= b; i++ {
		s += m[i]
	}
	return s / float64(b-a+1)
}
