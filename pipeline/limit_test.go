package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/onecore-dev/onecore/jobs"
)

// ids returns the sorted ids of rows.
func ids(rows []map[string]any) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r["id"].(string))
	}
	slices.Sort(out)
	return out
}

// firstIDs are the ids of the first n rows of corpus(k, per) in shard order.
func firstIDs(per, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("s%d-%d", i/per, i%per))
	}
	slices.Sort(out)
	return out
}

// TestLimit: --limit N computes exactly the first N rows in shard order, in
// directory and single-file mode, whatever the limit's position (inside a
// shard, on a shard boundary, beyond the input); a rerun is a no-op; a run
// interrupted part-way and rerun ends with the same rows as one that was
// not; a full run refuses the limited output.
func TestLimit(t *testing.T) {
	for _, limit := range []int64{1, 25, 40, 95, 500} {
		for _, single := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit%d/single=%v", limit, single), func(t *testing.T) {
				src, shards := corpus(4, 40)
				out := filepath.Join(t.TempDir(), "out")
				if single {
					out += ".jsonl"
				}
				cfg := testConfig(t, jobs.TaskScore, src, shards, out)
				cfg.Job.Limit = limit
				sum, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				want := firstIDs(40, int(min(limit, 160)))
				if got := ids(readRows(t, out)); !slices.Equal(got, want) {
					t.Fatalf("rows %v, want the first %d: %v", got, len(want), want)
				}
				if sum.RowsIn != int64(len(want)) || sum.Limit != limit {
					t.Fatalf("summary rows_in %d limit %d, want %d %d", sum.RowsIn, sum.Limit, len(want), limit)
				}
				if wantBeyond := 4 - int((min(limit, 160)+39)/40); sum.ShardsBeyondLimit != wantBeyond {
					t.Fatalf("shards_beyond_limit %d, want %d", sum.ShardsBeyondLimit, wantBeyond)
				}
				if !single {
					again, err := Run(context.Background(), cfg)
					if err != nil || again.RowsIn != 0 {
						t.Fatalf("rerun of a finished limited job read %d rows (%v)", again.RowsIn, err)
					}
					if got := ids(readRows(t, out)); !slices.Equal(got, want) {
						t.Fatalf("after rerun: rows %v", got)
					}
				}
				full := testConfig(t, jobs.TaskScore, src, shards, out)
				if _, err := Run(context.Background(), full); err == nil || !strings.Contains(err.Error(), "different job") {
					t.Fatalf("a full run into the limited output: %v, want a refusal", err)
				}
			})
		}
	}
}

// TestLimitResume: interrupted after a shard of a limited run, the rerun
// reads exactly the rows the uninterrupted run would have.
func TestLimitResume(t *testing.T) {
	for _, stopAt := range []int{30, 50, 90} {
		t.Run(fmt.Sprint(stopAt), func(t *testing.T) {
			src, shards := corpus(4, 40)
			ctx, cancel := context.WithCancel(context.Background())
			var n int
			var mu sync.Mutex
			src.onNext = func() {
				mu.Lock()
				defer mu.Unlock()
				if n++; n == stopAt {
					cancel()
				}
			}
			out := filepath.Join(t.TempDir(), "out")
			cfg := testConfig(t, jobs.TaskScore, src, shards, out)
			cfg.Job.Limit = 100
			cfg.Workers = 1
			if sum, err := Run(ctx, cfg); err != nil || !sum.Interrupted {
				t.Fatalf("%+v %v", sum, err)
			}
			src.onNext = nil
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if got, want := ids(readRows(t, out)), firstIDs(40, 100); !slices.Equal(got, want) {
				t.Fatalf("after resume: %d rows %v, want the first 100", len(got), got)
			}
		})
	}
}

// TestDryRun: the plan counts shards (done ones skipped), rows where the
// reader knows them, estimates the rest from the calibration, and writes
// nothing to the output.
func TestDryRun(t *testing.T) {
	src, shards := corpus(3, 40)
	src.fractions = true
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	p, err := DryRun(context.Background(), cfg, 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("dry run created %s (%v)", out, err)
	}
	if p.ShardsAssigned != 3 || p.ShardsToDo != 3 || p.ShardsAlreadyDone != 0 {
		t.Fatalf("plan %+v", p)
	}
	if p.Calibration == nil || p.Calibration.Docs != 16 || p.EstimatedS <= 0 {
		t.Fatalf("calibration %+v, estimate %v", p.Calibration, p.EstimatedS)
	}
	// memSource rows are 150 bytes "on disk" each: the estimate is exact
	if p.RowsEstimated != 120 {
		t.Fatalf("rows estimated %d, want 120 (bytes per row %v)", p.RowsEstimated, p.Calibration.BytesPerRow)
	}

	// after a real run of one shard's worth, that shard is skipped, and a
	// different job is reported as refused
	cfg.Shards = shards[:1]
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Shards = shards
	p, err = DryRun(context.Background(), cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.ShardsAlreadyDone != 1 || p.ShardsToDo != 2 || p.Calibration != nil {
		t.Fatalf("plan after one shard %+v", p)
	}
	other := testConfig(t, jobs.TaskScore, src, shards, out)
	other.Job.MaxTokens = 64
	p, err = DryRun(context.Background(), other, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "would refuse") {
		t.Fatalf("notes %q, want the refusal", p.Notes)
	}
}

// TestCLILimitDryRun: --dry-run prints the plan and writes nothing to
// --out; --limit runs the first N rows; --limit with several ranks is a
// usage error.
func TestCLILimitDryRun(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	writeShards(t, in, genDocs(12, 5), 3)
	out := filepath.Join(tmp, "res.jsonl")
	args := []string{"score", "--model", model, "--in", in, "--out", out, "--workers", "1", "--progress", "none"}
	stdout, stderr, code := cliRun(t, nil, append(args, "--dry-run")...)
	if code != 0 || !strings.Contains(stdout, "3 to do") || !strings.Contains(stdout, "estimated time") {
		t.Fatalf("--dry-run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if matches, _ := filepath.Glob(out + "*"); len(matches) > 0 {
		t.Fatalf("--dry-run wrote %v", matches)
	}
	if _, stderr, code := cliRun(t, nil, append(args, "--limit", "5")...); code != 0 {
		t.Fatalf("--limit 5: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(out); strings.Count(string(b), "\n") != 5 {
		t.Fatalf("--limit 5 wrote %d rows", strings.Count(string(b), "\n"))
	}
	if _, stderr, code := cliRun(t, nil, append(args, "--limit", "5", "--rank", "0", "--world", "2")...); code != 2 {
		t.Fatalf("--limit with world 2: exit %d, want 2\n%s", code, stderr)
	}
}
