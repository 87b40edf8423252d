//go:build cloud

package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/internal/testenv"
)

// These tests run onecore (built with -tags cloud) between the Google Cloud
// Storage emulator (fake-gcs-server) and Azure's (Azurite): the same jobs
// as the S3 tests, through gocloud.dev's gcsblob and azureblob drivers.

// uploadDir copies every file under dir to the remote prefix.
func uploadDir(t *testing.T, dir, prefix string) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return blobstore.WriteAll(context.Background(), blobstore.Join(prefix, filepath.ToSlash(rel)), b, false)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fetchPrefix copies every object under the remote prefix into a new local
// folder (the tests' checks read local files) and returns it.
func fetchPrefix(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	objs, err := blobstore.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		b, err := blobstore.ReadAll(ctx, o.Path)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(o.Rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCloudGCSAzblob reads a corpus from gs:// and writes results to
// azblob:// (and the other way round): every row exactly once, a rerun
// skips every marked shard, a SIGKILLed run resumes to bit-identical
// parts, and one output object is assembled.
func TestCloudGCSAzblob(t *testing.T) {
	gcs, az := testenv.StartGCS(t), testenv.StartAzurite(t)
	gcs.Setenv(t)
	az.Setenv(t)
	env := append(gcs.Env(), az.Env()...)
	gb, ab := gcs.Bucket(t), az.Bucket(t)
	model := filepath.Join(t.TempDir(), "model")
	writeTinyModel(t, model)
	corpus := t.TempDir()
	want := crashCorpus(t, corpus)
	uploadDir(t, corpus, gb+"/in")
	uploadDir(t, corpus, ab+"/in")

	run := func(t *testing.T, extra []string, in, out string, flags ...string) (Summary, string, int) {
		t.Helper()
		args := append([]string{"extract", "--task", "score", "--model", model, "--in", in, "--out", out,
			"--workers", "1", "--pack-tokens", "256", "--progress", "none"}, flags...)
		stdout, stderr, code := cliRun(t, append(append([]string(nil), env...), extra...), args...)
		var sum Summary
		if code == 0 || code == 3 {
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatalf("summary: %v\n%s\n%s", err, stdout, stderr)
			}
		}
		return sum, stderr, code
	}
	once := func(t *testing.T, dir, format string) {
		t.Helper()
		if got := outIDs(t, dir, format); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%d ids, want %d exactly once", len(got), len(want))
		}
		if n := countRejects(t, dir); n != 1 {
			t.Fatalf("%d rejects, want exactly 1", n)
		}
	}

	for _, c := range []struct{ in, out, format string }{
		{gb + "/in/", ab + "/out-jsonl/", "jsonl"},
		{ab + "/in/", gb + "/out-parquet/", "parquet"},
	} {
		t.Run(c.format, func(t *testing.T) {
			sum, stderr, code := run(t, nil, c.in, c.out, "--format", c.format)
			if code != 3 || sum.ShardsDone != 6 || sum.Claim != "lease" {
				t.Fatalf("%s → %s: exit %d, %+v\n%s", c.in, c.out, code, sum, stderr)
			}
			first := fetchPrefix(t, c.out)
			once(t, first, c.format)
			sum, stderr, code = run(t, nil, c.in, c.out, "--format", c.format)
			if code != 0 || sum.ShardsAlreadyDone != 6 || sum.ShardsDone != 0 {
				t.Fatalf("rerun: exit %d, %+v\n%s", code, sum, stderr)
			}
			sameParts(t, partBytes(t, first, c.format), partBytes(t, fetchPrefix(t, c.out), c.format))
		})
	}

	t.Run("kill-resume", func(t *testing.T) {
		if _, stderr, code := run(t, nil, gb+"/in/", ab+"/ref/"); code != 3 {
			t.Fatalf("reference run: exit %d\n%s", code, stderr)
		}
		// the reference reads the same input: parts record the input's URL
		ref := partBytes(t, fetchPrefix(t, ab+"/ref/"), "parquet")
		for i, crash := range []string{"write:1", "marked:2"} {
			out := fmt.Sprintf("%s/kill%d/", ab, i)
			_, stderr, code := run(t, []string{"ONECORE_TEST_CRASH=" + crash, "ONECORE_LEASE_TTL=1s"}, gb+"/in/", out)
			if code != -int(syscall.SIGKILL) {
				t.Fatalf("%s: exit %d (not killed)\n%s", crash, code, stderr)
			}
			sum, stderr, code := run(t, []string{"ONECORE_LEASE_TTL=1s"}, gb+"/in/", out)
			if (code != 3 && code != 0) || len(sum.TakenOver) == 0 {
				t.Fatalf("%s: rerun exit %d, taken over %v\n%s", crash, code, sum.TakenOver, stderr)
			}
			dir := fetchPrefix(t, out)
			once(t, dir, "parquet")
			sameParts(t, ref, partBytes(t, dir, "parquet"))
		}
	})

	t.Run("single-object", func(t *testing.T) {
		obj := gb + "/res.jsonl"
		if _, stderr, code := run(t, nil, ab+"/in/", obj); code != 3 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		dir := fetchPrefix(t, gb+"/")
		got := jsonlIDs(t, filepath.Join(dir, "res.jsonl"))
		if len(got) != len(want) {
			t.Fatalf("%d rows in the object, want %d", len(got), len(want))
		}
		if _, err := os.Stat(filepath.Join(dir, "res.jsonl"+StagingSuffix)); err == nil {
			t.Fatal("staging objects left")
		}
	})
}
