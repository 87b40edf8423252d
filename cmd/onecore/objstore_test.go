package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestLocationSchemes: every flag that takes a location refuses an unknown
// scheme with exit 2, naming the flag and the scheme (it used to become a
// local folder named "s3x:"), and takes file:// as a local path.
func TestLocationSchemes(t *testing.T) {
	in := corpus(t)
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", "--in", "hdfs://nn/x", "--out", "o.parquet"}, `--in hdfs://nn/x: unknown scheme "hdfs://"`},
		{[]string{"convert", "--in", in, "--out", "s3x://b/out/"}, `--out s3x://b/out/: unknown scheme "s3x://"`},
		{[]string{"extract", "--in", in, "--out", "gcs://b/out/"}, `--out gcs://b/out/: unknown scheme "gcs://"`},
		{[]string{"train", "classify", "--from", "base", "--data", "ftp://h/x.jsonl", "--out", "m", "--label-field", "l"}, `--data ftp://h/x.jsonl: unknown scheme "ftp://"`},
		{[]string{"train", "pretrain", "--data", "foo://x", "--tokenizer", "t.json", "--out", "m"}, `--data foo://x: unknown scheme`},
		{[]string{"train", "sft", "--from", "base", "--data", "s3x://b/x.jsonl", "--out", "m"}, `--data s3x://b/x.jsonl: unknown scheme "s3x://"`},
		{[]string{"extract", "--in", in, "--out", "s3://b/out/", "--claim", "flock"}, `no file locks`},
		{[]string{"extract", "--in", in, "--out", "o/", "--claim", "lease"}, `only for object-storage output`},
	} {
		_, stderr, code, _ := convertRun(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, want %d with %q\n%s", c.args, code, exitUsage, c.want, stderr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("usage errors left files behind: %v", ents)
	}
	out := filepath.Join(dir, "via-file-url.jsonl")
	if _, stderr, code, _ := convertRun(t, "convert", "--in", "file://"+in, "--out", "file://"+out); code != exitPartial {
		t.Fatalf("file:// URLs: exit %d\n%s", code, stderr)
	}
	if got := readIDs(t, out); len(got) != 6 {
		t.Fatalf("file:// conversion: %d rows, want 6", len(got))
	}
}

// TestConvertS3 converts to and from a real S3 server (versitygw): per
// shard into s3:// in every format, then back from s3:// into one local
// file, which must equal the direct local conversion.
func TestConvertS3(t *testing.T) {
	s3 := testenv.StartS3(t)
	bucket := s3.Bucket(t)
	in := corpus(t)
	direct := filepath.Join(t.TempDir(), "direct.jsonl")
	if _, stderr, code, _ := convertRun(t, "convert", "--in", in, "--out", direct); code != exitPartial {
		t.Fatalf("local: exit %d\n%s", code, stderr)
	}
	want, _ := os.ReadFile(direct)
	for _, format := range []string{"parquet", "arrow", "jsonl"} {
		prefix := bucket + "/conv-" + format + "/"
		if _, stderr, code, _ := convertRunEnv(t, s3.Env(), "convert", "--in", in, "--out", prefix, "--format", format); code != exitPartial {
			t.Fatalf("%s to s3: exit %d\n%s", format, code, stderr)
		}
		objects, _ := filepath.Glob(filepath.Join(s3.Dir, strings.TrimPrefix(bucket, "s3://"), "conv-"+format, "*."+format))
		if len(objects) != 2 { // a, b; sub/c is one level down
			t.Fatalf("%s: objects %v", format, objects)
		}
		if format == "arrow" {
			continue // convert reads Parquet and JSON Lines, not Arrow
		}
		back := filepath.Join(t.TempDir(), "back.jsonl")
		if _, stderr, code, _ := convertRunEnv(t, s3.Env(), "convert", "--in", prefix, "--out", back); code != 0 {
			t.Fatalf("%s from s3: exit %d\n%s", format, code, stderr)
		}
		got, _ := os.ReadFile(back)
		// The documents without an id get file:row ids: the file differs.
		norm := func(b []byte) string {
			var keep []string
			for _, l := range strings.Split(string(b), "\n") {
				if !strings.Contains(l, ":2\"") {
					keep = append(keep, l)
				}
			}
			return strings.Join(keep, "\n")
		}
		if norm(got) != norm(want) || !bytes.Contains(got, []byte("délta 😀")) {
			t.Fatalf("%s round trip through s3:\n%s\nwant\n%s", format, got, want)
		}
	}
}

// TestParquetS3RowGroups reads a Parquet shard of several row groups, whose
// column chunks take several read buffers each, from the S3 server: the
// reader announces each row group's chunks and reads each through one GET
// (blobstore.ReaderAt.Expect). Every row must come back as read from disk.
func TestParquetS3RowGroups(t *testing.T) {
	s3 := testenv.StartS3(t)
	bucket := s3.Bucket(t)
	s3.Setenv(t)

	// ~14 MB of text that compresses about 2:1 (hex digits), 1 KB a row.
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for i := range 14000 {
		b := make([]byte, 512)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		fmt.Fprintf(&sb, "{\"id\":\"r%d\",\"text\":\"%x\",\"n\":%d}\n", i, b, i*7)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.jsonl"), sb.String())
	local := filepath.Join(dir, "rg.parquet")
	if _, stderr, code, _ := convertRun(t, "convert", "--in", filepath.Join(dir, "in.jsonl"), "--out", local, "--keep", "n", "--row-group-mb", "4"); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// The shape this test is about: several row groups, text chunks over
	// the reader's 2 MiB buffer.
	f, err := os.Open(local)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	rgs := pf.Metadata().RowGroups
	if len(rgs) < 3 || rgs[0].Columns[1].MetaData.TotalCompressedSize < 2<<20 {
		t.Fatalf("%d row groups, first text chunk %d bytes: want ≥ 3 and > 2 MiB", len(rgs), rgs[0].Columns[1].MetaData.TotalCompressedSize)
	}
	obj := filepath.Join(s3.Dir, strings.TrimPrefix(bucket, "s3://"), "pq", "rg.parquet")
	data, _ := os.ReadFile(local)
	writeFile(t, obj, string(data))

	want := readIDs(t, local, "n")
	got := readIDs(t, bucket+"/pq/rg.parquet", "n")
	if len(got) != 14000 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d rows from s3, %d from disk; they differ", len(got), len(want))
	}
}
