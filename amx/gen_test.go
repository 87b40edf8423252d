package amx

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestGeneratedUpToDate: the checked-in assembly is what amx/_gen writes
// (edit the generator, then `go generate ./amx/`), and the generator's own
// encoding tests pass.
func TestGeneratedUpToDate(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	dir := t.TempDir()
	if out, err := exec.Command(goBin, "run", "./_gen", "-dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("go run ./_gen: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.s"))
	if len(files) < 3 {
		t.Fatalf("generator wrote %d files", len(files))
	}
	for _, f := range files {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Base(f))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing (%v): run go generate ./amx/", filepath.Base(f), err)
		}
	}
	if out, err := exec.Command(goBin, "test", "./_gen").CombinedOutput(); err != nil {
		t.Fatalf("go test ./_gen: %v\n%s", err, out)
	}
}
