package main

import (
	"fmt"
	"runtime/debug"
)

func init() {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rootCmd.Version = versionString(bi)
	} else {
		rootCmd.Version = "unknown (built without module information)"
	}
	rootCmd.SetVersionTemplate("onecore {{.Version}}\n")
}

// versionString is what --version prints: the module version ("(devel)"
// for a build from a checkout, vX.Y.Z for go install …@vX.Y.Z), the VCS
// revision and whether the tree had local changes (when the build recorded
// them: go build -buildvcs=false does not), and the Go toolchain, which is
// what a bug report needs to tell two binaries apart.
func versionString(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified, when string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			when = s.Value
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " revision " + rev
		if modified == "true" {
			v += "+dirty"
		}
		if when != "" {
			v += " (" + when + ")"
		}
	}
	return fmt.Sprintf("%s %s", v, bi.GoVersion)
}
