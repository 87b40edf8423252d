package engine

import (
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// PinThread locks the calling goroutine to its OS thread and, when cpu ≥ 0,
// restricts that thread to CPU cpu (sched_setaffinity). Call it at the top
// of the goroutine that owns an Instance; the lock lasts until the
// goroutine calls runtime.UnlockOSThread or exits. An affinity error (e.g.
// the CPU is outside the cgroup's cpuset) is returned with the thread
// still locked, so callers may log it and carry on unpinned.
func PinThread(cpu int) error {
	runtime.LockOSThread()
	if cpu < 0 {
		return nil
	}
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}

// AllowedCPUs lists the CPUs this process may run on (its affinity mask
// when the package was initialised), the natural set of cores to give one
// Instance each. It is read once at start-up because sched_getaffinity
// reports the calling thread's mask, and a thread that PinThread pinned and
// that was later unlocked may run any goroutine afterwards.
func AllowedCPUs() []int { return slices.Clone(processCPUs) }

var processCPUs = readAllowedCPUs()

func readAllowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() == 0 {
		out := make([]int, runtime.NumCPU())
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}
