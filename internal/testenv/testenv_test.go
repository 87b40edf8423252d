package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestSweepStaleBinaries(t *testing.T) {
	if !procAvailable() {
		t.Skip("needs /proc to tell live processes") // non-Linux developer machines only
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		d := filepath.Join(os.TempDir(), name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	stale := mk(fmt.Sprintf("onecore-bin-%d-sweeptest", dead.Process.Pid))
	live := mk(fmt.Sprintf("onecore-bin-%d-sweeptest", os.Getpid()))
	foreign := mk("onecore-bin-notapid")
	sweepStaleBinaries()
	for _, c := range []struct {
		dir  string
		kept bool
	}{{stale, false}, {live, true}, {foreign, true}} {
		_, err := os.Stat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept=%v, want %v", filepath.Base(c.dir), kept, c.kept)
		}
	}
}
