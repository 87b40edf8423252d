package testenv

import (
	"syscall"
	"testing"
	"time"
)

// CPUMeter reports a benchmark's throughput per CPU-second of the whole
// process (user+sys), which stays comparable between variants of one run
// when the machine is shared and wall-clock MB/s mostly measure the queue.
type CPUMeter struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// StartCPU starts measuring process CPU time.
func StartCPU() CPUMeter { return CPUMeter{cpuNow()} }

// Report adds an "MB/cpu-s" metric for bytes processed per iteration.
func (m CPUMeter) Report(b *testing.B, bytes int64) {
	cpu := (cpuNow() - m.start).Seconds()
	if cpu > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/1e6/cpu, "MB/cpu-s")
	}
}
