package train

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckpointNonFiniteRefused: the checkpoints train reads refuse a NaN
// or ±Inf weight with the tensor and element named (issue 19.12) —
// LoadCheckpoint, behind --from (sft, classify) and --init-from, and the
// train_state/ master weights and AdamW moments behind --resume.
func TestCheckpointNonFiniteRefused(t *testing.T) {
	c := smallConfig()
	fresh := func() *Params[float32] {
		p := NewParams[float32](ParamSpecs(c, 0))
		p.Init(c, 1)
		return p
	}

	p := fresh()
	p.W("layers.0.lin.wk")[70] = float32(math.NaN())
	dir := filepath.Join(t.TempDir(), "ck")
	if err := SaveCheckpoint(dir, c, p, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := LoadCheckpoint(dir); err == nil || !strings.Contains(err.Error(), `tensor "layers.0.lin.wk": element 70 (index [2 6] of shape [64 32]) is NaN`) {
		t.Errorf("LoadCheckpoint with a NaN weight: %v", err)
	}

	for _, tc := range []struct {
		what string
		poke func(p *Params[float32], opt *AdamW)
		want string
	}{
		{"master", func(p *Params[float32], _ *AdamW) { p.W("norm.g")[5] = float32(math.Inf(1)) }, `tensor "master.norm.g": element 5 (index [5] of shape [64]) is +Inf`},
		{"adam_v", func(p *Params[float32], opt *AdamW) { opt.V[p.Off["emb"]+3] = float32(math.NaN()) }, `tensor "adam_v.emb": element 3 (index [0 3] of shape [259 64]) is NaN`},
	} {
		p := fresh()
		opt := NewAdamW(p, 0.01)
		tc.poke(p, opt)
		out := t.TempDir()
		if err := saveTrainState(out, p, opt, &TrainState{Step: 7}); err != nil {
			t.Fatal(err)
		}
		p2 := fresh()
		_, err := loadTrainState(out, p2, NewAdamW(p2, 0.01))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "optimizer.safetensors") {
			t.Errorf("--resume with a non-finite %s: %v\nwant %q", tc.what, err, tc.want)
		}
	}
}

// TestTokenizerMovedDuringRun: a run keeps saving checkpoints after the
// tokenizer it was started with is moved away (a checkout renamed
// models/default; the base-model run died at its next checkpoint):
// pretrain pins a copy in its directory at the start, and a save whose
// source is gone keeps the copy an earlier save made.
func TestTokenizerMovedDuringRun(t *testing.T) {
	c := smallConfig()
	p := NewParams[float32](ParamSpecs(c, 0))
	p.Init(c, 1)
	src := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(src, []byte(`{"tok":1}`), 0o644)
	out := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(out, 0o755)
	pinned, err := pinTokenizer(out, src)
	if err != nil || pinned != filepath.Join(out, "tokenizer.json") {
		t.Fatalf("pinTokenizer = %q, %v", pinned, err)
	}
	os.Remove(src)
	if err := SaveCheckpoint(out, c, p, nil, pinned); err != nil {
		t.Fatalf("save with the pinned copy: %v", err)
	}
	if err := SaveCheckpoint(out, c, p, nil, src); err != nil {
		t.Fatalf("save after the source moved: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "tokenizer.json")); string(b) != `{"tok":1}` {
		t.Fatalf("tokenizer in the run: %q", b)
	}
	if err := SaveCheckpoint(filepath.Join(t.TempDir(), "fresh"), c, p, nil, src); err == nil {
		t.Fatal("a first save without any tokenizer succeeded")
	}
}
