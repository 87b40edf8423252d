package readers

import (
	"os"
	"path/filepath"
	"strings"
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
