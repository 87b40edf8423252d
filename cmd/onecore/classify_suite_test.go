package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestClassifySuiteSmoke runs the classification suite (bench/classify:
// prep.py, then run.sh) end to end on a small slice of two of its real
// tasks — SpamAssassin and udhr language identification — with the
// systems the full run has: fastText with defaults and the tutorial's
// settings (autotune is left out: it can run far past its budget), onecore
// fine-tuned from the bundled base, and for langid CLD2 and CLD3. It checks
// that each system leaves a result row with sane metrics, so the suite
// keeps running as the trainer, the CLI and the data change; the numbers
// themselves are the benchmark's business, not this test's.
func TestClassifySuiteSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains fastText and a onecore classifier (~1 min)")
	}
	for _, tool := range []string{"fasttext", "python3", "g++", "node", "taskset"} {
		testenv.LookPath(t, tool)
	}
	if _, err := os.Stat("/usr/include/cld2/public/compact_lang_det.h"); err != nil {
		t.Fatalf("libcld2-dev missing: run `make deps` (scripts/test-deps.sh): %v", err)
	}
	root := testenv.RepoRoot()
	modules := testenv.NodeModules(t)
	work := t.TempDir()
	bin := testenv.Binary(t)

	prep := exec.Command("python3", filepath.Join(root, "bench/classify/prep.py"), "--out", filepath.Join(work, "data"),
		"--tasks", "spam,langid", "--limit", "160", "--npm", modules)
	if out, err := prep.CombinedOutput(); err != nil {
		t.Fatalf("prep.py: %v\n%s", err, out)
	}
	run := exec.Command("bash", filepath.Join(root, "bench/classify/run.sh"), "spam,langid")
	run.Env = append(os.Environ(), "WORK="+work, "ONECORE="+bin, "BASE=base", "CPU=0", "TRAIN_CPUS=0",
		"AUTOTUNE=0", "MAX_TOKENS=64", "NODE_MODULES="+modules)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	t.Logf("run.sh:\n%s", out)

	f, err := os.Open(filepath.Join(work, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Task, System string
			Acc          float64 `json:"accuracy"`
			F1           float64 `json:"macro_f1"`
			DocsPerS     float64 `json:"docs_per_s"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results.jsonl: %v: %s", err, sc.Text())
		}
		if r.Acc < 0 || r.Acc > 1 || r.F1 < 0 || r.F1 > 1 || r.DocsPerS <= 0 {
			t.Errorf("%s/%s: accuracy %v, macro-F1 %v, docs/s %v out of range", r.Task, r.System, r.Acc, r.F1, r.DocsPerS)
		}
		// SpamAssassin is easy even from 160 messages: a broken pipeline
		// (labels misaligned, a head that predicts one class) shows here
		if r.Task == "spam" && r.Acc < 0.7 {
			t.Errorf("spam/%s: accuracy %.3f, want ≥ 0.7", r.System, r.Acc)
		}
		got[r.Task+"/"+r.System] = true
	}
	want := []string{"spam/fasttext-default", "spam/fasttext-tutorial", "spam/onecore",
		"langid/fasttext-default", "langid/fasttext-tutorial", "langid/onecore",
		"langid/cld2", "langid/cld3"}
	for _, w := range want {
		if !got[w] {
			keys := make([]string, 0, len(got))
			for k := range got {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			t.Errorf("no result row for %s (have %s)", w, strings.Join(keys, ", "))
		}
	}
	if known, err := os.ReadFile(filepath.Join(work, "langid", "known.txt")); err != nil || !strings.Contains(string(known), "cld2 knows") {
		t.Errorf("langid/known.txt: %v %q", err, known)
	}
}
