package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestExtractReadmeExample runs the README's end-to-end extraction example
// as a newcomer would: bench/extract/prep.py labels this machine's DEP-5
// copyright files (Upstream-Contact, or null), `train extract` trains the
// narrow 2-layer head on them, `extract` answers the held-out files with
// the gold kept beside, and `eval` scores them. It checks each step works
// on real files and that the head learned the field (exact match ≥ 0.8 on
// files it never saw; the README quotes 1.0), so the example cannot rot.
func TestExtractReadmeExample(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a span head (~20 s)")
	}
	testenv.LookPath(t, "python3")
	root := testenv.RepoRoot()
	bin := testenv.Binary(t)
	work := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("python3", filepath.Join(root, "bench/extract/prep.py"), "--out", "ex", "--families", "upstream_contact")
	var manifest struct {
		Families map[string]map[string]struct{ Records, Absent int }
	}
	b, err := os.ReadFile(filepath.Join(work, "ex", "manifest.json"))
	if err != nil || json.Unmarshal(b, &manifest) != nil {
		t.Fatalf("manifest: %v", err)
	}
	fam := manifest.Families["upstream_contact"]
	if fam["train"].Records < 50 || fam["test"].Records < 10 || fam["test"].Absent == 0 {
		t.Fatalf("prep.py found too few DEP-5 copyright files under /usr/share/doc (%+v): the example needs Debian's docs installed", fam)
	}
	run(bin, "train", "extract", "--from", "base-small", "--layers", "2", "--data", "ex/upstream_contact.train.jsonl", "--out", "contact/")
	run(bin, "extract", "--task", "extract", "--model", "contact/", "--question-field", "question",
		"--in", "ex/upstream_contact.test.jsonl", "--keep", "answer:gold", "--out", "check.parquet", "--progress", "none")
	run(bin, "eval", "--pred", "check.parquet", "--gold-column", "gold", "--json", "m.json")
	var m extractMetrics
	if b, err = os.ReadFile(filepath.Join(work, "m.json")); err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("eval --json: %v: %s", err, b)
	}
	t.Logf("%d train, %d test records: exact match %.3f, abstention F1 %.3f", fam["train"].Records, m.Rows, m.ExactMatch, m.AbstainF1)
	if m.Rows != fam["test"].Records || m.GoldAbsent != fam["test"].Absent {
		t.Errorf("eval scored %d rows (%d absent), prep wrote %d (%d absent)", m.Rows, m.GoldAbsent, fam["test"].Records, fam["test"].Absent)
	}
	if m.ExactMatch < 0.8 {
		t.Errorf("exact match %.3f on held-out copyright files, want ≥ 0.8", m.ExactMatch)
	}
	show := run(bin, "show", "check.parquet", "--columns", "id,answer,gold,abstained", "--limit", "4")
	if !strings.Contains(show, "upstream_contact:copyright:") {
		t.Errorf("show printed no rows:\n%s", show)
	}
}
