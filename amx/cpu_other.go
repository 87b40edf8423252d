//go:build !amd64 || purego

package amx

// detectCPU finds nothing: this build has no fast paths.
func detectCPU() {}

func cpuSupports(k Kernel) bool { return false }
