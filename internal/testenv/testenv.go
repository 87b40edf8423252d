// Package testenv locates what tests need outside the Go toolchain: the
// repository root, the npm packages scripts/test-deps.sh installs, the
// shared data folder and the onecore binary built for integration tests.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// RepoRoot returns the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// TestDepsDir is where scripts/test-deps.sh installs the npm test
// dependencies: $ONECORE_TEST_DEPS, else $XDG_CACHE_HOME/onecore/test-deps
// (~/.cache/onecore/test-deps) — outside the source tree, shared by every
// clone of the repository on the machine.
func TestDepsDir() string {
	if d := os.Getenv("ONECORE_TEST_DEPS"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "onecore", "test-deps")
}

// NodeModules returns the node_modules folder scripts/test-deps.sh fills.
// A missing folder fails the test (never skips): run `make deps`.
func NodeModules(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(TestDepsDir(), "node", "node_modules")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("npm test dependencies missing (%v): run `make deps` (scripts/test-deps.sh)", err)
	}
	return dir
}

// LookPath finds a required external tool or fails the test.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: run `make deps` (scripts/test-deps.sh): %v", name, err)
	}
	return p
}

var (
	// binaryTags are the build tags Binary builds onecore with: those of
	// the test binary that matter to onecore (see tags_cloud.go).
	binaryTags string
	buildOnce  sync.Once
	binPath    string
	buildErr   error
)

// Binary builds cmd/onecore once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		sweepStaleBinaries()
		dir, err := os.MkdirTemp("", fmt.Sprintf("onecore-bin-%d-", os.Getpid()))
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "onecore")
		args := []string{"build", "-o", binPath}
		if binaryTags != "" {
			args = append(args, "-tags", binaryTags)
		}
		cmd := exec.Command("go", append(args, "./cmd/onecore")...)
		cmd.Dir = RepoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = &buildError{err, string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("building onecore: %v", buildErr)
	}
	return binPath
}

// sweepStaleBinaries removes binaries built by test processes that have
// exited: a test binary cannot clean up after itself (Binary has no hook at
// process exit), so each one sweeps its predecessors' folders instead.
func sweepStaleBinaries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "onecore-bin-*"))
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "onecore-bin-%d-", &pid); err != nil || pid <= 0 {
			continue // an older naming scheme or someone else's folder: leave it
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil || !procAvailable() {
			continue // still running (or no /proc to tell)
		}
		os.RemoveAll(d)
	}
}

func procAvailable() bool {
	_, err := os.Stat("/proc/self")
	return err == nil
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }
