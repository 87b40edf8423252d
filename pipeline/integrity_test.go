package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/jobs"
)

// TestFailedShardsRetried: a shard whose file cannot be opened or read to
// the end is not marked done (it was, as a "bad file", and a rerun after
// the file came back skipped it for good); the run reports it, and the
// next run retries it. A single output file is assembled only once every
// shard is done.
func TestFailedShardsRetried(t *testing.T) {
	for _, merged := range []bool{false, true} {
		t.Run(fmt.Sprintf("merged=%v", merged), func(t *testing.T) {
			src, shards := corpus(3, 20)
			good := src.shards["in/s1.jsonl"]
			// s1 breaks after 10 rows (a truncated stream), s2 cannot be opened (moved away)
			src.shards["in/s1.jsonl"] = append(good[:10:10], &FileError{File: "in/s1.jsonl", Row: 10, Err: errors.New("unexpected EOF")})
			moved := src.shards["in/s2.jsonl"]
			delete(src.shards, "in/s2.jsonl")
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if merged {
				out = filepath.Join(dir, "out.jsonl")
			}
			cfg := testConfig(t, jobs.TaskScore, src, shards, out)
			sum, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if sum.ShardsFailed != 2 || len(sum.Failed) != 2 || sum.ShardsDone != 1 || sum.Complete() || sum.BadFiles != 0 {
				t.Fatalf("first run: %+v", sum)
			}
			if sum.RowsOut != 20 || sum.RowsIn != 20 {
				t.Fatalf("first run counts rows of failed shards: %+v", sum)
			}
			if _, err := os.Stat(out); merged && err == nil {
				t.Fatal("single output assembled with shards missing")
			}
			// a rerun with the files still broken retries and reports them again
			sum, err = Run(context.Background(), cfg)
			if err != nil || sum.ShardsFailed != 2 || sum.ShardsAlreadyDone != 1 {
				t.Fatalf("second run: %+v %v", sum, err)
			}
			// the files are back: the rerun finishes them, every row exactly once
			src.shards["in/s1.jsonl"] = good
			src.shards["in/s2.jsonl"] = moved
			sum, err = Run(context.Background(), cfg)
			if err != nil || sum.ShardsFailed != 0 || sum.ShardsDone != 2 || sum.RowsOut != 40 {
				t.Fatalf("third run: %+v %v", sum, err)
			}
			rows := byID(t, readRows(t, out))
			if len(rows) != 60 {
				t.Fatalf("%d rows, want 60", len(rows))
			}
		})
	}
}

// TestRowsOutCountsMarkedOnly: rows of shards that were dropped (an
// interrupt part-way) are not counted in rows_out: the summary's counts are
// those of marked parts.
func TestRowsOutCountsMarkedOnly(t *testing.T) {
	src, shards := corpus(4, 40)
	ctx, cancel := context.WithCancel(context.Background())
	var n int
	var mu sync.Mutex
	src.onNext = func() {
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 100 {
			cancel()
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	cfg.Workers = 1
	sum, err := Run(ctx, cfg)
	if err != nil || !sum.Interrupted {
		t.Fatalf("%+v %v", sum, err)
	}
	rows := readRows(t, out)
	if sum.RowsOut != int64(len(rows)) || sum.RowsOut != int64(40*sum.ShardsDone) {
		t.Fatalf("rows_out %d, rows in marked parts %d, shards done %d", sum.RowsOut, len(rows), sum.ShardsDone)
	}
}

// TestMarkerWithoutPart: a cleanup killed after removing a part but not its
// marker (or a part deleted by hand) is redone, not trusted; in single-file
// mode the merge no longer fails forever with "no such file".
func TestMarkerWithoutPart(t *testing.T) {
	src, shards := corpus(3, 10)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	od := jobs.OutDir{Path: out, Format: "jsonl"}
	if err := os.Remove(od.PartPath(jobs.PartName("s1.jsonl"))); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), cfg)
	if err != nil || sum.ShardsDone != 1 || sum.ShardsAlreadyDone != 2 {
		t.Fatalf("%+v %v", sum, err)
	}
	if rows := byID(t, readRows(t, out)); len(rows) != 30 {
		t.Fatalf("%d rows", len(rows))
	}
}

// TestKeysStableWhenInputsAdded: a file added to a second input root with
// the same relative path as one in the first does not change the first
// one's key (every part was recomputed under new names beside the old
// ones, duplicating every row).
func TestKeysStableWhenInputsAdded(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	write := func(rel string, n int) {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"id":"%s-%d","text":"hello %d"}`+"\n", rel, i, i)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/x.jsonl", 5)
	write("a/y.jsonl", 5)
	write("b/z.jsonl", 5)
	out := filepath.Join(root, "out")
	run := func() *Summary {
		shards, err := ExpandInputs([]string{filepath.Join(root, "b"), filepath.Join(root, "a")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(t, jobs.TaskScore, ReaderSource{}, shards, out)
		cfg.Job.Keep = nil
		sum, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	if s := run(); s.ShardsDone != 3 {
		t.Fatalf("%+v", s)
	}
	write("b/x.jsonl", 4) // same relative path as a/x.jsonl, in the other root
	s := run()
	if s.ShardsDone != 1 || s.ShardsAlreadyDone != 3 || s.RowsOut != 4 {
		t.Fatalf("adding b/x.jsonl: %+v", s)
	}
	rows := readRows(t, out)
	if len(rows) != 19 {
		t.Fatalf("%d rows, want 19", len(rows))
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r["id"].(string))
	}
	sort.Strings(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("duplicate row %s", ids[i])
		}
	}
	// and the other way round: a file added to the first root takes the
	// key of no finished shard (the marker says which file owns it)
	write("a/z.jsonl", 3)
	s = run()
	if s.ShardsDone != 1 || s.ShardsAlreadyDone != 4 || s.RowsOut != 3 {
		t.Fatalf("adding a/z.jsonl: %+v", s)
	}
	if rows := readRows(t, out); len(rows) != 22 {
		t.Fatalf("%d rows, want 22", len(rows))
	}
}

// TestOutputInsideInput: an output directory (or single file) inside the
// input tree is not read back as input by the next run.
func TestOutputInsideInput(t *testing.T) {
	for _, outName := range []string{"results", "results.jsonl", "results.parquet"} {
		t.Run(outName, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "in.jsonl"), []byte(`{"id":"1","text":"one"}`+"\n"+`{"id":"2","text":"two"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(root, outName)
			for run := range 3 {
				shards, err := ExpandInputs([]string{root}, nil)
				if err != nil {
					t.Fatal(err)
				}
				cfg := testConfig(t, jobs.TaskScore, ReaderSource{}, shards, out)
				cfg.Job.Keep = nil
				cfg.Create = CreateWriter
				cfg.Format = ""
				sum, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if sum.ShardsAssigned != 1 || sum.Rejected != 0 {
					t.Fatalf("run %d reads its own output: %+v", run, sum)
				}
			}
		})
	}
}

// TestRenamesSynced: every rename that commits data (part, rejects,
// marker, merged file) is followed by a sync of its directory.
func TestRenamesSynced(t *testing.T) {
	var mu sync.Mutex
	synced := map[string]int{}
	old := syncDir
	syncDir = func(dir string) {
		mu.Lock()
		synced[filepath.Clean(dir)]++
		mu.Unlock()
		old(dir)
	}
	defer func() { syncDir = old }()
	src, shards := corpus(2, 10)
	rows := src.shards["in/s0.jsonl"]
	rows[3] = &RowError{File: "in/s0.jsonl", Row: 3, Reason: "malformed JSON"}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// rejects inside the staging folder, then the merged file and its
	// rejects beside it
	if synced[filepath.Join(out+StagingSuffix, jobs.RejectsDir)] == 0 {
		t.Errorf("rejects rename not synced: %v", synced)
	}
	if synced[dir] < 2 {
		t.Errorf("merged file and merged rejects: %d directory syncs of %s, want 2: %v", synced[dir], dir, synced)
	}
}

// TestOverlappingRunsSingleFile: two overlapping runs into one output file
// share the shards and one of them assembles the file; both succeed (they
// both failed with "shard(s) are being written by another running
// onecore", and neither assembled it). If one of them is interrupted, the
// other finishes its shards too.
func TestOverlappingRunsSingleFile(t *testing.T) {
	for _, interruptSecond := range []bool{false, true} {
		t.Run(fmt.Sprintf("interrupt=%v", interruptSecond), func(t *testing.T) {
			src, shards := corpus(8, 20)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			sums := make([]*Summary, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for k := range 2 {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if k == 1 && interruptSecond {
					go func() { time.Sleep(80 * time.Millisecond); cancel() }()
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					cfg := testConfig(t, jobs.TaskScore, src, shards, out)
					cfg.Model = &fakeModel{delay: 5 * time.Millisecond}
					cfg.Workers, cfg.PackTok = 1, 64
					sums[k], errs[k] = Run(ctx, cfg)
				}()
				time.Sleep(30 * time.Millisecond)
			}
			wg.Wait()
			for k := range 2 {
				if errs[k] != nil {
					t.Fatalf("run %d: %v", k, errs[k])
				}
			}
			if !interruptSecond && (sums[0].ShardsDone == 0 || sums[1].ShardsDone == 0) {
				t.Fatalf("shards not shared: %d + %d", sums[0].ShardsDone, sums[1].ShardsDone)
			}
			if sums[0].ShardsDone+sums[1].ShardsDone != 8 {
				t.Fatalf("shards done: %d + %d, want 8", sums[0].ShardsDone, sums[1].ShardsDone)
			}
			if got := byID(t, readRows(t, out)); len(got) != 160 {
				t.Fatalf("%d rows", len(got))
			}
			if _, err := os.Stat(out + StagingSuffix); !os.IsNotExist(err) {
				t.Fatal("staging folder left")
			}
		})
	}
}
