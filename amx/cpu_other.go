//go:build !amd64 || purego

package amx

func cpuSupports(k Kernel) bool { return false }
