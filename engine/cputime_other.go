//go:build !linux

package engine

import "time"

var start = time.Now()

// ThreadCPU falls back to the wall clock where thread CPU time is unavailable.
func ThreadCPU() time.Duration { return time.Since(start) }
