//go:build !linux

package engine

import "time"

var start = time.Now()

// threadCPU falls back to the wall clock where thread CPU time is unavailable.
func threadCPU() time.Duration { return time.Since(start) }
