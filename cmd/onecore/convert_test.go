package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/readers"
	"github.com/onecore-dev/onecore/writers"
)

// convertRun runs the onecore binary and returns stdout, stderr, the exit
// code and the child's peak RSS in bytes.
func convertRun(t *testing.T, args ...string) (string, string, int, int64) {
	t.Helper()
	return convertRunEnv(t, nil, args...)
}

// convertRunEnv is convertRun with extra environment variables.
func convertRunEnv(t *testing.T, env []string, args ...string) (string, string, int, int64) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10 // KiB on Linux
	}
	return out.String(), errb.String(), code, rss
}

func writeFile(t *testing.T, path string, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	var buf bytes.Buffer
	switch {
	case strings.HasSuffix(path, ".gz"):
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(content))
		zw.Close()
	case strings.HasSuffix(path, ".zst"):
		zw, _ := zstd.NewWriter(&buf)
		zw.Write([]byte(content))
		zw.Close()
	default:
		buf.WriteString(content)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLineSummary(t *testing.T, stdout string) writers.Summary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var s writers.Summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("last stdout line is not the JSON summary: %q", stdout)
	}
	return s
}

func readIDs(t *testing.T, path string, keep ...string) []string {
	t.Helper()
	r, err := readers.Open(path, readers.Options{Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ids []string
	for {
		d, err := r.Next()
		if err == io.EOF {
			return ids
		}
		if err != nil {
			t.Fatal(err)
		}
		s := d.ID + "=" + d.Text
		for _, k := range d.Keep {
			if k.Valid {
				s += "|" + k.S
			} else {
				s += "|∅"
			}
		}
		ids = append(ids, s)
	}
}

// corpus writes a small tree of shards: 6 good rows, 1 bad row, one
// ignored hidden file.
func corpus(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "in")
	writeFile(t, filepath.Join(dir, "a.jsonl"), `{"id":"a1","text":"alpha","lang":"en"}`+"\n"+`{broken`+"\n"+`{"id":"a2","text":"beta"}`+"\n")
	writeFile(t, filepath.Join(dir, "b.jsonl.gz"), `{"id":"b1","text":"gamma","lang":"fr"}`+"\n")
	writeFile(t, filepath.Join(dir, "sub", "c.jsonl.zst"), `{"id":"c1","text":"délta 😀","lang":{"x":1}}`+"\n"+`{"id":"c2","text":""}`+"\n"+`{"text":"no id"}`+"\n")
	writeFile(t, filepath.Join(dir, ".hidden.jsonl"), `{"id":"h","text":"ignored"}`+"\n")
	return dir
}

func TestConvertMerged(t *testing.T) {
	in := corpus(t)
	out := filepath.Join(t.TempDir(), "all.parquet")
	rej := filepath.Join(t.TempDir(), "rejects.jsonl")
	stdout, stderr, code, _ := convertRun(t, "convert", "--in", in, "--out", out, "--keep", "lang", "--json", "--rejects", rej)
	if code != exitPartial {
		t.Fatalf("exit %d, want %d (one bad row)\n%s", code, exitPartial, stderr)
	}
	want := writers.Summary{RowsIn: 7, RowsOut: 6, Rejected: 1, Files: 3}
	if s := lastLineSummary(t, stdout); s != want {
		t.Fatalf("summary %+v, want %+v", s, want)
	}
	got := readIDs(t, out, "lang")
	c := filepath.Join(in, "sub", "c.jsonl.zst")
	wantRows := []string{"a1=alpha|en", "a2=beta|∅", "b1=gamma|fr", `c1=délta 😀|{"x":1}`, "c2=|∅", c + ":2=no id|∅"}
	if fmt.Sprint(got) != fmt.Sprint(wantRows) {
		t.Fatalf("rows %q, want %q", got, wantRows)
	}
	data, _ := os.ReadFile(rej)
	var r map[string]any
	if err := json.Unmarshal(data, &r); err != nil || r["file"] != filepath.Join(in, "a.jsonl") || r["row"] != 1.0 || r["kind"] != "row" || r["excerpt"] != "{broken" {
		t.Fatalf("rejects file: %s", data)
	}
	if !strings.Contains(stderr, "1 rows rejected") {
		t.Errorf("stderr does not say what was rejected: %s", stderr)
	}
}

func TestConvertPerShard(t *testing.T) {
	in := corpus(t)
	outDir := filepath.Join(t.TempDir(), "parts") + "/"
	stdout, stderr, code, _ := convertRun(t, "convert", "--in", in, "--out", outDir, "--format", "jsonl", "--json")
	if code != exitPartial {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if s := lastLineSummary(t, stdout); s.RowsOut != 6 || s.Files != 3 {
		t.Fatalf("summary %+v", s)
	}
	var files []string
	filepath.WalkDir(outDir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(outDir, p)
			files = append(files, rel)
		}
		return nil
	})
	if fmt.Sprint(files) != "[a.jsonl b.jsonl sub/c.jsonl]" {
		t.Fatalf("parts %v", files)
	}
	if got := readIDs(t, filepath.Join(outDir, "sub", "c.jsonl")); len(got) != 3 || got[0] != "c1=délta 😀" {
		t.Fatalf("sub/c.jsonl: %q", got)
	}
	// --jobs converts shards concurrently into the same files
	jobsDir := filepath.Join(t.TempDir(), "jobs") + "/"
	stdout2, stderr, code, _ := convertRun(t, "convert", "--in", in, "--out", jobsDir, "--format", "jsonl", "--json", "--jobs", "3")
	if code != exitPartial || lastLineSummary(t, stdout2) != lastLineSummary(t, stdout) {
		t.Fatalf("--jobs 3: exit %d, summary %s vs %s\n%s", code, stdout2, stdout, stderr)
	}
	for _, f := range files {
		a, _ := os.ReadFile(filepath.Join(outDir, f))
		b, _ := os.ReadFile(filepath.Join(jobsDir, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs with --jobs 3", f)
		}
	}
	// a clean conversion back to Arrow exits 0 and leaves no temp files
	arrowOut := filepath.Join(t.TempDir(), "x.arrow")
	if _, stderr, code, _ := convertRun(t, "convert", "--in", outDir, "--out", arrowOut); code != 0 {
		t.Fatalf("clean run exit %d: %s", code, stderr)
	}
	if ents, _ := os.ReadDir(filepath.Dir(arrowOut)); len(ents) != 1 {
		t.Fatalf("output dir holds %d entries", len(ents))
	}
}

func TestConvertBadFile(t *testing.T) {
	dir := t.TempDir()
	var content strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&content, `{"id":"r%d","text":"row %d %s"}`+"\n", i, i, strings.Repeat("z", i%100))
	}
	good := filepath.Join(dir, "in", "good.jsonl")
	writeFile(t, good, `{"id":"g","text":"fine"}`+"\n")
	bad := filepath.Join(dir, "in", "bad.jsonl.gz")
	writeFile(t, bad, content.String())
	data, _ := os.ReadFile(bad)
	os.WriteFile(bad, data[:len(data)/2], 0o644) // truncated gzip stream
	out := filepath.Join(dir, "out.jsonl.zst")
	rej := filepath.Join(dir, "rej.jsonl")
	stdout, stderr, code, _ := convertRun(t, "convert", "--in", filepath.Join(dir, "in"), "--out", out, "--json", "--rejects", rej)
	if code != exitPartial {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := lastLineSummary(t, stdout)
	if s.BadFiles != 1 || s.Files != 2 || s.RowsIn != s.RowsOut+s.Rejected || s.RowsOut < 2 {
		t.Fatalf("summary %+v", s)
	}
	if !strings.Contains(stderr, bad) {
		t.Errorf("stderr does not name the bad file: %s", stderr)
	}
	if got := readIDs(t, out); int64(len(got)) != s.RowsOut || got[0] != "r0=row 0 " {
		t.Fatalf("%d rows out, summary says %d (first %q)", len(got), s.RowsOut, got[0])
	}
	rejData, _ := os.ReadFile(rej)
	if !strings.Contains(string(rejData), `"kind":"file"`) || !strings.Contains(string(rejData), bad) {
		t.Fatalf("rejects file: %s", rejData)
	}
}

func TestConvertUsageErrors(t *testing.T) {
	in := corpus(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"convert", "--out", filepath.Join(dir, "x.parquet")},
		{"convert", "--in", in},
		{"convert", "--in", in, "--out", filepath.Join(dir, "x.csv")},
		{"convert", "--in", in, "--out", filepath.Join(dir, "x.parquet"), "--keep", "id"},
		{"convert", "--in", in, "--out", filepath.Join(dir, "x.parquet"), "--format", "xml"},
		{"convert", "--in", filepath.Join(dir, "nothing*.jsonl"), "--out", filepath.Join(dir, "x.parquet")},
		{"convert", "--in", in, "--out", filepath.Join(dir, "x.parquet"), "--utf8", "ignore"},
		{"convert", "--in", in, "--out", filepath.Join(dir, "parts") + "/", "--jobs", "0"},
		{"convert", "--in", in, "--out", in, "--format", "jsonl"}, // a.jsonl would replace itself
	} {
		_, stderr, code, _ := convertRun(t, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, code, exitUsage, stderr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("usage errors left files behind: %v", ents)
	}
}

// genCorpus writes a JSONL.zst file of random documents until the
// compressed file reaches minBytes, and returns the uncompressed size. The
// text is random letters from a 64-character alphabet, which zstd barely
// compresses, so the file is large without taking long to generate.
func genCorpus(t testing.TB, path string, minBytes int64) int64 {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cw := &countWriter{w: f}
	zw, _ := zstd.NewWriter(cw, zstd.WithEncoderLevel(zstd.SpeedFastest))
	bw := bufio.NewWriterSize(zw, 1<<20)
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -"
	rng := rand.New(rand.NewPCG(4, 2))
	var total int64
	var line []byte
	for i := 0; cw.n < minBytes; i++ {
		line = fmt.Appendf(line[:0], `{"id":"doc-%d","lang":"xx","text":"`, i)
		n := 500 + rng.IntN(3000)
		for j := 0; j < n; j += 8 {
			x := rng.Uint64()
			for k := 0; k < 8; k++ {
				line = append(line, alphabet[x&63])
				x >>= 8
			}
		}
		line = append(line, "\"}\n"...)
		bw.Write(line)
		total += int64(len(line))
		if i%1000 == 0 {
			bw.Flush()
		}
	}
	bw.Flush()
	zw.Close()
	return total
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// TestConvertMemory converts a ≥200 MB JSONL.zst file (≥200 MB compressed,
// more uncompressed) to Parquet and checks the child's peak RSS stays under
// 300 MB. ONECORE_CONVERT_MEM_MB changes the size (for the measurements in
// the notes).
func TestConvertMemory(t *testing.T) {
	mb := int64(200)
	if v := os.Getenv("ONECORE_CONVERT_MEM_MB"); v != "" {
		fmt.Sscan(v, &mb)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "big.jsonl.zst")
	start := time.Now()
	raw := genCorpus(t, in, mb<<20)
	st, _ := os.Stat(in)
	t.Logf("generated %d MB JSONL (%d MB zstd) in %v", raw>>20, st.Size()>>20, time.Since(start).Round(time.Millisecond))
	out := filepath.Join(dir, "big.parquet")
	start = time.Now()
	stdout, stderr, code, rss := convertRun(t, "convert", "--in", in, "--out", out, "--keep", "lang", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := lastLineSummary(t, stdout)
	wall := time.Since(start)
	t.Logf("converted %d rows in %v (%.0f MB/s of JSONL wall), peak RSS %d MB", s.RowsOut, wall.Round(time.Millisecond), float64(raw)/1e6/wall.Seconds(), rss>>20)
	if s.RowsIn == 0 || s.RowsOut != s.RowsIn {
		t.Fatalf("summary %+v", s)
	}
	if rss <= 0 || rss >= 300<<20 {
		t.Fatalf("peak RSS %d MB, want < 300 MB", rss>>20)
	}
}

// TestConvertDeterministic: a Parquet output has the same bytes whatever
// the number of cores converting it (pages are compressed concurrently),
// from JSONL and from Parquet input, over several pages and row groups.
func TestConvertDeterministic(t *testing.T) {
	dir := t.TempDir()
	var content strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; content.Len() < 6<<20; i++ {
		fmt.Fprintf(&content, `{"id":"r%d","text":"%s","lang":`, i, strings.Repeat("word ", rng.IntN(400)))
		if i%5 == 0 {
			content.WriteString("null}\n")
		} else {
			fmt.Fprintf(&content, `"l%d"}`+"\n", i%7)
		}
	}
	in := filepath.Join(dir, "in.jsonl")
	writeFile(t, in, content.String())
	convert := func(in, out string, procs int) []byte {
		t.Helper()
		_, stderr, code, _ := convertRunEnv(t, []string{fmt.Sprintf("GOMAXPROCS=%d", procs)},
			"convert", "--in", in, "--out", out, "--keep", "lang", "--row-group-mb", "2")
		if code != 0 {
			t.Fatalf("convert %s with GOMAXPROCS=%d: exit %d\n%s", in, procs, code, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := convert(in, filepath.Join(dir, "p1.parquet"), 1)
	if four := convert(in, filepath.Join(dir, "p4.parquet"), 4); !bytes.Equal(one, four) {
		t.Fatalf("JSONL → Parquet: %d bytes with 1 core, %d different bytes with 4", len(one), len(four))
	}
	again1 := convert(filepath.Join(dir, "p1.parquet"), filepath.Join(dir, "q1.parquet"), 1)
	if again4 := convert(filepath.Join(dir, "p1.parquet"), filepath.Join(dir, "q4.parquet"), 4); !bytes.Equal(again1, again4) {
		t.Fatalf("Parquet → Parquet: output differs between 1 and 4 cores")
	}
	if !bytes.Equal(one, again1) {
		t.Errorf("Parquet → Parquet did not reproduce the JSONL → Parquet output")
	}
}

// TestConvertInterrupt: SIGINT mid-run exits 130 and leaves neither the
// output nor a temporary file.
func TestConvertInterrupt(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl.zst")
	genCorpus(t, in, 64<<20)
	outDir := filepath.Join(dir, "out")
	os.Mkdir(outDir, 0o755)
	cmd := exec.Command(testenv.Binary(t), "convert", "--in", in, "--out", filepath.Join(outDir, "x.parquet"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ents, _ := os.ReadDir(outDir); len(ents) > 0 { // the temp file: conversion under way
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no temporary output appeared")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want %d\n%s", err, exitInterrupted, errb.String())
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Fatalf("interrupted run left %v", ents)
	}
}
