package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/jobs"
)

// corpus makes nShards shards of docs with ids "sK-i" and varied lengths.
func corpus(nShards, perShard int) (*memSource, []Shard) {
	src := &memSource{shards: map[string][]any{}}
	var shards []Shard
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range nShards {
		path := fmt.Sprintf("in/s%d.jsonl", k)
		var rows []any
		for i := range perShard {
			n := 1 + rng.IntN(300)
			var b strings.Builder
			for b.Len() < n {
				b.WriteString([]string{"the ", "cat ", "sat ", "on ", "a ", "mat. ", "Zebra! "}[rng.IntN(7)])
			}
			rows = append(rows, Doc{ID: fmt.Sprintf("s%d-%d", k, i), Text: b.String(), File: path, Row: int64(i),
				Keep: []Value{{S: fmt.Sprintf("u%d", i), Valid: i%3 != 0}}})
		}
		src.shards[path] = rows
		shards = append(shards, Shard{Key: fmt.Sprintf("s%d.jsonl", k), Path: path, Size: int64(perShard * 150)})
	}
	return src, shards
}

func testConfig(t *testing.T, task jobs.Task, src Source, shards []Shard, out string) Config {
	t.Helper()
	j := &jobs.Job{Task: task, Keep: []string{"url"}, MaxTokens: 128}
	if task == jobs.TaskClassify {
		j.Labels = []string{"yes", "no"}
	}
	if err := j.Normalize(); err != nil {
		t.Fatal(err)
	}
	return Config{Job: j, Shards: shards, Source: src, Tokenizer: byteTok{}, Model: &fakeModel{labels: []string{"yes", "no"}},
		ModelID: "fake", Create: createJSON, Out: out, Format: "jsonl", Workers: 2, PackTok: 300}
}

// byID keys rows by id, dropping where they came from.
func byID(t *testing.T, rows []map[string]any) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	for _, r := range rows {
		id := r["id"].(string)
		if _, dup := m[id]; dup {
			t.Fatalf("duplicate row %s", id)
		}
		delete(r, "file")
		delete(r, "row")
		m[id] = r
	}
	return m
}

func TestRunScoreOrderAndCounts(t *testing.T) {
	src, shards := corpus(4, 50)
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.RowsIn != 200 || sum.RowsOut != 200 || sum.Rejected != 0 || sum.ShardsDone != 4 {
		t.Fatalf("summary %+v", sum)
	}
	for _, sh := range shards {
		rows := readRows(t, filepath.Join(out, jobs.PartName(sh.Key)+".jsonl"))
		if len(rows) != 50 {
			t.Fatalf("%s: %d rows", sh.Key, len(rows))
		}
		for i, r := range rows {
			if int(r["row"].(float64)) != i {
				t.Fatalf("%s: row %d at position %d: order lost", sh.Key, int(r["row"].(float64)), i)
			}
			if r["perplexity"].(float64) < 1 {
				t.Fatalf("perplexity %v", r["perplexity"])
			}
			if (i%3 != 0) != (r["url"] != nil) {
				t.Fatalf("keep column: %v", r["url"])
			}
		}
	}
	// Rerun: everything is already done.
	sum, err = Run(context.Background(), cfg)
	if err != nil || sum.ShardsAlreadyDone != 4 || sum.RowsIn != 0 || sum.Previous.RowsOut != 200 {
		t.Fatalf("rerun: %+v %v", sum, err)
	}
}

// TestBatchInvariance: results per document do not depend on the worker
// count, the pack size, the shard order or how documents are split into shards.
func TestBatchInvariance(t *testing.T) {
	for _, task := range jobs.Tasks {
		t.Run(string(task), func(t *testing.T) {
			src, shards := corpus(3, 40)
			run := func(workers, pack int, shards []Shard, src Source) map[string]map[string]any {
				out := filepath.Join(t.TempDir(), "out")
				cfg := testConfig(t, task, src, shards, out)
				cfg.Workers, cfg.PackTok = workers, pack
				if _, err := Run(context.Background(), cfg); err != nil {
					t.Fatal(err)
				}
				return byID(t, readRows(t, out))
			}
			ref := run(1, 1024, shards, src)
			if len(ref) != 120 {
				t.Fatalf("%d rows", len(ref))
			}
			check := func(name string, got map[string]map[string]any) {
				if !reflect.DeepEqual(ref, got) {
					for id := range ref {
						if !reflect.DeepEqual(ref[id], got[id]) {
							t.Fatalf("%s: doc %s differs:\n%v\n%v", name, id, ref[id], got[id])
						}
					}
					t.Fatalf("%s: results differ", name)
				}
			}
			check("2 workers", run(2, 200, shards, src))
			rev := append([]Shard(nil), shards...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			check("reversed shards", run(2, 500, rev, src))
			// Re-split: all documents shuffled into 5 shards.
			var all []any
			for _, sh := range shards {
				all = append(all, src.shards[sh.Path]...)
			}
			rand.New(rand.NewPCG(3, 4)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			src2 := &memSource{shards: map[string][]any{}}
			var shards2 []Shard
			for k := range 5 {
				p := fmt.Sprintf("re/%d", k)
				src2.shards[p] = all[k*24 : (k+1)*24]
				shards2 = append(shards2, Shard{Key: p, Path: p})
			}
			check("resplit+shuffled", run(2, 333, shards2, src2))
		})
	}
}

func TestRejectsAndBadFiles(t *testing.T) {
	src, shards := corpus(2, 20)
	rows := src.shards["in/s0.jsonl"]
	rows[3] = &RowError{File: "in/s0.jsonl", Row: 3, Reason: "malformed JSON"}
	rows[5] = Doc{ID: "empty", Text: "", File: "in/s0.jsonl", Row: 5}
	rows[7] = Doc{ID: "huge", Text: strings.Repeat("x", 20<<20), File: "in/s0.jsonl", Row: 7}
	// s1 dies after 10 rows; s9 cannot be opened at all.
	src.shards["in/s1.jsonl"] = append(src.shards["in/s1.jsonl"][:10:10], &FileError{File: "in/s1.jsonl", Row: 10, Err: fmt.Errorf("zstd: corrupt frame")})
	shards = append(shards, Shard{Key: "s9", Path: "in/missing"})
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	cfg.SkipBadFiles = true // accept the unreadable files (without it they are retried: TestFailedShardsRetried)
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.RowsIn != 30 || sum.Rejected != 2 || sum.RowsOut != 28 || sum.BadFiles != 2 || !sum.Partial() {
		t.Fatalf("summary %+v", sum)
	}
	if sum.RowsIn != sum.RowsOut+sum.Rejected {
		t.Fatal("rows in != out + rejected")
	}
	got := byID(t, readRows(t, out))
	if h := got["huge"]; h == nil || h["truncated"] != true || int(h["tokens"].(float64)) != 128 {
		t.Fatalf("huge doc: %v", h)
	}
	b, _ := os.ReadFile(filepath.Join(out, jobs.RejectsDir, jobs.PartName("s0.jsonl")+".jsonl"))
	if !strings.Contains(string(b), "malformed JSON") || !strings.Contains(string(b), "empty text") {
		t.Fatalf("rejects: %s", b)
	}
	b, _ = os.ReadFile(filepath.Join(out, jobs.RejectsDir, jobs.PartName("s1.jsonl")+".jsonl"))
	if !strings.Contains(string(b), "corrupt frame") || !strings.Contains(string(b), `"row":-1`) {
		t.Fatalf("file rejects: %s", b)
	}
	// truncate: reject sends the huge document to the rejects instead.
	cfg.Job.Truncate = jobs.TruncateReject
	cfg.Out = filepath.Join(t.TempDir(), "out2")
	sum, err = Run(context.Background(), cfg)
	if err != nil || sum.Rejected < 3 {
		t.Fatalf("%+v %v", sum, err)
	}
}

// TestInterruptResume cancels a run at many points and reruns: every row
// ends up exactly once.
func TestInterruptResume(t *testing.T) {
	for _, stopAt := range []int64{1, 17, 45, 80, 119, 150} {
		t.Run(fmt.Sprint(stopAt), func(t *testing.T) {
			src, shards := corpus(4, 40)
			out := filepath.Join(t.TempDir(), "out")
			cfg := testConfig(t, jobs.TaskScore, src, shards, out)
			ctx, cancel := context.WithCancel(context.Background())
			var n int64
			src.onNext = func() {
				if n++; n == stopAt {
					cancel()
				}
			}
			sum, err := Run(ctx, cfg)
			if err != nil || !sum.Interrupted {
				t.Fatalf("interrupted run: %+v %v", sum, err)
			}
			src.onNext = nil
			sum2, err := Run(context.Background(), cfg)
			if err != nil || sum2.Interrupted || !sum2.Complete() {
				t.Fatalf("resume: %+v %v", sum2, err)
			}
			if sum.ShardsDone+sum2.ShardsDone != 4 {
				t.Fatalf("shards done %d + %d", sum.ShardsDone, sum2.ShardsDone)
			}
			if got := byID(t, readRows(t, out)); len(got) != 160 {
				t.Fatalf("%d rows after resume", len(got))
			}
			left, _ := filepath.Glob(filepath.Join(out, ".*tmp*"))
			if len(left) > 0 {
				t.Fatalf("temporaries left: %v", left)
			}
		})
	}
}

func TestEngineFailure(t *testing.T) {
	src, shards := corpus(3, 30)
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	cfg.Model = &fakeModel{failAt: 3}
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("err %v", err)
	}
	cfg.Model = &fakeModel{}
	sum, err := Run(context.Background(), cfg)
	if err != nil || !sum.Complete() {
		t.Fatal(err)
	}
	if got := byID(t, readRows(t, out)); len(got) != 90 {
		t.Fatalf("%d rows", len(got))
	}
}

func TestLockedShardSkipped(t *testing.T) {
	src, shards := corpus(3, 10)
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	od := jobs.OutDir{Path: out, Format: "jsonl"}
	os.MkdirAll(filepath.Join(out, jobs.LockDir), 0o755)
	l, err := od.Lock(jobs.PartName(shards[1].Key))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), cfg)
	if err != nil || sum.ShardsLocked != 1 || sum.ShardsDone != 2 || sum.Complete() {
		t.Fatalf("%+v %v", sum, err)
	}
	l.Unlock()
	sum, err = Run(context.Background(), cfg)
	if err != nil || sum.ShardsDone != 1 || sum.ShardsAlreadyDone != 2 {
		t.Fatalf("%+v %v", sum, err)
	}
}

func TestManifestRefusesOtherJob(t *testing.T) {
	src, shards := corpus(1, 5)
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg2 := testConfig(t, jobs.TaskEmbed, src, shards, out)
	if _, err := Run(context.Background(), cfg2); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("other job accepted: %v", err)
	}
	cfg2.ModelID = "other"
	cfg2.Force = true
	sum, err := Run(context.Background(), cfg2)
	if err != nil || sum.ShardsDone != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	if rows := readRows(t, out); rows[0]["embedding"] == nil {
		t.Fatalf("forced rerun did not recompute: %v", rows[0])
	}
}

// TestChangedShardRefused: a rerun into an output whose finished shard has
// changed since (its size, or its modification time) stops and names the
// shard and its marker; a shard added to the input is just done; removing
// the named marker redoes that shard; a marker from before markers carried
// the input's identity is trusted as before.
func TestChangedShardRefused(t *testing.T) {
	src, shards := corpus(3, 10)
	for i := range shards {
		shards[i].ModNS = int64(1000 + i)
	}
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig(t, jobs.TaskScore, src, shards, out)
	if sum, err := Run(context.Background(), cfg); err != nil || sum.ShardsDone != 3 {
		t.Fatalf("%+v %v", sum, err)
	}
	od := jobs.OutDir{Path: out}
	marker := od.MarkerPath(od.NameFor(shards[1].Key))
	if m := od.Marked(od.NameFor(shards[1].Key)); m == nil || m.Input == nil || m.Input.Size != shards[1].Size || m.Input.ModNS != 1001 {
		t.Fatalf("marker records no input identity: %+v", m)
	}
	for _, tc := range []struct {
		name string
		edit func(sh *Shard)
	}{
		{"size", func(sh *Shard) { sh.Size++ }},
		{"mtime", func(sh *Shard) { sh.ModNS++ }},
	} {
		changed := slices.Clone(shards)
		tc.edit(&changed[1])
		cfg.Shards = changed
		_, err := Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "changed since") || !strings.Contains(err.Error(), shards[1].Path) || !strings.Contains(err.Error(), marker) {
			t.Fatalf("%s changed: %v, want a refusal naming %s and %s", tc.name, err, shards[1].Path, marker)
		}
		plan, err := DryRun(context.Background(), cfg, 0)
		if err != nil || !strings.Contains(strings.Join(plan.Notes, "\n"), "would refuse: 1 input shard(s) changed") {
			t.Fatalf("%s changed: dry run %v %v, want it to say the run would refuse", tc.name, plan, err)
		}
	}
	// the same shard read from another path (the input copied elsewhere,
	// with new times) is compared by size only
	moved := slices.Clone(shards)
	moved[1].Path, moved[1].ModNS = "elsewhere/s1.jsonl", 5
	src.shards[moved[1].Path] = src.shards[shards[1].Path]
	cfg.Shards = moved
	if sum, err := Run(context.Background(), cfg); err != nil || sum.ShardsAlreadyDone != 3 {
		t.Fatalf("moved input: %+v %v", sum, err)
	}
	// a new shard is simply done
	src2, more := corpus(4, 10)
	for i := range more {
		more[i].ModNS = int64(1000 + i)
	}
	cfg.Source, cfg.Shards = src2, more
	if sum, err := Run(context.Background(), cfg); err != nil || sum.ShardsDone != 1 || sum.ShardsAlreadyDone != 3 {
		t.Fatalf("added shard: %+v %v", sum, err)
	}
	// removing the named marker redoes just that shard
	changed := slices.Clone(more)
	changed[1].Size++
	cfg.Shards = changed
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if sum, err := Run(context.Background(), cfg); err != nil || sum.ShardsDone != 1 || sum.ShardsAlreadyDone != 3 {
		t.Fatalf("after removing the marker: %+v %v", sum, err)
	}
	if got := byID(t, readRows(t, out)); len(got) != 40 {
		t.Fatalf("%d rows, want 40", len(got))
	}
	// a marker without the input's identity (older onecore) is trusted
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "input")
	b, _ = json.Marshal(m)
	if err := os.WriteFile(marker, b, 0o644); err != nil {
		t.Fatal(err)
	}
	changed[1].Size++
	if sum, err := Run(context.Background(), cfg); err != nil || sum.ShardsAlreadyDone != 4 {
		t.Fatalf("old marker: %+v %v", sum, err)
	}
}

func TestMergedFile(t *testing.T) {
	src, shards := corpus(3, 10)
	src.shards["in/s1.jsonl"][2] = &RowError{File: "in/s1.jsonl", Row: 2, Reason: "bad"}
	dir := t.TempDir()
	out := filepath.Join(dir, "results.jsonl")
	cfg := testConfig(t, jobs.TaskClassify, src, shards, out)
	cfg.Format = ""
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, out)
	if len(rows) != 29 || sum.Rejects == "" {
		t.Fatalf("%d rows, %+v", len(rows), sum)
	}
	for i, r := range rows[:9] { // shard order, row order
		if r["file"] != "in/s0.jsonl" || int(r["row"].(float64)) != i {
			t.Fatalf("row %d: %v", i, r)
		}
	}
	if p := rows[0]["probs"].([]any); len(p) != 2 {
		t.Fatalf("probs %v", p)
	}
	if _, err := os.Stat(out + StagingSuffix); !os.IsNotExist(err) {
		t.Fatal("staging folder left behind")
	}
	b, _ := os.ReadFile(out + ".rejects.jsonl")
	var rej rejectRow
	if json.Unmarshal(b, &rej) != nil || rej.Row != 2 {
		t.Fatalf("rejects %s", b)
	}
	cfg.Placement = jobs.Placement{Rank: 0, World: 2}
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("single output file accepted with world 2")
	}
}

func TestExtractive(t *testing.T) {
	src, shards := corpus(1, 30)
	out := filepath.Join(t.TempDir(), "out")
	cfg := testConfig(t, jobs.TaskExtract, src, shards, out)
	cfg.Job.Extractive = true
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, r := range src.shards["in/s0.jsonl"] {
		texts[r.(Doc).ID] = r.(Doc).Text
	}
	n := 0
	for id, r := range byID(t, readRows(t, out)) {
		a := r["answer"].(string)
		if !strings.Contains(texts[id], a) {
			t.Fatalf("%s: answer %q is not a span of %q", id, a, texts[id])
		}
		if a != "" {
			n++
		}
		if (strings.TrimSpace(a) == "") != r["abstained"].(bool) {
			t.Fatalf("abstained %v for %q", r["abstained"], a)
		}
	}
	if n == 0 {
		t.Fatal("no answers at all")
	}
}

func TestSpanContinuations(t *testing.T) {
	doc := []int32{5, 6, 7, 5, 8}
	tests := []struct {
		gen  []int32
		want []int32
	}{
		{nil, []int32{5, 6, 7, 8, EOS}},
		{[]int32{5}, []int32{6, 8, EOS}},
		{[]int32{5, 6}, []int32{7, EOS}},
		{[]int32{5, 8}, nil},
		{[]int32{9}, nil},
	}
	for _, tc := range tests {
		if got := spanContinuations(doc, tc.gen, []int32{EOS}); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("gen %v: got %v want %v", tc.gen, got, tc.want)
		}
	}
}

// TestOverlappingRuns: two runs of the same job into the same directory at
// once (overlapping cron jobs) share the shards through the part locks:
// each shard is written by exactly one of them.
func TestOverlappingRuns(t *testing.T) {
	src, shards := corpus(8, 20)
	out := filepath.Join(t.TempDir(), "out")
	sums := make([]*Summary, 2)
	errs := make([]error, 2)
	done := make(chan int)
	for k := range 2 {
		go func() {
			cfg := testConfig(t, jobs.TaskScore, src, shards, out)
			cfg.Model = &fakeModel{delay: 5 * time.Millisecond}
			cfg.Workers, cfg.PackTok = 1, 64
			sums[k], errs[k] = Run(context.Background(), cfg)
			done <- k
		}()
		time.Sleep(30 * time.Millisecond)
	}
	<-done
	<-done
	for k := range 2 {
		if errs[k] != nil {
			t.Fatal(errs[k])
		}
	}
	if sums[0].ShardsDone+sums[1].ShardsDone != 8 || sums[0].ShardsDone == 0 || sums[1].ShardsDone == 0 {
		t.Fatalf("shards done: %d + %d (want 8, shared)", sums[0].ShardsDone, sums[1].ShardsDone)
	}
	if got := byID(t, readRows(t, out)); len(got) != 160 {
		t.Fatalf("%d rows", len(got))
	}
}
