//go:build amd64 && !purego

package amx

// cpuSupports is filled in by the CPU feature detection (CPUID, XCR0,
// arch_prctl for AMX). Until the fast kernels land, nothing but generic.
func cpuSupports(k Kernel) bool { return false }
