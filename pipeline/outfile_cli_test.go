package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutFileForeign: --out FILE refuses a file that this job and model did
// not write (another tool's, another job's) unless --force, while the rerun
// of the same command still recomputes and replaces its own file.
func TestOutFileForeign(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	writeShards(t, in, genDocs(8, 3), 1)
	out := filepath.Join(tmp, "res.jsonl")
	foreign := "not onecore's\n"
	os.WriteFile(out, []byte(foreign), 0o644)
	args := []string{"score", "--model", model, "--in", in, "--out", out, "--workers", "1", "--progress", "none"}
	if _, stderr, code := cliRun(t, nil, args...); code != 1 || !strings.Contains(stderr, "--force") {
		t.Fatalf("foreign file: exit %d, want 1 naming --force\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != foreign {
		t.Fatalf("foreign file replaced without --force")
	}
	if _, stderr, code := cliRun(t, nil, append(args, "--force")...); code != 0 {
		t.Fatalf("--force: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := cliRun(t, nil, args...); code != 0 {
		t.Fatalf("rerun of the same command: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(out); strings.Count(string(b), "\n") != 8 {
		t.Fatalf("rerun wrote %d rows, want 8", strings.Count(string(b), "\n"))
	}
	// Another job (a different --max-tokens) into the same file: refused.
	if _, stderr, code := cliRun(t, nil, append(args, "--max-tokens", "64")...); code != 1 || !strings.Contains(stderr, "different job") {
		t.Fatalf("other job: exit %d\n%s", code, stderr)
	}
	// The file edited by another tool after the run: refused too.
	os.WriteFile(out, []byte(foreign), 0o644)
	if _, stderr, code := cliRun(t, nil, args...); code != 1 {
		t.Fatalf("file changed by another tool: exit %d\n%s", code, stderr)
	}
}

// TestOutStdout: --out - streams JSON Lines to stdout, the summary goes to
// stderr (and --summary FILE); a format that cannot stream, --format bad and
// a bad --progress are usage errors reported before the model is loaded
// (a missing model would otherwise be exit 1).
func TestOutStdout(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	writeShards(t, in, genDocs(10, 4), 2)
	sumFile := filepath.Join(tmp, "sum.json")
	for _, out := range []string{"-", "/dev/stdout"} {
		stdout, stderr, code := cliRun(t, nil, "score", "--model", model, "--in", in, "--out", out, "--workers", "1", "--progress", "none", "--summary", sumFile)
		if code != 0 {
			t.Fatalf("--out %s: exit %d\n%s", out, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 10 {
			t.Fatalf("--out %s: %d lines on stdout, want 10:\n%s", out, len(lines), stdout)
		}
		for _, l := range lines {
			var row map[string]any
			if err := json.Unmarshal([]byte(l), &row); err != nil || row["mean_logprob"] == nil {
				t.Fatalf("--out %s: not a result row: %q (%v)", out, l, err)
			}
		}
		if !strings.Contains(stderr, `"rows_out": 10`) {
			t.Fatalf("--out %s: summary not on stderr:\n%s", out, stderr)
		}
		if b, err := os.ReadFile(sumFile); err != nil || !strings.Contains(string(b), `"rows_out": 10`) {
			t.Fatalf("--summary file: %v %s", err, b)
		}
	}
	nope := filepath.Join(tmp, "no-model")
	for _, c := range [][]string{
		{"--out", "-", "--format", "parquet"},
		{"--out", filepath.Join(tmp, "d/"), "--format", "bad"},
		{"--out", filepath.Join(tmp, "r.parquet"), "--format", "jsonl"},
		{"--out", filepath.Join(tmp, "d/"), "--progress", "sometimes"},
	} {
		_, stderr, code := cliRun(t, nil, append([]string{"score", "--model", nope, "--in", in}, c...)...)
		if code != 2 || strings.Contains(stderr, "no-model") {
			t.Errorf("%v: exit %d, want a usage error (2) before the model loads\n%s", c, code, stderr)
		}
	}
}
