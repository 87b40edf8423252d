package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/jobs"
)

// s3Fixture is a versitygw server with a bucket holding crashCorpus under
// in/, and a tiny model.
type s3Fixture struct {
	s3     *testenv.S3
	bucket string // s3://NAME
	root   string // the bucket's folder on disk (versitygw's posix backend)
	model  string
	want   []string // ids, sorted
}

func newS3Fixture(t *testing.T) *s3Fixture {
	t.Helper()
	f := &s3Fixture{s3: testenv.StartS3(t)}
	f.bucket = f.s3.Bucket(t)
	f.root = filepath.Join(f.s3.Dir, strings.TrimPrefix(f.bucket, "s3://"))
	tmp := t.TempDir()
	f.model = filepath.Join(tmp, "model")
	writeTinyModel(t, f.model)
	// The posix backend serves the files of the bucket's folder as its
	// objects: writing the corpus there is uploading it.
	f.want = crashCorpus(t, filepath.Join(f.root, "in"))
	return f
}

// args is an extract of the corpus into out (an s3:// prefix).
func (f *s3Fixture) args(out string, extra ...string) []string {
	return append([]string{"extract", "--task", "score", "--model", f.model, "--in", f.bucket + "/in/", "--out", out, "--workers", "1", "--pack-tokens", "256", "--progress", "none"}, extra...)
}

// local is where the object s3://BUCKET/key lives on disk.
func (f *s3Fixture) local(key string) string { return filepath.Join(f.root, filepath.FromSlash(key)) }

func (f *s3Fixture) run(t *testing.T, env []string, args ...string) (Summary, string, int) {
	t.Helper()
	stdout, stderr, code := cliRun(t, append(f.s3.Env(), env...), args...)
	var sum Summary
	if code == 0 || code == 3 {
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatalf("summary: %v\n%s\n%s", err, stdout, stderr)
		}
	}
	return sum, stderr, code
}

// checkOnce checks the output prefix key holds every id exactly once and
// the one malformed line exactly once in the rejects.
func (f *s3Fixture) checkOnce(t *testing.T, key, format string) {
	t.Helper()
	got := outIDs(t, f.local(key), format)
	if strings.Join(got, ",") != strings.Join(f.want, ",") {
		t.Fatalf("%s: %d ids, want %d exactly once", key, len(got), len(f.want))
	}
	if n := countRejects(t, f.local(key)); n != 1 {
		t.Fatalf("%s: %d rejects, want exactly 1", key, n)
	}
}

// outIDs is partIDs that also reads JSON Lines parts.
func outIDs(t *testing.T, dir, format string) []string {
	t.Helper()
	if format != "jsonl" {
		return partIDs(t, dir, format)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "part-*.jsonl"))
	var ids []string
	for _, p := range files {
		ids = append(ids, jsonlIDs(t, p)...)
	}
	sort.Strings(ids)
	return ids
}

// jsonlIDs lists the id of every row of a JSON Lines results file.
func jsonlIDs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var row struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ids = append(ids, row.ID)
	}
	return ids
}

// partBytes maps each part file name of an output prefix to its bytes.
func partBytes(t *testing.T, dir, format string) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "part-*."+format))
	m := map[string][]byte{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(p)] = b
	}
	return m
}

func sameParts(t *testing.T, a, b map[string][]byte) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d parts vs %d", len(a), len(b))
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			t.Fatalf("part %s differs from the uninterrupted run's", k)
		}
	}
}

// TestS3RoundTrip reads every input format (Parquet by ranged reads,
// JSONL and JSONL.zst streamed) from a real S3 server and writes every
// output format back to it; a rerun skips every marked shard.
func TestS3RoundTrip(t *testing.T) {
	f := newS3Fixture(t)
	for _, format := range []string{"parquet", "arrow", "jsonl"} {
		t.Run(format, func(t *testing.T) {
			out := "out-" + format
			sum, stderr, code := f.run(t, nil, f.args(f.bucket+"/"+out+"/", "--format", format)...)
			if code != 3 { // the corpus's one malformed line
				t.Fatalf("exit %d, want 3\n%s", code, stderr)
			}
			if sum.ShardsDone != 6 || sum.Claim != "lease" || sum.Retries == nil || sum.Worker == "" {
				t.Fatalf("summary: %+v", sum)
			}
			if !strings.HasPrefix(sum.Rejects, f.bucket+"/"+out+"/_rejects") {
				t.Errorf("rejects at %q", sum.Rejects)
			}
			f.checkOnce(t, out, format)
			if _, err := os.Stat(f.local(out + "/" + jobs.ManifestName)); err != nil {
				t.Fatal(err)
			}
			if recs, _ := filepath.Glob(f.local(out + "/_workers/*.json")); len(recs) != 1 {
				t.Fatalf("worker records: %v", recs)
			}
			before := partBytes(t, f.local(out), format)
			sum, stderr, code = f.run(t, nil, f.args(f.bucket+"/"+out+"/", "--format", format)...)
			if code != 0 || sum.ShardsAlreadyDone != 6 || sum.ShardsDone != 0 || sum.Files != 0 {
				t.Fatalf("rerun: exit %d, %+v\n%s", code, sum, stderr)
			}
			sameParts(t, before, partBytes(t, f.local(out), format))
			if format == "parquet" {
				// --dry-run reads the object-storage output's markers too
				stdout, stderr, code := cliRun(t, f.s3.Env(), f.args(f.bucket+"/"+out+"/", "--format", format, "--dry-run")...)
				if code != 0 || !strings.Contains(stdout, "6 assigned, 6 already done, 0 to do") {
					t.Fatalf("--dry-run: exit %d\n%s\n%s", code, stdout, stderr)
				}
			}
		})
	}
	// file:// is a local path
	local := t.TempDir()
	if _, stderr, code := f.run(t, nil, f.args("file://"+local+"/res/")...); code != 3 {
		t.Fatalf("file:// output: exit %d\n%s", code, stderr)
	}
	if got := partIDs(t, filepath.Join(local, "res"), "parquet"); len(got) != len(f.want) {
		t.Fatalf("file:// output: %d ids, want %d", len(got), len(f.want))
	}
}

// TestS3UnknownScheme: --out s3x://… used to create a local folder named
// "s3x:"; now it is a usage error naming the flag and the scheme.
func TestS3UnknownScheme(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ flag, val string }{{"--out", "s3x://b/out/"}, {"--in", "hdfs://nn/corpus/"}} {
		args := []string{"extract", "--task", "score", "--in", dir, "--out", dir + "/o/", "--progress", "none"}
		for i := range args {
			if args[i] == c.flag {
				args[i+1] = c.val
			}
		}
		cmd := exec.Command(testenv.Binary(t), args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if code := exitStatus(err); code != 2 || !strings.Contains(string(out), c.flag+" "+c.val) || !strings.Contains(string(out), "unknown scheme") {
			t.Errorf("%s %s: exit %d, want 2 naming the flag and scheme\n%s", c.flag, c.val, code, out)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestS3KillResume kills a run into object storage at the points where a
// part is being uploaded, was uploaded, was marked, then reruns: every row
// exactly once, and every part bit-identical to an uninterrupted run's.
func TestS3KillResume(t *testing.T) {
	f := newS3Fixture(t)
	if _, stderr, code := f.run(t, nil, f.args(f.bucket+"/ref/")...); code != 3 {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	ref := partBytes(t, f.local("ref"), "parquet")
	for i, crash := range []string{"read:50", "write:1", "renamed:2", "rejects:1", "marked:1", "marked:4"} {
		out := fmt.Sprintf("kill%d", i)
		// A short lease TTL lets the rerun take over the killed run's
		// leases instead of waiting the default minute.
		_, stderr, code := f.run(t, []string{"ONECORE_TEST_CRASH=" + crash, "ONECORE_LEASE_TTL=1s"}, f.args(f.bucket+"/"+out+"/")...)
		if code != -int(syscall.SIGKILL) {
			t.Fatalf("%s: exit %d (not killed)\n%s", crash, code, stderr)
		}
		sum, stderr, code := f.run(t, []string{"ONECORE_LEASE_TTL=1s"}, f.args(f.bucket+"/"+out+"/")...)
		if code != 3 && code != 0 {
			t.Fatalf("%s: rerun exit %d\n%s", crash, code, stderr)
		}
		// The killed run held the lease of the shard it was writing (and
		// of the next ones its reader had claimed): the rerun takes them
		// over once they expire.
		if len(sum.TakenOver) == 0 {
			t.Errorf("%s: no lease taken over from the killed run", crash)
		}
		f.checkOnce(t, out, "parquet")
		sameParts(t, ref, partBytes(t, f.local(out), "parquet"))
	}
}

// TestS3Faults runs through a proxy that answers 503 SlowDown, drops
// connections and cuts bodies short: nothing is lost, and the summary
// counts the retries.
func TestS3Faults(t *testing.T) {
	f := newS3Fixture(t)
	proxy := testenv.StartFaultProxy(t, f.s3.Endpoint, 4)
	env := append(f.s3.EnvFor(proxy.URL), "ONECORE_RETRY_MAX_BACKOFF=50ms")
	stdout, stderr, code := cliRun(t, env, f.args(f.bucket+"/faulty/")...)
	if code != 3 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var sum Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("injected %d slow, %d dropped, %d cut; retries %+v", proxy.Slow.Load(), proxy.Dropped.Load(), proxy.Cut.Load(), *sum.Retries)
	if proxy.Injected() == 0 || sum.Retries == nil || sum.Retries.Total() == 0 || sum.Retries.Throttled == 0 {
		t.Fatalf("faults %d, retries %+v", proxy.Injected(), sum.Retries)
	}
	f.checkOnce(t, "faulty", "parquet")
}

// TestS3LeaseTakeover: a shard held by a live lease is left alone until
// the lease expires (its worker died), then taken over and finished; the
// summary and the worker record say so.
func TestS3LeaseTakeover(t *testing.T) {
	f := newS3Fixture(t)
	out := f.bucket + "/leased/"
	name := jobs.PartName("s01.jsonl.zst")
	lease, _ := json.Marshal(jobs.Lease{Owner: "dead-worker", Token: "x", Expires: time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)})
	// Through the server, not into its folder: versitygw's conditional
	// puts see only objects it wrote itself (they carry its metadata).
	f.s3.Setenv(t)
	if err := blobstore.WriteAll(context.Background(), out+"_locks/"+name+".lease", lease, true); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	sum, stderr, code := f.run(t, nil, f.args(out)...)
	if code != 3 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if time.Since(t0) < 2*time.Second {
		t.Errorf("finished in %v: the live lease was not respected", time.Since(t0))
	}
	if len(sum.TakenOver) != 1 || sum.TakenOver[0] != "s01.jsonl.zst from dead-worker" || sum.ShardsDone != 6 {
		t.Fatalf("summary: taken over %v, done %d", sum.TakenOver, sum.ShardsDone)
	}
	f.checkOnce(t, "leased", "parquet")
	if l, _ := filepath.Glob(f.local("leased/_locks/*.lease")); len(l) != 0 {
		t.Errorf("leases left: %v", l)
	}
}

// TestS3ElasticWorkers starts 3 workers with leases on one corpus (no
// rank/world), kills some of them with SIGKILL at random moments
// ($ONECORE_S3_KILLS in all, default 4), then
// reruns until done: every row exactly once, bit-identical to a single
// uninterrupted run; the worker records add up to the shards.
func TestS3ElasticWorkers(t *testing.T) {
	f := newS3Fixture(t)
	if _, stderr, code := f.run(t, nil, f.args(f.bucket+"/ref/")...); code != 3 {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	ref := partBytes(t, f.local("ref"), "parquet")
	out := f.bucket + "/elastic/"
	env := append(os.Environ(), append(f.s3.Env(), "ONECORE_LEASE_TTL=1500ms")...)
	// $ONECORE_S3_KILLS SIGKILLs in all (the 20; CI's default 4
	// keeps it short), at seeded random moments, 3 workers per round.
	total := 4
	if n, err := strconv.Atoi(os.Getenv("ONECORE_S3_KILLS")); err == nil && n > 0 {
		total = n
	}
	rng := rand.New(rand.NewPCG(17, uint64(total)))
	var schedule [][]time.Duration
	for left := total; left > 0; left -= 3 {
		round := make([]time.Duration, 3)
		for w := range min(3, left) {
			round[w] = time.Duration(50 + rng.IntN(900))
		}
		schedule = append(schedule, round)
	}
	for round, kills := range schedule {
		var cmds []*exec.Cmd
		for w := range 3 {
			cmd := exec.Command(testenv.Binary(t), f.args(out)...)
			cmd.Env = append(env, fmt.Sprintf("ONECORE_WORKER_ID=r%dw%d", round, w))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, cmd)
		}
		for w, d := range kills {
			if d > 0 {
				go func() { time.Sleep(d * time.Millisecond); cmds[w].Process.Kill() }()
			}
		}
		for _, c := range cmds {
			c.Wait()
		}
	}
	// whatever the kills left: a last worker finishes it
	sum, stderr, code := f.run(t, []string{"ONECORE_LEASE_TTL=1500ms", "ONECORE_WORKER_ID=final"}, f.args(out)...)
	if code != 0 && code != 3 {
		t.Fatalf("final run: exit %d\n%s", code, stderr)
	}
	f.checkOnce(t, "elastic", "parquet")
	sameParts(t, ref, partBytes(t, f.local("elastic"), "parquet"))
	// Who did what: every marker names its worker (killed ones included,
	// which never wrote a record of their own); each run that ended wrote
	// a record, and what a record claims its marker confirms.
	byWorker := map[string]string{}
	marks, _ := filepath.Glob(f.local("elastic/" + jobs.DoneDir + "/*.json"))
	for _, p := range marks {
		b, _ := os.ReadFile(p)
		var m jobs.Marker
		if err := json.Unmarshal(b, &m); err != nil || m.Worker == "" {
			t.Fatalf("%s: %v, worker %q", p, err, m.Worker)
		}
		byWorker[m.Shard] = m.Worker
	}
	if len(byWorker) != 6 {
		t.Fatalf("%d markers, want 6", len(byWorker))
	}
	recs, _ := filepath.Glob(f.local("elastic/_workers/*.json"))
	for _, p := range recs {
		b, _ := os.ReadFile(p)
		var r jobs.WorkerRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, sh := range r.Shards {
			if byWorker[sh] != r.Worker && len(r.TakenOver) == 0 {
				t.Errorf("record %s claims %s, marked by %s", r.Worker, sh, byWorker[sh])
			}
		}
	}
	t.Logf("final run took over %v; %d worker records; marked by: %v", sum.TakenOver, len(recs), byWorker)
}

// TestS3SingleObject: --out s3://b/x.parquet (and .jsonl) stages the parts
// under x.parquet.onecore-parts/ and assembles them into one object with
// its rejects and record beside it, leaving no staging objects; a rerun
// of the same command replaces it with the same bytes; another job is
// refused; kills while assembling and while cleaning up, then reruns, leave
// every row exactly once; static ranks are refused.
func TestS3SingleObject(t *testing.T) {
	f := newS3Fixture(t)
	staged := func(key string) []string {
		var left []string
		filepath.Walk(f.local(key+StagingSuffix), func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && !strings.HasPrefix(filepath.Base(p), ".") {
				left = append(left, p)
			}
			return nil
		})
		return left
	}
	check := func(t *testing.T, key, format string) {
		t.Helper()
		var got []string
		if format == "jsonl" {
			got = jsonlIDs(t, f.local(key))
			sort.Strings(got)
		} else {
			got = partIDs(t, f.local(key), format)
		}
		if strings.Join(got, ",") != strings.Join(f.want, ",") {
			t.Fatalf("%s: %d ids, want %d exactly once", key, len(got), len(f.want))
		}
		b, err := os.ReadFile(f.local(key + ".rejects.jsonl"))
		if err != nil || strings.Count(string(b), "\n") != 1 {
			t.Fatalf("%s rejects: %v, %q", key, err, b)
		}
		if _, err := os.Stat(f.local(key + OutputRecordSuffix)); err != nil {
			t.Fatal(err)
		}
		if left := staged(key); len(left) != 0 {
			t.Fatalf("staging objects left: %v", left)
		}
	}
	for _, format := range []string{"parquet", "jsonl"} {
		key := "res." + format
		sum, stderr, code := f.run(t, nil, f.args(f.bucket+"/"+key)...)
		if code != 3 || sum.ShardsDone != 6 || sum.Rejects != f.bucket+"/"+key+".rejects.jsonl" {
			t.Fatalf("%s: exit %d, %+v\n%s", key, code, sum, stderr)
		}
		check(t, key, format)
		first, _ := os.ReadFile(f.local(key))
		if _, stderr, code := f.run(t, nil, f.args(f.bucket+"/"+key)...); code != 3 {
			t.Fatalf("%s rerun: exit %d\n%s", key, code, stderr)
		}
		check(t, key, format)
		if again, _ := os.ReadFile(f.local(key)); !bytes.Equal(first, again) {
			t.Fatalf("%s: the rerun's object differs", key)
		}
	}
	// another job into the same object: refused (as for a local file), the
	// object kept
	_, stderr, code := f.run(t, nil, append(f.args(f.bucket+"/res.parquet"), "--max-tokens", "64")...)
	if code != 1 || !strings.Contains(stderr, "different job") {
		t.Fatalf("another job: exit %d\n%s", code, stderr)
	}
	for i, crash := range []string{"merge:3", "merged:1", "cleanup:1"} {
		key := fmt.Sprintf("kill%d.parquet", i)
		_, stderr, code := f.run(t, []string{"ONECORE_TEST_CRASH=" + crash, "ONECORE_LEASE_TTL=1s"}, f.args(f.bucket+"/"+key)...)
		if code != -int(syscall.SIGKILL) {
			t.Fatalf("%s: exit %d (not killed)\n%s", crash, code, stderr)
		}
		if _, stderr, code := f.run(t, []string{"ONECORE_LEASE_TTL=1s"}, f.args(f.bucket+"/"+key)...); code != 3 && code != 0 {
			t.Fatalf("%s: rerun exit %d\n%s", crash, code, stderr)
		}
		check(t, key, "parquet")
	}
	if _, stderr, code := f.run(t, nil, f.args(f.bucket+"/r.parquet", "--rank", "0", "--world", "2")...); code != 2 || !strings.Contains(stderr, "single object") {
		t.Fatalf("ranks: exit %d\n%s", code, stderr)
	}
}

// TestS3ChangedShardRefused: on object storage too, a rerun into an output
// whose finished shard was rewritten since (its LastModified moved) stops
// with exit 1 naming the shard and its marker; removing that marker redoes
// the shard, and every row is there exactly once.
func TestS3ChangedShardRefused(t *testing.T) {
	f := newS3Fixture(t)
	out := f.bucket + "/chg/"
	if _, stderr, code := f.run(t, nil, f.args(out)...); code != 3 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	// the posix backend's LastModified is the file's mtime
	shard := f.local("in/s01.jsonl.zst")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(shard, later, later); err != nil {
		t.Fatal(err)
	}
	marker := out + jobs.DoneDir + "/" + jobs.PartName("s01.jsonl.zst") + ".json"
	_, stderr, code := f.run(t, nil, f.args(out)...)
	if code != 1 || !strings.Contains(stderr, "changed since") || !strings.Contains(stderr, f.bucket+"/in/s01.jsonl.zst") || !strings.Contains(stderr, marker) {
		t.Fatalf("rerun after the shard changed: exit %d, want 1 naming the shard and %s\n%s", code, marker, stderr)
	}
	if err := os.Remove(f.local("chg/" + jobs.DoneDir + "/" + jobs.PartName("s01.jsonl.zst") + ".json")); err != nil {
		t.Fatal(err)
	}
	sum, stderr, code := f.run(t, nil, f.args(out)...)
	if code != 0 && code != 3 || sum.ShardsDone != 1 || sum.ShardsAlreadyDone != 5 {
		t.Fatalf("after removing the marker: exit %d, %+v\n%s", code, sum, stderr)
	}
	f.checkOnce(t, "chg", "parquet")
}
