package blobstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestNormalize: local paths and file:// URLs are local, object URLs lose
// their query, an unknown scheme is a usage error naming the flag.
func TestNormalize(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"data/x.jsonl", "data/x.jsonl", ""},
		{"/abs/dir/", "/abs/dir/", ""},
		{"file:///abs/dir/", "/abs/dir/", ""},
		{"file:///abs/x.parquet", "/abs/x.parquet", ""},
		{"file://host/x", "", "want file:///absolute/path"},
		{"s3://b/out/", "s3://b/out/", ""},
		{"s3://b2/p?region=eu-west-1", "s3://b2/p", ""},
		{"gs://b/p", "gs://b/p", ""},
		{"azblob://c/p", "azblob://c/p", ""},
		{"s3:///nobucket", "", "no bucket"},
		{"hdfs://nn/path", "", `unknown scheme "hdfs://"`},
		{"S4://b/x", "", `unknown scheme "s4://"`},
	} {
		got, err := Normalize("--in", c.in)
		if c.err != "" {
			var ue *UsageError
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--in "+c.in) {
				t.Errorf("Normalize(%q) = %q, %v; want a usage error containing %q and naming the flag", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := Normalize("--in", "s3://b2/q?region=us-west-2"); err == nil {
		t.Error("two different settings for one bucket accepted")
	}
	if got := Join("s3://b", "_done", "x.json"); got != "s3://b/_done/x.json" {
		t.Errorf("Join = %q", got)
	}
	if got := Join("s3://b/out", "p.parquet"); got != "s3://b/out/p.parquet" {
		t.Errorf("Join = %q", got)
	}
}

// TestS3Objects exercises every operation against a real S3 server
// (versitygw): conditional creates, listing, ranged and streamed reads,
// uploads that appear only when committed.
func TestS3Objects(t *testing.T) {
	s3 := testenv.StartS3(t)
	s3.Setenv(t)
	exerciseObjects(t, s3.Bucket(t))
}

// exerciseObjects runs every operation onecore needs from object storage
// in the empty bucket root (SCHEME://NAME) and checks its results.
func exerciseObjects(t *testing.T, root string) {
	t.Helper()
	ctx := context.Background()
	p := Join(root, "dir", "a.json")
	if _, err := ReadAll(ctx, p); !IsNotExist(err) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing object: %v", err)
	}
	if err := WriteAll(ctx, p, []byte("one"), true); err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(ctx, p, []byte("two"), true); !IsPrecondition(err) {
		t.Fatalf("second conditional create: %v, want a precondition failure", err)
	}
	if b, err := ReadAll(ctx, p); err != nil || string(b) != "one" {
		t.Fatalf("after a failed conditional create: %q, %v", b, err)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), (PartSize*2+12345)/16) // a multipart upload
	w, err := Create(ctx, Join(root, "dir", "big.bin"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(big); err != nil {
		t.Fatal(err)
	}
	if ok, _ := Exists(ctx, Join(root, "dir", "big.bin")); ok {
		t.Fatal("an upload is visible before Commit")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	aw, err := Create(ctx, Join(root, "dir", "aborted.bin"), false)
	if err != nil {
		t.Fatal(err)
	}
	aw.Write(big[:PartSize+1])
	aw.Abort()
	if ok, _ := Exists(ctx, Join(root, "dir", "aborted.bin")); ok {
		t.Fatal("an aborted upload is visible")
	}

	// Conditional creates through Create: refused when the object is there,
	// for a single-part object and a multipart one, leaving it as it was.
	for _, size := range []int{10, PartSize + 10} {
		w, err := Create(ctx, Join(root, "dir", "big.bin"), true)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(big[:size])
		if err := w.Commit(); !IsPrecondition(err) {
			t.Fatalf("conditional create of %d bytes over an existing object: %v, want a precondition failure", size, err)
		}
	}
	if got, err := ReadAll(ctx, Join(root, "dir", "big.bin")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("object after refused conditional creates: %d bytes, %v", len(got), err)
	}

	objs, err := List(ctx, Join(root, "dir"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].Rel != "a.json" || objs[1].Rel != "big.bin" || objs[1].Size != int64(len(big)) {
		t.Fatalf("List = %+v", objs)
	}
	ra, err := OpenReaderAt(ctx, objs[1].Path, -1)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1000)
	if n, err := ra.ReadAt(buf, PartSize-500); n != 1000 || err != nil || !bytes.Equal(buf, big[PartSize-500:PartSize+500]) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if n, err := ra.ReadAt(buf, int64(len(big))-10); n != 10 || err != io.EOF {
		t.Fatalf("ReadAt at the end = %d, %v; want 10, EOF", n, err)
	}
	checkExpect(t, ra, big)
	st, err := OpenStream(ctx, objs[1].Path, objs[1].Size)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(st)
	st.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Stream: %d bytes, %v", len(got), err)
	}
	if err := Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := Delete(ctx, p); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
}

// checkExpect reads data (at least 5 MB) through ra with announced ranges,
// in the patterns a Parquet reader produces and in some it should not, and
// checks every byte read, the GETs it took and the streams left open.
func checkExpect(t *testing.T, ra *ReaderAt, data []byte) {
	t.Helper()
	read := func(off int64, n int) {
		t.Helper()
		buf := make([]byte, n)
		got, err := ra.ReadAt(buf, off)
		want := data[off:min(off+int64(n), int64(len(data)))]
		if got != len(want) || !bytes.Equal(buf[:got], want) || (err != nil && (err != io.EOF || got == n)) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v", n, off, got, err)
		}
	}
	getsFor := func(what string, want int64, f func()) {
		t.Helper()
		g0 := gets.Load()
		f()
		if n := gets.Load() - g0; n != want {
			t.Errorf("%s: %d GETs, want %d", what, n, want)
		}
	}
	open := func(want int) {
		t.Helper()
		if len(ra.streams) != want {
			t.Errorf("%d streams open, want %d", len(ra.streams), want)
		}
	}

	a := Range{Off: 100, Len: 3_000_000}
	b := Range{Off: a.end(), Len: 1_500_000}
	// The last two are ignored: outside the object.
	ra.Expect([]Range{a, b, {Off: -1, Len: 5}, {Off: int64(len(data)) - 10, Len: 20}})
	getsFor("two announced ranges read front to back, interleaved, in uneven steps", 2, func() {
		for oa, ob := a.Off, b.Off; oa < a.end() || ob < b.end(); {
			if oa < a.end() {
				n := min(65536+7, int(a.end()-oa))
				read(oa, n)
				oa += int64(n)
			}
			if ob < b.end() {
				n := min(100_000, int(b.end()-ob))
				read(ob, n)
				ob += int64(n)
			}
		}
	})
	open(0) // both read to their end: closed, connections reusable
	getsFor("a stream, a small skip, a jump ahead, a read behind", 3, func() {
		read(a.Off, 1000)
		read(a.Off+1000+5000, 1000)
		read(a.Off+2_000_000, 1000)
		read(a.Off+10, 1000)
	})
	getsFor("a read across a range's end and one outside every range", 2, func() {
		read(a.end()-500, 1000)
		read(50, 10)
	})
	open(1)
	ra.Expect(nil)
	open(0)

	var many []Range
	for i := range maxStreams + 2 {
		many = append(many, Range{Off: int64(i) * 100_000, Len: 50_000})
	}
	ra.Expect(many)
	getsFor("more ranges than streams, each read in two steps", int64(len(many)+2), func() {
		for _, g := range many {
			read(g.Off, 10)
		}
		open(maxStreams)
		for _, g := range many {
			read(g.Off+10, int(g.Len-10))
		}
	})
	open(0)
	ra.Close()
}

// TestS3Faults puts a proxy that throttles (503 SlowDown), drops
// connections and cuts bodies short between onecore and the server: every
// operation still succeeds, and the retries are counted.
func TestS3Faults(t *testing.T) {
	s3 := testenv.StartS3(t)
	proxy := testenv.StartFaultProxy(t, s3.Endpoint, 3)
	s3.SetenvFor(t, proxy.URL)
	t.Setenv("ONECORE_RETRY_MAX_BACKOFF", "20ms")
	ctx := context.Background()
	root := s3.Bucket(t)
	before := Retries()
	data := bytes.Repeat([]byte("line of text\n"), 200000) // 2.6 MB
	// announced-range GETs cut short
	var streamCuts int64
	for i := range 4 {
		p := Join(root, "f", string(rune('a'+i))+".txt")
		w, err := Create(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		if err := w.Commit(); err != nil {
			t.Fatalf("upload through faults: %v", err)
		}
		st, err := OpenStream(ctx, p, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(st)
		st.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("stream through faults: %d bytes, %v", len(got), err)
		}
		ra, err := OpenReaderAt(ctx, p, -1)
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < int64(len(data)); off += 700000 {
			buf := make([]byte, 100000)
			n, err := ra.ReadAt(buf, off)
			if (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
				t.Fatalf("ReadAt through faults: %v", err)
			}
		}
		// An announced range, read front to back from one GET that the
		// proxy may cut short: reopened where it stopped.
		ra.Expect([]Range{{Off: 10, Len: int64(len(data)) - 20}})
		cut0 := proxy.Cut.Load()
		for off := int64(10); off < int64(len(data))-10; off += 65536 {
			buf := make([]byte, min(65536, int64(len(data))-10-off))
			n, err := ra.ReadAt(buf, off)
			if err != nil || !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
				t.Fatalf("ReadAt of an announced range through faults: %v", err)
			}
		}
		ra.Close()
		streamCuts += proxy.Cut.Load() - cut0
		if err := WriteAll(ctx, p+".marker", []byte("m"), true); err != nil && !IsPrecondition(err) {
			t.Fatalf("conditional create through faults: %v", err)
		}
	}
	// A multipart upload (three parts) through the faults.
	big := bytes.Repeat([]byte("0123456789abcdef"), (2*PartSize+4321)/16)
	p := Join(root, "f", "big.bin")
	w, err := Create(ctx, p, true)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(big)
	if err := w.Commit(); err != nil {
		t.Fatalf("multipart upload through faults: %v", err)
	}
	if got, err := ReadAll(ctx, p); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("multipart upload through faults read back: %d bytes, %v", len(got), err)
	}
	after := Retries()
	t.Logf("faults injected: %d slow, %d dropped, %d cut; retries: %+v", proxy.Slow.Load(), proxy.Dropped.Load(), proxy.Cut.Load(), after)
	if proxy.Injected() == 0 || after.Total() <= before.Total() {
		t.Fatalf("no faults or no retries counted: injected %d, retries %+v → %+v", proxy.Injected(), before, after)
	}
	if streamCuts == 0 {
		t.Error("no announced-range GET was cut short: the reopening of a stream went untested")
	}
	if after.Throttled == before.Throttled || after.Network == before.Network {
		t.Errorf("retries by cause %+v → %+v: want both throttling and network retries", before, after)
	}
}
