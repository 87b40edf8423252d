//go:build unix

package pipeline

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) every thread of this process
// has used so far; ok is false where it cannot be read.
func processCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
