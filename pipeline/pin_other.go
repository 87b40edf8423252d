//go:build !linux

package pipeline

import "runtime"

func pinToCPU(int) error { return nil }

func usableCPUs() int { return runtime.NumCPU() }
