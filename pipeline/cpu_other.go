//go:build !unix

package pipeline

import "time"

// processCPU is not available on this OS.
func processCPU() (time.Duration, bool) { return 0, false }
