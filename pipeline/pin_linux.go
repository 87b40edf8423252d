package pipeline

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// pinToCPU pins the calling (locked) thread to the i-th CPU this process may
// use, so each engine worker keeps its core and its caches.
func pinToCPU(i int) error {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return err
	}
	var cpus []int
	for c := 0; c < 1024 && len(cpus) < allowed.Count(); c++ {
		if allowed.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	set.Set(cpus[i%len(cpus)])
	return unix.SchedSetaffinity(0, &set) // pid 0: this thread
}

// usableCPUs is the number of CPUs this process may run on.
func usableCPUs() int {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err == nil && allowed.Count() > 0 {
		return allowed.Count()
	}
	return runtime.NumCPU()
}
