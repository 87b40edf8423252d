package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestProbeMatchesEval: train probe's draw k is the copy probe a run with
// --seed k prints at its evals (same corpus frequencies, same weights), and
// its summary is the mean and standard error of the draws.
func TestProbeMatchesEval(t *testing.T) {
	out := t.TempDir()
	o := shortPretrain(out, 2) // seed 3, an eval at the end
	if err := Pretrain(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var last struct {
		Induct *float64 `json:"induct"`
		Shift  *float64 `json:"shift"`
	}
	for _, l := range splitLines(b) {
		var m struct {
			Induct *float64 `json:"induct"`
			Shift  *float64 `json:"shift"`
		}
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		if m.Induct != nil {
			last = m
		}
	}
	if last.Induct == nil {
		t.Fatal("no eval with probes in metrics.jsonl")
	}
	r, err := Probe(context.Background(), ProbeOptions{Checkpoint: out, Tokenizer: o.Tokenizer, Data: o.Data,
		TextField: o.TextField, Cache: filepath.Join(out, "tokcache"), ValPermille: o.ValPermille, Rows: 16, Seeds: 4}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Induct.PerSeed) != 4 || r.Items != 4*16*15 {
		t.Fatalf("report %+v", r)
	}
	if r.Induct.PerSeed[2] != *last.Induct || r.Shift.PerSeed[2] != *last.Shift {
		t.Fatalf("draw 3: induct %v shift %v; the run (seed 3) printed %v %v", r.Induct.PerSeed[2], r.Shift.PerSeed[2], *last.Induct, *last.Shift)
	}
	var mean float64
	for _, v := range r.Induct.PerSeed {
		mean += v / 4
	}
	var ss float64
	for _, v := range r.Induct.PerSeed {
		ss += (v - mean) * (v - mean)
	}
	if math.Abs(r.Induct.Mean-mean) > 1e-12 || math.Abs(r.Induct.StdErr-math.Sqrt(ss/3)/2) > 1e-12 {
		t.Fatalf("induct mean %v ± %v, want %v ± %v", r.Induct.Mean, r.Induct.StdErr, mean, math.Sqrt(ss/3)/2)
	}
	if _, err := Probe(context.Background(), ProbeOptions{Checkpoint: out, Tokenizer: o.Tokenizer, Data: o.Data, Rows: 0, Seeds: 1}, quietLog()); err == nil {
		t.Fatal("rows 0 accepted")
	}
}
