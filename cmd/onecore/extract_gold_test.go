package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestExtractGoldRules runs bench/extract/prep_test.py: table tests of the
// e-mail signature family's gold rules (which name signs a body, which
// bodies are unsigned) on hand-written bodies. The benchmark's numbers are
// only as good as these rules, and each has been wrong once.
func TestExtractGoldRules(t *testing.T) {
	testenv.LookPath(t, "python3")
	cmd := exec.Command("python3", filepath.Join(testenv.RepoRoot(), "bench/extract/prep_test.py"), "-v")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("prep_test.py: %v\n%s", err, out)
	}
}
