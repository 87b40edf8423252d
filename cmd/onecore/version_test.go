package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: --version prints the module version and Go toolchain, and
// the VCS revision (with +dirty for a modified tree) when the build
// recorded one.
func TestVersion(t *testing.T) {
	out, stderr, code := runBin(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(out, "onecore ") || !strings.Contains(out, " go1.") {
		t.Fatalf("--version: exit %d %q %s", code, out, stderr)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}}
	if got, want := versionString(bi), "v0.3.0 revision 0123456789ab+dirty (2026-01-02T03:04:05Z) go1.26.8"; got != want {
		t.Errorf("versionString = %q, want %q", got, want)
	}
	if got := versionString(&debug.BuildInfo{GoVersion: "go1.26.8"}); got != "(devel) go1.26.8" {
		t.Errorf("no module version, no VCS: %q", got)
	}
}
