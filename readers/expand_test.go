package readers

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFormatOf(t *testing.T) {
	for name, want := range map[string]Format{
		"a.parquet": FormatParquet, "A.PARQUET": FormatParquet, "a.jsonl": FormatJSONL, "a.ndjson": FormatJSONL,
		"a.json": FormatJSONL, "a.jsonl.gz": FormatJSONLGzip, "a.json.gzip": FormatJSONLGzip, "a.jsonl.zst": FormatJSONLZstd,
		"a.ndjson.zstd": FormatJSONLZstd, "a.txt": FormatUnknown, "a.gz": FormatUnknown, "a.csv.zst": FormatUnknown, "jsonl": FormatUnknown,
	} {
		if got := FormatOf(name); got != want {
			t.Errorf("FormatOf(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{
		"b/2.jsonl.zst", "b/1.parquet", "a.jsonl", "c/d/e.jsonl.gz", "notes.txt",
		".hidden.jsonl", "_SUCCESS", "_tmp/x.jsonl", ".git/y.jsonl", "b/.z.jsonl.tmp-123",
	} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte("{}\n"), 0o644)
	}
	rel := func(shards []Shard) string {
		var out []string
		for _, s := range shards {
			r, _ := filepath.Rel(dir, s.Path)
			out = append(out, r+"("+s.Rel+","+s.Format.String()+")")
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		inputs []string
		want   string
		err    string
	}{
		{inputs: []string{dir}, want: "a.jsonl(a.jsonl,jsonl) b/1.parquet(b/1.parquet,parquet) b/2.jsonl.zst(b/2.jsonl.zst,jsonl.zst) c/d/e.jsonl.gz(c/d/e.jsonl.gz,jsonl.gz)"},
		// order of inputs does not matter; duplicates collapse
		{inputs: []string{filepath.Join(dir, "c"), filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "c", "d", "e.jsonl.gz")}, want: "a.jsonl(a.jsonl,jsonl) c/d/e.jsonl.gz(d/e.jsonl.gz,jsonl.gz)"},
		{inputs: []string{filepath.Join(dir, "b", "*")}, want: "b/1.parquet(1.parquet,parquet) b/2.jsonl.zst(2.jsonl.zst,jsonl.zst)"},
		{inputs: []string{filepath.Join(dir, "*.jsonl")}, want: "a.jsonl(a.jsonl,jsonl)"},
		{inputs: []string{filepath.Join(dir, "notes.txt")}, err: "unknown format"},
		{inputs: []string{filepath.Join(dir, "missing.jsonl")}, err: "no such file"},
		{inputs: []string{filepath.Join(dir, "*.csv")}, err: "no file matches"},
		{inputs: []string{filepath.Join(dir, "_tmp")}, want: "_tmp/x.jsonl(x.jsonl,jsonl)"}, // named explicitly: its own files count
		{inputs: []string{filepath.Join(dir, "c", "d"), filepath.Join(dir, ".git", "nothing")}, err: "no such file"},
	}
	for _, tc := range tests {
		shards, err := Expand(tc.inputs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.inputs, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.inputs, err)
			continue
		}
		if got := rel(shards); got != tc.want {
			t.Errorf("%v:\n got %s\nwant %s", tc.inputs, got, tc.want)
		}
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := Expand([]string{empty}); err == nil || !strings.Contains(err.Error(), "no .parquet or .jsonl") {
		t.Errorf("empty dir: %v", err)
	}
}

// TestExpandLinksAndSpecialFiles: links to files and directories are
// followed, cycles end with a warning, a file reached twice is one shard,
// dangling links and non-regular files in listings are skipped with a
// warning, and a named pipe named explicitly is refused (issue 19.7:
// linked directories and dangling links were skipped without a word, and a
// FIFO with no writer blocked the run forever).
func TestExpandLinksAndSpecialFiles(t *testing.T) {
	tests := []struct {
		name   string
		tree   []string // "path" a file, "path/" a directory, "path -> target" a link, "path|" a FIFO
		inputs []string
		want   string   // shards as path(Rel), space-separated
		warn   []string // substrings of the log, in order
		err    string
	}{
		{name: "linked directory", tree: []string{"ext/c.jsonl", "ext/d/e.jsonl", "in/x.jsonl", "in/more -> ../ext"}, inputs: []string{"in"},
			want: "in/more/c.jsonl(more/c.jsonl) in/more/d/e.jsonl(more/d/e.jsonl) in/x.jsonl(x.jsonl)"},
		{name: "linked file", tree: []string{"ext/c.jsonl", "in/x.jsonl", "in/y.jsonl -> ../ext/c.jsonl"}, inputs: []string{"in"},
			want: "in/x.jsonl(x.jsonl) in/y.jsonl(y.jsonl)"},
		{name: "cycle", tree: []string{"in/x.jsonl", "in/sub/z.jsonl", "in/sub/up -> ..", "in/sub/deeper/top -> ../../..", "in/self -> self"}, inputs: []string{"in"},
			want: "in/sub/z.jsonl(sub/z.jsonl) in/x.jsonl(x.jsonl)",
			warn: []string{`path=in/self reason="symbolic link cycle (-> self)`, "path=in/sub/deeper/top/in reason=\"symbolic link cycle", `path=in/sub/up reason="symbolic link cycle (-> .., a directory above it)`}},
		{name: "same file twice", tree: []string{"in/data/a.jsonl", "in/alias -> data", "in/b.jsonl -> data/a.jsonl"}, inputs: []string{"in", "in/data/a.jsonl"},
			want: "in/data/a.jsonl(data/a.jsonl)",
			warn: []string{`path=in/data/a.jsonl also="in/alias/a.jsonl, in/b.jsonl"`}},
		{name: "same file twice, both linked", tree: []string{"ext/a.jsonl", "in/l1 -> ../ext", "in/l2 -> ../ext"}, inputs: []string{"in"},
			want: "in/l1/a.jsonl(l1/a.jsonl)", warn: []string{"path=in/l1/a.jsonl also=in/l2/a.jsonl"}},
		{name: "dangling", tree: []string{"in/x.jsonl", "in/gone.jsonl -> missing.jsonl", "in/gonedir -> nowhere"}, inputs: []string{"in"},
			want: "in/x.jsonl(x.jsonl)",
			warn: []string{`path=in/gone.jsonl reason="dangling symbolic link (-> missing.jsonl): skipped"`, `path=in/gonedir reason="dangling symbolic link (-> nowhere): skipped"`}},
		{name: "only dangling", tree: []string{"in/gone.jsonl -> missing.jsonl"}, inputs: []string{"in"},
			err: "no .parquet or .jsonl", warn: []string{"path=in/gone.jsonl reason=\"dangling"}},
		{name: "dangling named", tree: []string{"in/gone.jsonl -> missing.jsonl"}, inputs: []string{"in/gone.jsonl"}, err: "no such file"},
		{name: "fifo in directory", tree: []string{"in/x.jsonl", "in/pipe.jsonl|", "in/d/pipe2.parquet|", "in/other|"}, inputs: []string{"in"},
			want: "in/x.jsonl(x.jsonl)",
			warn: []string{`path=in/d/pipe2.parquet reason="not a regular file (named pipe): skipped"`, `path=in/pipe.jsonl reason="not a regular file (named pipe): skipped"`}},
		{name: "fifo behind a link", tree: []string{"in/x.jsonl", "p|", "in/p.jsonl -> ../p"}, inputs: []string{"in"},
			want: "in/x.jsonl(x.jsonl)", warn: []string{`path=in/p.jsonl reason="not a regular file (named pipe): skipped"`}},
		{name: "fifo and dangling link by glob", tree: []string{"in/x.jsonl", "in/pipe.jsonl|", "in/gone.jsonl -> missing.jsonl"}, inputs: []string{"in/*.jsonl"},
			want: "in/x.jsonl(x.jsonl)",
			warn: []string{`path=in/gone.jsonl reason="dangling`, `path=in/pipe.jsonl reason="not a regular file (named pipe): skipped"`}},
		{name: "fifo named", tree: []string{"in/pipe.jsonl|"}, inputs: []string{"in/pipe.jsonl"},
			err: `input "in/pipe.jsonl": not a regular file (named pipe)`},
		{name: "fifo named through a link", tree: []string{"p|", "in/p.jsonl -> ../p"}, inputs: []string{"in/p.jsonl"},
			err: `input "in/p.jsonl": not a regular file (named pipe)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir) // paths in messages are relative, as the inputs are
			for _, e := range tc.tree {
				var err error
				switch from, to, isLink := strings.Cut(e, " -> "); {
				case isLink:
					os.MkdirAll(filepath.Dir(from), 0o755)
					err = os.Symlink(to, from)
				case strings.HasSuffix(e, "/"):
					err = os.MkdirAll(e, 0o755)
				case strings.HasSuffix(e, "|"):
					os.MkdirAll(filepath.Dir(e), 0o755)
					err = syscall.Mkfifo(strings.TrimSuffix(e, "|"), 0o644)
				default:
					os.MkdirAll(filepath.Dir(e), 0o755)
					err = os.WriteFile(e, []byte("{\"text\":\"x\"}\n"), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			shards, err := ExpandLog(tc.inputs, slog.New(slog.NewTextHandler(&log, nil)))
			var got []string
			for _, s := range shards {
				got = append(got, s.Path+"("+s.Rel+")")
			}
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Errorf("error %v", err)
			case strings.Join(got, " ") != tc.want:
				t.Errorf("shards\n got %s\nwant %s", strings.Join(got, " "), tc.want)
			}
			rest := log.String()
			for _, w := range tc.warn {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("log lacks %q (in order):\n%s", w, log.String())
					break
				}
				rest = rest[i+len(w):]
			}
			if n := strings.Count(log.String(), "\n"); n != len(tc.warn) {
				t.Errorf("%d log lines, want %d:\n%s", n, len(tc.warn), log.String())
			}
		})
	}
}
