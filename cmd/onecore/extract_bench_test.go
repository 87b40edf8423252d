package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestExtractBenchSmoke runs the extraction benchmark's script
// (bench/extract/run.sh) end to end on a small generated fortune_author
// family: the span head from the bundled base, the regex baseline, and
// generative SFT decoded free, --extractive and --extractive --window.
// Some fortunes are padded to several windows. It checks every system
// leaves a result row with sane metrics, so the script keeps running as the
// trainers and the CLI change; the numbers are the benchmark's business.
// The span head is trained with --layers 3, and bench/speed.sh then times
// it without and with --int8 (VARIANTS).
func TestExtractBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a span head and an SFT model (~1 min)")
	}
	for _, tool := range []string{"python3", "taskset"} {
		testenv.LookPath(t, tool)
	}
	root := testenv.RepoRoot()
	data, out := t.TempDir(), t.TempDir()
	rng := rand.New(rand.NewPCG(8, 9))
	authors := []string{"Mark Twain", "Oscar Wilde", "Ada Lovelace", "Grace Hopper", "Alan Kay", "Ursula K. Le Guin"}
	sayings := []string{"The best way to predict the future is to invent it.", "Simplicity is prerequisite for reliability.",
		"A ship in port is safe, but that is not what ships are built for.", "Premature optimization is the root of all evil."}
	questions := []string{"Who is quoted?", "Who said this?", "Who is the author of this fortune?"}
	write := func(name string, n int) {
		var b strings.Builder
		for i := 0; i < n; i++ {
			text := sayings[rng.IntN(len(sayings))]
			if rng.IntN(4) == 0 { // long: several windows of the SFT decoding
				text = strings.Repeat(text+" ", 12)
			}
			var answer any
			if rng.IntN(5) > 0 {
				a := authors[rng.IntN(len(authors))]
				text += "\n\t\t-- " + a
				answer = a
			}
			rec, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%s-%d", name, i), "family": "fortune_author",
				"text": text, "question": questions[rng.IntN(len(questions))], "answer": answer})
			b.Write(rec)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(data, "fortune_author."+name+".jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("train", 80)
	write("test", 24)

	run := exec.Command("bash", filepath.Join(root, "bench/extract/run.sh"), data, out)
	run.Env = append(os.Environ(), "ONECORE="+testenv.Binary(t), "BASE=base", "WORKERS=1", "CORE=0",
		"TRAIN_FLAGS=--epochs 1 --layers 3", "SFT=1", "SFT_FLAGS=--epochs 1", "SFT_EXTRACTIVE=1", "SFT_WINDOW=32", "INT8=1")
	b, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, b)
	}
	t.Logf("run.sh:\n%s", b)
	tsv, err := os.ReadFile(filepath.Join(out, "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(tsv)), "\n")
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 10 {
			t.Fatalf("results.tsv row %q: %d fields", l, len(f))
		}
		if f[0] != "fortune_author" || f[2] != "24" {
			t.Errorf("row %q: family or records wrong", l)
		}
		for _, i := range []int{3, 4, 5, 6, 7} {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil || v < 0 || v > 1 {
				t.Errorf("row %q: metric %d = %q", l, i, f[i])
			}
		}
		if v, err := strconv.ParseFloat(f[8], 64); err != nil || v <= 0 {
			t.Errorf("row %q: docs/s %q", l, f[8])
		}
		got[f[1]] = true
	}
	for _, sys := range []string{"span_head", "span_head_int8", "regex", "generative_sft", "generative_sft_extractive", "generative_sft_window"} {
		if !got[sys] {
			t.Errorf("no %s row in results.tsv:\n%s", sys, tsv)
		}
	}

	model := filepath.Join(out, "fortune_author", "model")
	speed := exec.Command("bash", filepath.Join(root, "bench/speed.sh"), "extract", filepath.Join(data, "fortune_author.test.jsonl"), model)
	speed.Env = append(os.Environ(), "ONECORE="+testenv.Binary(t), "CORE=0", "ROUNDS=1", "VARIANTS=|--int8")
	b, err = speed.Output()
	if err != nil {
		t.Fatalf("speed.sh: %v\n%s", err, b)
	}
	t.Logf("speed.sh:\n%s", b)
	rows := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(rows) != 3 || rows[0] != "model\tflags\tlayers\trows\tdocs_per_s\ttok_per_s\tratio" {
		t.Fatalf("speed.sh output:\n%s", b)
	}
	for i, l := range rows[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 7 || f[0] != model || f[1] != []string{"-", "--int8"}[i] || f[2] != "3" || f[3] != "24" {
			t.Errorf("speed.sh row %q: want the 3-layer model over 24 rows, without then with --int8", l)
		}
		if v, err := strconv.ParseFloat(f[4], 64); err != nil || v <= 0 {
			t.Errorf("speed.sh row %q: docs/s %q", l, f[4])
		}
	}
	if f := strings.Split(rows[1], "\t"); f[len(f)-1] != "1.00" {
		t.Errorf("speed.sh: the first model's ratio %q, want 1.00", f[len(f)-1])
	}
}
