//go:build !linux

package engine

import "runtime"

// PinThread locks the calling goroutine to its OS thread; CPU affinity is
// only set on Linux.
func PinThread(cpu int) error {
	runtime.LockOSThread()
	return nil
}

// AllowedCPUs lists CPUs 0..NumCPU−1.
func AllowedCPUs() []int {
	out := make([]int, runtime.NumCPU())
	for i := range out {
		out[i] = i
	}
	return out
}
