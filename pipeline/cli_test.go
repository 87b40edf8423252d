package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/jobs"
)

// cliRun runs the onecore binary; it returns stdout, stderr and the exit
// status (-9 when killed by SIGKILL).
func cliRun(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return testenv.Run(t, env, "", args...)
}

func exitStatus(err error) int { return testenv.ExitStatus(err, nil) }

// partIDs reads the id column of every part in dir (or of one file).
func partIDs(t *testing.T, path, format string) []string {
	t.Helper()
	files := []string{path}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "part-*."+format))
	}
	var ids []string
	for _, f := range files {
		err := copyRecords(f, format, func(rec arrow.RecordBatch) error {
			col := rec.Column(int(rec.Schema().FieldIndices(jobs.ColID)[0])).(*array.String)
			for i := 0; i < col.Len(); i++ {
				ids = append(ids, col.Value(i))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	sort.Strings(ids)
	return ids
}

// crashCorpus writes 6 mixed shards of 30 documents, with one malformed
// line, and returns the ids that must come out.
func crashCorpus(t *testing.T, dir string) []string {
	docs := genDocs(180, 7)
	writeShards(t, dir, docs, 6)
	// One malformed line in a JSONL shard (a reject that must appear once).
	p := filepath.Join(dir, "s02.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append([]byte("{not json\n"), b...), 0o644)
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.id)
	}
	sort.Strings(ids)
	return ids
}

func countRejects(t *testing.T, dir string) int {
	n := 0
	files, _ := filepath.Glob(filepath.Join(dir, jobs.RejectsDir, "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += strings.Count(string(b), "\n")
	}
	return n
}

// TestKillResumeExactlyOnce SIGKILLs real onecore processes at exact points
// (reading, after an engine pack, mid-part write, between a part's rename
// and its rejects / marker, after a marker, while assembling a single
// output file) and at random times, then reruns the same command: every
// input row ends up exactly once (in a part or in the rejects).
func TestKillResumeExactlyOnce(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	want := crashCorpus(t, in)

	type scenario struct {
		crash string        // ONECORE_TEST_CRASH
		after time.Duration // or a kill after this long
		file  bool          // single merged output file
	}
	var scs []scenario
	for _, c := range []string{"read:1", "read:100", "engine:3", "write:1", "write:4", "renamed:2", "rejects:1", "reject:1", "marked:1", "marked:5"} {
		scs = append(scs, scenario{crash: c})
	}
	scs = append(scs, scenario{crash: "merge:2", file: true}, scenario{crash: "merged:1", file: true},
		scenario{crash: "cleanup:1", file: true}, scenario{crash: "marked:3", file: true})
	for _, d := range []time.Duration{100, 300} {
		scs = append(scs, scenario{after: d * time.Millisecond}, scenario{after: d * time.Millisecond, file: true})
	}
	for i, sc := range scs {
		name := sc.crash
		if name == "" {
			name = sc.after.String()
		}
		if sc.file {
			name += "/file"
		}
		t.Run(strings.ReplaceAll(name, ":", "@"), func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(tmp, fmt.Sprintf("out%d", i))
			if sc.file {
				out += ".parquet"
			} else {
				out += "/"
			}
			args := []string{"extract", "--task", "score", "--model", model, "--in", in, "--out", out, "--workers", "2", "--pack-tokens", "256", "--progress", "none"}
			if sc.crash != "" {
				_, stderr, code := cliRun(t, []string{"ONECORE_TEST_CRASH=" + sc.crash}, args...)
				if code != -int(syscall.SIGKILL) {
					t.Fatalf("crash run at %s: exit %d (not killed)\n%s", sc.crash, code, stderr)
				}
			} else {
				cmd := exec.Command(testenv.Binary(t), args...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(sc.after)
				cmd.Process.Kill()
				cmd.Wait()
			}
			stdout, stderr, code := cliRun(t, nil, args...)
			if code != 3 && code != 0 {
				t.Fatalf("rerun: exit %d\n%s", code, stderr)
			}
			var sum Summary
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatalf("summary: %v\n%s", err, stdout)
			}
			got := partIDs(t, strings.TrimSuffix(out, "/"), "parquet")
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("after resume: %d ids, want %d exactly once", len(got), len(want))
			}
			rej := 0
			if sc.file {
				b, _ := os.ReadFile(out + ".rejects.jsonl")
				rej = strings.Count(string(b), "\n")
				if _, err := os.Stat(out + StagingSuffix); !os.IsNotExist(err) {
					t.Fatal("staging folder left")
				}
			} else {
				rej = countRejects(t, out)
			}
			if rej != 1 {
				t.Fatalf("%d rejects, want exactly 1", rej)
			}
			var left []string
			for _, sub := range []string{"", jobs.DoneDir, jobs.RejectsDir} {
				l, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(out, "/"), sub, ".*tmp*"))
				left = append(left, l...)
			}
			if len(left) > 0 {
				t.Fatalf("temporaries left: %v", left)
			}
		})
	}
}

// TestBadInputs: a corrupt zstd file, a garbage Parquet file, malformed
// lines, empty texts, a missing text field and a 20 MB document mid-run:
// the run completes, exit code 3, every row is out or rejected with its
// file and row, and the summary counts it all.
func TestBadInputs(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	docs := genDocs(40, 9)
	writeShards(t, in, docs, 2)            // s00.parquet, s01.jsonl.zst: 40 good rows
	huge := strings.Repeat("word ", 4<<20) // 20 MiB
	writeJSONL(t, filepath.Join(in, "s02.jsonl"), []string{
		`{"id":"ok1","text":"fine"}`,
		`{"id":"bad1","text":`, // malformed
		`{"id":"empty","text":""}`,
		`{"id":"notext"}`,
		`{"id":"huge","text":"` + huge + `"}`,
		`{"id":"ok2","text":"also fine"}`,
	}, false)
	// A zstd stream cut in half: its first rows may still be read.
	var lines []string
	for i := range 2000 {
		lines = append(lines, fmt.Sprintf(`{"id":"z%d","text":"row %d of a file that will be cut"}`, i, i))
	}
	writeJSONL(t, filepath.Join(in, "s03.jsonl.zst"), lines, true)
	zb, _ := os.ReadFile(filepath.Join(in, "s03.jsonl.zst"))
	os.WriteFile(filepath.Join(in, "s03.jsonl.zst"), zb[:len(zb)/2], 0o644)
	os.WriteFile(filepath.Join(in, "s04.parquet"), []byte("PAR1 this is not parquet PAR1"), 0o644)

	out := filepath.Join(tmp, "out")
	args := []string{"score", "--model", model, "--in", in, "--out", out, "--workers", "2", "--progress", "none"}
	// Without --skip-bad-files the two unreadable files fail their shards:
	// exit 4, named in the summary and on stderr, not marked — every rerun
	// retries them.
	for range 2 {
		stdout, stderr, code := cliRun(t, nil, args...)
		var sum Summary
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if code != 4 || sum.ShardsFailed != 2 || sum.BadFiles != 0 || !strings.Contains(stderr, "s03.jsonl.zst") || !strings.Contains(stderr, "s04.parquet") {
			t.Fatalf("exit %d, want 4; summary %+v\n%s", code, sum, stderr)
		}
	}
	stdout, stderr, code := cliRun(t, nil, append(args, "--skip-bad-files")...)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (partial)\n%s", code, stderr)
	}
	var sum Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if sum.ShardsAlreadyDone != 3 || sum.ShardsDone != 2 {
		t.Fatalf("--skip-bad-files after failed runs: %+v", sum)
	}
	sum.RowsIn += sum.Previous.RowsIn
	sum.RowsOut += sum.Previous.RowsOut
	sum.Rejected += sum.Previous.Rejected
	sum.ShardsDone += sum.ShardsAlreadyDone
	if sum.RowsIn != sum.RowsOut+sum.Rejected {
		t.Fatalf("rows in %d != out %d + rejected %d", sum.RowsIn, sum.RowsOut, sum.Rejected)
	}
	if sum.BadFiles != 2 || sum.Rejected != 3 || sum.ShardsDone != 5 {
		t.Fatalf("summary %+v", sum)
	}
	ids := partIDs(t, out, "parquet")
	if int64(len(ids)) != sum.RowsOut {
		t.Fatalf("%d rows in parts, summary says %d", len(ids), sum.RowsOut)
	}
	have := strings.Join(ids, ",")
	for _, id := range []string{"ok1", "ok2", "huge", "d0000", "d0039"} {
		if !strings.Contains(","+have+",", ","+id+",") {
			t.Fatalf("row %s missing", id)
		}
	}
	var rejs []string
	files, _ := filepath.Glob(filepath.Join(out, jobs.RejectsDir, "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		rejs = append(rejs, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	all := strings.Join(rejs, "\n")
	for _, want := range []string{`"row":1`, `"row":2`, `"row":3`, "s03.jsonl.zst", "s04.parquet", "empty text"} {
		if !strings.Contains(all, want) {
			t.Errorf("rejects lack %q:\n%s", want, all)
		}
	}
	if !strings.Contains(stderr, "rejected") {
		t.Errorf("stderr does not explain the exit code:\n%s", stderr)
	}
}

// duckdbQuery runs SQL statements in one DuckDB (npm @duckdb/node-api)
// and returns each statement's rows as JSON objects.
func duckdbQuery(t *testing.T, sqls ...string) [][]map[string]any {
	t.Helper()
	node := testenv.LookPath(t, "node")
	script := `const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const out = [];
  for (const q of JSON.parse(process.argv[1])) out.push((await con.runAndReadAll(q)).getRowObjectsJson());
  process.stdout.write(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });`
	qs, _ := json.Marshal(sqls)
	cmd := exec.Command(node, "-e", script, string(qs))
	cmd.Env = append(os.Environ(), "NODE_PATH="+testenv.NodeModules(t))
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("duckdb %q: %v\n%s", sqls, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var rows [][]map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return rows
}

// TestDuckDBReadsOutputs: DuckDB reads every task's Parquet output (merged
// files and a parts directory) with the documented column types.
func TestDuckDBReadsOutputs(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	writeShards(t, in, genDocs(30, 4), 3)
	common := map[string]string{"id": "VARCHAR", "file": "VARCHAR", "row": "BIGINT", "tokens": "INTEGER", "truncated": "BOOLEAN", "url": "VARCHAR"}
	tasks := []struct {
		task  string
		extra []string
		cols  map[string]string
	}{
		{"classify", nil, map[string]string{"label": "VARCHAR", "score": "FLOAT", "probs": "FLOAT[]"}},
		{"score", nil, map[string]string{"mean_logprob": "DOUBLE", "perplexity": "DOUBLE", "bits_per_byte": "DOUBLE"}},
		{"extract", []string{"--question", "who?", "--max-new-tokens", "3"}, map[string]string{"answer": "VARCHAR", "answer_logprob": "FLOAT", "abstained": "BOOLEAN", "answer_start": "BIGINT", "answer_end": "BIGINT"}},
		{"embed", nil, map[string]string{"embedding": "FLOAT[]"}},
	}
	var sqls []string
	for _, tc := range tasks {
		out := filepath.Join(tmp, tc.task+".parquet")
		args := append([]string{"extract", "--task", tc.task, "--model", model, "--in", in, "--out", out, "--keep", "url", "--progress", "none"}, tc.extra...)
		if _, stderr, code := cliRun(t, nil, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.task, code, stderr)
		}
		sqls = append(sqls, fmt.Sprintf("DESCRIBE SELECT * FROM read_parquet('%s')", out),
			fmt.Sprintf("SELECT count(*) AS n, count(DISTINCT id) AS d FROM read_parquet('%s')", out))
	}
	dir := filepath.Join(tmp, "parts")
	if _, stderr, code := cliRun(t, nil, "score", "--model", model, "--in", in, "--out", dir, "--progress", "none"); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	sqls = append(sqls, fmt.Sprintf("SELECT count(*) AS n, count(DISTINCT id) AS d FROM read_parquet('%s/*.parquet')", dir))
	res := duckdbQuery(t, sqls...)
	for i, tc := range tasks {
		got := map[string]string{}
		for _, r := range res[2*i] {
			got[r["column_name"].(string)] = r["column_type"].(string)
		}
		want := map[string]string{}
		for k, v := range common {
			want[k] = v
		}
		for k, v := range tc.cols {
			want[k] = v
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: DuckDB sees columns %v, documented %v", tc.task, got, want)
		}
		if n := res[2*i+1][0]; fmt.Sprintf("%v %v", n["n"], n["d"]) != "30 30" {
			t.Errorf("%s: counts %v", tc.task, n)
		}
	}
	if n := res[len(res)-1][0]; fmt.Sprintf("%v %v", n["n"], n["d"]) != "30 30" {
		t.Errorf("parts directory: counts %v", n)
	}
}

// TestDefaultTask: without --task, a model with a classifier head
// classifies and one without scores; usage errors exit 2.
func TestDefaultTask(t *testing.T) {
	tmp := t.TempDir()
	in := filepath.Join(tmp, "in")
	writeShards(t, in, genDocs(6, 2), 1)
	for _, head := range []bool{true, false} {
		model := filepath.Join(tmp, fmt.Sprint("model", head))
		writeTinyModelHead(t, model, head)
		stdout, stderr, code := cliRun(t, nil, "extract", "--model", model, "--in", in, "--out", filepath.Join(tmp, fmt.Sprint("o", head, ".jsonl")), "--progress", "none")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		var sum Summary
		json.Unmarshal([]byte(stdout), &sum)
		if want := map[bool]string{true: "classify", false: "score"}[head]; sum.Task != want || sum.RowsOut != 6 {
			t.Fatalf("head=%v: task %s, %d rows", head, sum.Task, sum.RowsOut)
		}
	}
	if _, stderr, code := cliRun(t, nil, "extract", "--in", in); code != 2 || !strings.Contains(stderr, "--out") {
		t.Fatalf("missing --out: exit %d %s", code, stderr)
	}
	if _, stderr, code := cliRun(t, nil, "score", "--task", "embed", "--in", in, "--out", "x/"); code != 2 {
		t.Fatalf("contradicting --task: exit %d %s", code, stderr)
	}
	if _, stderr, code := cliRun(t, nil, "extract", "--in", in, "--out", filepath.Join(tmp, "y/"), "--model", filepath.Join(tmp, "nope")); code != 1 || !strings.Contains(stderr, "nope") {
		t.Fatalf("missing model: exit %d %s", code, stderr)
	}
}

// TestSIGINT: SIGINT stops the run cleanly (exit 130, a resume hint,
// finished shards marked, no temporaries), and the rerun completes the
// rest exactly once. The progress bar (forced on) reports rates.
func TestSIGINT(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	docs := genDocs(600, 21)
	writeShards(t, in, docs, 12)
	out := filepath.Join(tmp, "out")
	args := []string{"score", "--model", model, "--in", in, "--out", out, "--workers", "1", "--pack-tokens", "256"}
	cmd := exec.Command(testenv.Binary(t), append(args, "--progress", "bar")...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(out, jobs.DoneDir, "*.json")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no shard finished within 60s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	code := exitStatus(cmd.Wait())
	stderr := errb.String()
	if code != 130 || !strings.Contains(stderr, "rerun the same command") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "tok/s") {
		t.Errorf("no progress bar with tok/s on stderr:\n%s", stderr)
	}
	done, _ := filepath.Glob(filepath.Join(out, jobs.DoneDir, "*.json"))
	parts, _ := filepath.Glob(filepath.Join(out, "part-*"))
	if len(done) == 0 || len(done) == 12 || len(parts) != len(done) {
		t.Fatalf("after SIGINT: %d markers, %d parts (want some, equal)", len(done), len(parts))
	}
	if left, _ := filepath.Glob(filepath.Join(out, ".*tmp*")); len(left) > 0 {
		t.Fatalf("temporaries left: %v", left)
	}
	stdout, stderr, code := cliRun(t, nil, append(args, "--progress", "none")...)
	if code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, stderr)
	}
	var sum Summary
	json.Unmarshal([]byte(stdout), &sum)
	if sum.ShardsAlreadyDone != len(done) || sum.ShardsDone != 12-len(done) {
		t.Fatalf("rerun summary %+v", sum)
	}
	var want []string
	for _, d := range docs {
		want = append(want, d.id)
	}
	sort.Strings(want)
	if got := partIDs(t, out, "parquet"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%d rows, want %d exactly once", len(got), len(docs))
	}
}

// TestKubernetesRanks: two ranks of an Indexed Job (JOB_COMPLETION_INDEX
// with --world 2) split the shards; the union is the input exactly once.
// Log-line progress (not a terminal) is printed at --log-every.
func TestKubernetesRanks(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	docs := genDocs(100, 8)
	writeShards(t, in, docs, 5)
	out := filepath.Join(tmp, "out")
	total := 0
	for rank := range 2 {
		stdout, stderr, code := cliRun(t, []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", rank)},
			"score", "--model", model, "--in", in, "--out", out, "--world", "2", "--progress", "log", "--log-every", "20ms")
		if code != 0 {
			t.Fatalf("rank %d: exit %d\n%s", rank, code, stderr)
		}
		var sum Summary
		json.Unmarshal([]byte(stdout), &sum)
		if sum.Rank != rank || sum.World != 2 || sum.ShardsAssigned != []int{3, 2}[rank] {
			t.Fatalf("rank %d summary %+v", rank, sum)
		}
		if !strings.Contains(stderr, "kubernetes indexed job") || !strings.Contains(stderr, "msg=progress") {
			t.Errorf("rank %d stderr lacks placement or progress lines:\n%s", rank, stderr)
		}
		total += sum.ShardsDone
	}
	if got := partIDs(t, out, "parquet"); total != 5 || len(got) != len(docs) {
		t.Fatalf("%d shards, %d rows", total, len(got))
	}
	if _, stderr, code := cliRun(t, []string{"JOB_COMPLETION_INDEX=0"}, "score", "--model", model, "--in", in, "--out", out); code != 2 || !strings.Contains(stderr, "--world") {
		t.Fatalf("no --world: exit %d %s", code, stderr)
	}
}
