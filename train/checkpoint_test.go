package train

import (
	"math"
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
