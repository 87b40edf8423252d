package pipeline

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestCLILinksAndPipes: through the CLI, a linked subdirectory inside --in
// is read, a dangling link and a named pipe in it are skipped with a
// warning on stderr, and a named pipe passed as --in is refused at once
// with a message naming it (issue 19.7: the linked directory and the
// dangling link were skipped without a word, and the pipe, with no writer,
// blocked the run forever).
func TestCLILinksAndPipes(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in, ext := filepath.Join(tmp, "in"), filepath.Join(tmp, "ext")
	docs := genDocs(60, 19)
	writeShards(t, in, docs[:30], 2)
	writeShards(t, ext, docs[30:], 2)
	for _, err := range []error{
		os.Symlink(ext, filepath.Join(in, "linked")),
		os.Symlink("missing.jsonl", filepath.Join(in, "gone.jsonl")),
		syscall.Mkfifo(filepath.Join(in, "pipe.jsonl"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(tmp, "out")
	_, stderr, code := cliRun(t, nil, "score", "--model", model, "--in", in, "--out", out+"/", "--workers", "1", "--progress", "none")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var want []string
	for _, d := range docs {
		want = append(want, d.id)
	}
	sort.Strings(want)
	if got := partIDs(t, out, "parquet"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%d rows, want the %d of in/ and of the linked ext/ exactly once", len(got), len(want))
	}
	for _, w := range []string{
		`path=` + filepath.Join(in, "gone.jsonl") + ` reason="dangling symbolic link (-> missing.jsonl): skipped"`,
		`path=` + filepath.Join(in, "pipe.jsonl") + ` reason="not a regular file (named pipe): skipped"`,
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %s:\n%s", w, stderr)
		}
	}

	// Named explicitly, the pipe is refused: no hang waiting for a writer.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Binary(t), "score", "--model", model, "--in", filepath.Join(in, "pipe.jsonl"), "--out", filepath.Join(tmp, "out2")+"/")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	code = exitStatus(cmd.Run())
	if ctx.Err() != nil {
		t.Fatalf("--in a named pipe: still running after 20s (blocked opening it?)\n%s", errb.String())
	}
	if wantMsg := `input "` + filepath.Join(in, "pipe.jsonl") + `": not a regular file (named pipe)`; code != 1 || !strings.Contains(errb.String(), wantMsg) {
		t.Fatalf("--in a named pipe: exit %d, want 1 and %q\n%s", code, wantMsg, errb.String())
	}
}
