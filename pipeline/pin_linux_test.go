//go:build linux

package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/jobs"
	"golang.org/x/sys/unix"
)

// pinModel records, for every worker, the CPUs its thread may run on (read
// on that thread when the pipeline creates the worker) and its calls.
type pinModel struct {
	*fakeModel
	mu    sync.Mutex
	cpus  [][]int
	calls []*atomic.Int64
}

func (m *pinModel) NewWorker() (Worker, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	w, _ := m.fakeModel.NewWorker()
	n := new(atomic.Int64)
	m.mu.Lock()
	m.cpus = append(m.cpus, cpus)
	m.calls = append(m.calls, n)
	m.mu.Unlock()
	return &countWorker{Worker: w, n: n}, nil
}

type countWorker struct {
	Worker
	n *atomic.Int64
}

func (w *countWorker) Forward(docs [][]int32, want Want) ([]Output, error) {
	w.n.Add(1)
	return w.Worker.Forward(docs, want)
}

// pinnedThreads lists this process's threads allowed on exactly one CPU,
// except the main thread: a locked goroutine that exits on it leaves it
// parked for good (the runtime never ends the main thread), so it runs
// nothing else.
func pinnedThreads(t *testing.T) []string {
	t.Helper()
	status, _ := filepath.Glob("/proc/self/task/*/status")
	var out []string
	for _, p := range status {
		if filepath.Base(filepath.Dir(p)) == strconv.Itoa(os.Getpid()) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				if v = strings.TrimSpace(v); !strings.ContainsAny(v, ",-") {
					out = append(out, filepath.Base(filepath.Dir(p))+": cpu "+v)
				}
			}
		}
	}
	return out
}

// TestWorkersPinnedApart: with Pin, every engine worker runs on its own
// thread restricted to its own CPU (no two share one), every worker gets
// work, and the pinned threads end with the run instead of going back to
// the runtime, where they would run other goroutines on that one core.
func TestWorkersPinnedApart(t *testing.T) {
	cpus := engine.AllowedCPUs()
	workers := min(2, len(cpus))
	if before := pinnedThreads(t); len(cpus) > 1 && len(before) > 0 {
		t.Fatalf("threads already pinned before the run: %v", before)
	}
	src, shards := corpus(4, 40)
	cfg := testConfig(t, jobs.TaskScore, src, shards, filepath.Join(t.TempDir(), "out"))
	m := &pinModel{fakeModel: &fakeModel{delay: 2 * time.Millisecond}}
	cfg.Model, cfg.Workers, cfg.Pin, cfg.PackTok = m, workers, true, 64
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(m.cpus) != workers {
		t.Fatalf("%d workers created, want %d", len(m.cpus), workers)
	}
	var got []int
	for i, c := range m.cpus {
		if len(c) != 1 {
			t.Fatalf("worker %d may run on CPUs %v, want exactly one", i, c)
		}
		if n := m.calls[i].Load(); n == 0 {
			t.Errorf("worker %d (CPU %d) got no work", i, c[0])
		}
		got = append(got, c[0])
	}
	slices.Sort(got)
	if want := cpus[:workers]; !slices.Equal(got, want) {
		t.Fatalf("workers pinned to CPUs %v, want %v (one each)", got, want)
	}
	if len(cpus) == 1 {
		return // a one-CPU process: every thread is "pinned"
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := pinnedThreads(t)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pinned worker threads outlived the run: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
