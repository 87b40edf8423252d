//go:build unix

package train

import "syscall"

// cpuSeconds is the process's user+system CPU time: on a shared machine
// tokens per CPU-second says more about the code than tokens per second.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
