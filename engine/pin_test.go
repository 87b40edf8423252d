package engine

import (
	"runtime"
	"testing"
)

func TestPinThread(t *testing.T) {
	cpus := AllowedCPUs()
	if len(cpus) == 0 {
		t.Fatal("no allowed CPUs")
	}
	done := make(chan error)
	go func() {
		defer runtime.UnlockOSThread()
		done <- PinThread(cpus[len(cpus)-1])
	}()
	if err := <-done; err != nil {
		t.Fatalf("pinning to an allowed CPU: %v", err)
	}
}
