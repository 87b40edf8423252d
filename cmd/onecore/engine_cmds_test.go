package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/engine"
)

const tinyConfig = `{"vocab_size": 300, "d_model": 32, "layers": ["lin","swa"], "swa_heads": 2, "swa_head_dim": 16,
 "window": 16, "lin_heads": 2, "d_state": 8, "lin_head_dim": 16, "d_ff": 48, "moe_layers": [1],
 "experts": 4, "top_k": 2, "d_ff_expert": 24, "route_block": 16}`

func TestInitModelAndForward(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(tinyConfig), 0o644)
	ck, ck2 := filepath.Join(dir, "ck"), filepath.Join(dir, "ck2")
	for _, d := range []string{ck, ck2} {
		if _, errs, code := runBin(t, nil, "init-model", "--config", cfg, "--seed", "3", "--out", d); code != 0 {
			t.Fatalf("init-model: exit %d: %s", code, errs)
		}
	}
	a, _ := os.ReadFile(filepath.Join(ck, engine.WeightsFile))
	b, _ := os.ReadFile(filepath.Join(ck2, engine.WeightsFile))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("init-model with the same seed wrote different weights")
	}
	// A packed stream: a document without <bos> at the start, then two more.
	ids := []int32{7, 8, 9, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 1, 299}
	js, _ := json.Marshal(ids)
	idsFile, out := filepath.Join(dir, "ids.json"), filepath.Join(dir, "logits.bin")
	os.WriteFile(idsFile, js, 0o644)
	if _, errs, code := runBin(t, nil, "forward", "--checkpoint", ck, "--ids-file", idsFile, "--out", out); code != 0 {
		t.Fatalf("forward: exit %d: %s", code, errs)
	}
	raw, _ := os.ReadFile(out)
	if len(raw) != len(ids)*300*4 {
		t.Fatalf("logits file has %d bytes, want %d", len(raw), len(ids)*300*4)
	}
	c, err := engine.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.NewModel(c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.NewInstance(m).Prefill(engine.SplitDocs(ids), engine.Want{Logits: engine.LogitsAll})
	if err != nil {
		t.Fatal(err)
	}
	var want []float32
	for _, r := range res {
		want = append(want, r.Logits...)
	}
	for i := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != want[i] {
			t.Fatalf("logit %d: file %v, engine %v", i, got, want[i])
		}
	}

	// Errors: bad ids, out-of-range ids, missing flags.
	os.WriteFile(idsFile, []byte(`[1, 300]`), 0o644)
	if _, errs, code := runBin(t, nil, "forward", "--checkpoint", ck, "--ids-file", idsFile, "--out", out); code != exitError || !strings.Contains(errs, "position 1") {
		t.Fatalf("out-of-range id: exit %d: %s", code, errs)
	}
	os.WriteFile(idsFile, []byte(`{"ids": [1]}`), 0o644)
	if _, errs, code := runBin(t, nil, "forward", "--checkpoint", ck, "--ids-file", idsFile, "--out", out); code != exitError || !strings.Contains(errs, "JSON array") {
		t.Fatalf("bad ids file: exit %d: %s", code, errs)
	}
	if _, _, code := runBin(t, nil, "forward", "--checkpoint", ck); code != exitUsage {
		t.Fatalf("missing flags: exit %d, want %d", code, exitUsage)
	}
	os.WriteFile(cfg, []byte(`{"d_model": 32, "bogus": 1}`), 0o644)
	if _, errs, code := runBin(t, nil, "init-model", "--config", cfg, "--out", filepath.Join(dir, "x")); code != exitError || !strings.Contains(errs, `unknown field "bogus"`) {
		t.Fatalf("bad config: exit %d: %s", code, errs)
	}
}

func TestBenchEngineJSON(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(tinyConfig), 0o644)
	out, errs, code := runBin(t, nil, "bench", "engine", "--config", cfg, "--tokens", "64", "--doc-len", "32", "--min-time", "1ms", "--json")
	if code != 0 {
		t.Fatalf("bench engine: exit %d: %s", code, errs)
	}
	var r struct {
		Prefill float64            `json:"prefill_tok_s"`
		Readout float64            `json:"prefill_readout_tok_s"`
		Decode  map[string]float64 `json:"decode_tok_s"`
		Kernel  string             `json:"kernel"`
		Break   map[string]float64 `json:"prefill_breakdown"`
		Peak    float64            `json:"kernel_peak_gflop_s"`
		Frac    float64            `json:"prefill_gemm_peak_fraction"`
		Attn    float64            `json:"prefill_attention_peak_fraction"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	// the fraction of the kernel's peak: positive, and below 1.5 even on a
	// busy machine (thread CPU time on both sides)
	if r.Prefill <= 0 || r.Readout <= 0 || r.Kernel == "" || len(r.Decode) != 4 || r.Decode["64"] <= 0 || r.Break["gemm"] <= 0 ||
		r.Peak <= 0 || !(r.Frac > 0 && r.Frac < 1.5) || !(r.Attn > 0 && r.Attn < 1.5) {
		t.Fatalf("bad bench result: %+v", r)
	}
	if _, _, code := runBin(t, nil, "bench", "engine"); code != exitUsage {
		t.Fatalf("bench engine without a model: exit %d, want %d", code, exitUsage)
	}
}
