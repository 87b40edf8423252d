package engine

import (
	"runtime"
	"slices"
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

// TestAllowedCPUsIgnoresPinnedThreads: a thread pinned by PinThread and
// then unlocked goes back to the scheduler still pinned; AllowedCPUs must
// keep reporting the process's CPUs, or every later worker lands on one core.
func TestAllowedCPUsIgnoresPinnedThreads(t *testing.T) {
	want := AllowedCPUs()
	for range 8 { // leave several pinned threads behind in the pool
		done := make(chan []int)
		go func() {
			PinThread(want[0])
			runtime.UnlockOSThread()
			done <- AllowedCPUs()
		}()
		if got := <-done; !slices.Equal(got, want) {
			t.Fatalf("AllowedCPUs on a pinned thread = %v, want %v", got, want)
		}
	}
}
