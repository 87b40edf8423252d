package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU is the calling thread's CPU time. On a shared machine it
// measures what one core does, whatever else runs (the goroutine must be
// locked to its thread for the difference of two readings to mean anything).
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ts.Nano())
}
