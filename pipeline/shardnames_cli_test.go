package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/jobs"
)

// TestKeepRejectIDsPartNames: a --keep field no row of a shard has is
// warned about once per field (naming the shard), rejects carry the id of a
// row whose id was readable, parts are named part-0000-HASH.parquet for an
// input part-0000.jsonl, and an output directory written with the old
// names (part-part-0000.jsonl-HASH) still resumes: finished shards are not
// redone, and a part renamed into place before its marker is redone under
// its old name, never duplicated under the new one.
func TestKeepRejectIDsPartNames(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	os.MkdirAll(in, 0o755)
	writeJSONL(t, filepath.Join(in, "part-0000.jsonl"), []string{
		`{"id":"a","text":"one doc","url":"u1"}`,
		`{"id":"b","text":null,"url":"u2"}`,
		`{"id":"c","url":"u3"}`,
		`{"text":"no id","url":"u4"}`,
	}, false)
	writeJSONL(t, filepath.Join(in, "part-0001.jsonl"), []string{`{"id":"d","text":"two","url":"u5"}`}, false)
	out := filepath.Join(tmp, "out")
	args := []string{"score", "--model", model, "--in", in, "--out", out, "--keep", "url,nosuch", "--workers", "1", "--progress", "none"}
	_, stderr, code := cliRun(t, nil, args...)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (rejects)\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "field=nosuch"); n != 1 || !strings.Contains(stderr, "shard="+in) {
		t.Errorf("--keep nosuch: %d warnings, want 1 naming the shard:\n%s", n, stderr)
	}
	if strings.Contains(stderr, "field=url") {
		t.Errorf("warned about url, which every row has:\n%s", stderr)
	}
	rej, _ := filepath.Glob(filepath.Join(out, jobs.RejectsDir, "*.jsonl"))
	var all string
	for _, f := range rej {
		b, _ := os.ReadFile(f)
		all += string(b)
	}
	for _, id := range []string{`"id":"b"`, `"id":"c"`} {
		if !strings.Contains(all, id) {
			t.Errorf("rejects lack %s:\n%s", id, all)
		}
	}
	parts, _ := filepath.Glob(filepath.Join(out, "part-*.parquet"))
	if len(parts) != 2 {
		t.Fatalf("parts %v", parts)
	}
	for _, p := range parts {
		if b := filepath.Base(p); strings.Contains(b, "part-part") || strings.Contains(b, ".jsonl") {
			t.Errorf("part name %s is not readable", b)
		}
	}

	// The same output as an older onecore named it.
	legacy := func(key string) {
		for _, d := range []struct{ dir, ext string }{{out, ".parquet"}, {filepath.Join(out, jobs.DoneDir), ".json"}, {filepath.Join(out, jobs.RejectsDir), ".jsonl"}} {
			if err := os.Rename(filepath.Join(d.dir, jobs.PartName(key)+d.ext), filepath.Join(d.dir, jobs.LegacyPartName(key)+d.ext)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	legacy("part-0000.jsonl")
	legacy("part-0001.jsonl")
	stdout, stderr, code := cliRun(t, nil, args...)
	var sum Summary
	json.Unmarshal([]byte(stdout), &sum)
	if code != 0 || sum.ShardsAlreadyDone != 2 || sum.ShardsDone != 0 {
		t.Fatalf("resume of an old-named output: exit %d, %+v\n%s", code, sum, stderr)
	}
	// A kill between the part's rename and its marker, in the old naming.
	os.Remove(filepath.Join(out, jobs.DoneDir, jobs.LegacyPartName("part-0001.jsonl")+".json"))
	stdout, stderr, code = cliRun(t, nil, args...)
	sum = Summary{}
	json.Unmarshal([]byte(stdout), &sum)
	if code != 0 || sum.ShardsAlreadyDone != 1 || sum.ShardsDone != 1 {
		t.Fatalf("old-named part without marker: exit %d, %+v\n%s", code, sum, stderr)
	}
	if parts, _ := filepath.Glob(filepath.Join(out, "part-*.parquet")); len(parts) != 2 {
		t.Fatalf("rows written twice: parts %v", parts)
	}
}
