package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestKeepRenameCLI: --keep url:link writes each row's input url into the
// column link, next to --keep url's own column, for every task and output
// format, whatever the input format (Parquet, JSONL.zst, JSONL), from flags
// or a job file (keep: [url:link, url]); a renaming
// that collides is a usage error before the model loads.
func TestKeepRenameCLI(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	docs := genDocs(12, 3)
	writeShards(t, in, docs, 3)
	wantURL := map[string]string{}
	for _, d := range docs {
		wantURL[d.id] = d.url
	}
	for _, c := range []struct{ task, out, format string }{
		{"classify", "r.jsonl", ""},
		{"score", "r.parquet", ""},
		{"embed", "parts/", "arrow"},
	} {
		out := filepath.Join(tmp, c.task, c.out)
		args := []string{c.task, "--model", model, "--in", in, "--out", out, "--keep", "url:link,url", "--workers", "1", "--progress", "none"}
		if c.task == "embed" { // the same renaming from a job file
			job := filepath.Join(tmp, "embed.yaml")
			if err := os.WriteFile(job, []byte("task: embed\nkeep: [url:link, url]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			args = []string{"extract", "--job", job, "--model", model, "--in", in, "--out", out, "--workers", "1", "--progress", "none"}
		}
		if c.format != "" {
			args = append(args, "--format", c.format)
		}
		if _, stderr, code := cliRun(t, nil, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", c.task, code, stderr)
		}
		rows := readKeepRows(t, out, c.format)
		if len(rows) != len(docs) {
			t.Fatalf("%s: %d rows, want %d", c.task, len(rows), len(docs))
		}
		for _, r := range rows {
			if want := wantURL[r["id"]]; want == "" || r["link"] != want || r["url"] != want {
				t.Errorf("%s: row %v: link and url want %q", c.task, r, want)
			}
		}
	}
	nope := filepath.Join(tmp, "no-model")
	for _, keep := range []string{"url:label", "url:link,text:link", "url:", ":x", "url:row"} {
		_, stderr, code := cliRun(t, nil, "classify", "--model", nope, "--in", in, "--out", filepath.Join(tmp, "bad.jsonl"), "--keep", keep)
		if code != 2 || strings.Contains(stderr, "no-model") {
			t.Errorf("--keep %s: exit %d, want a usage error (2) before the model loads\n%s", keep, code, stderr)
		}
	}
}

// readKeepRows reads id, url and link of every row of a results file
// (.jsonl) or directory of parts (format), as strings ("<null>" for null).
func readKeepRows(t *testing.T, path, format string) []map[string]string {
	t.Helper()
	var rows []map[string]string
	if strings.HasSuffix(path, ".jsonl") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			r := map[string]string{}
			for _, k := range []string{"id", "url", "link"} {
				if s, ok := m[k].(string); ok {
					r[k] = s
				} else {
					r[k] = "<null>"
				}
			}
			rows = append(rows, r)
		}
		return rows
	}
	files := []string{path}
	if format != "" {
		files, _ = filepath.Glob(filepath.Join(path, "part-*."+format))
	} else {
		format = "parquet"
	}
	for _, f := range files {
		err := copyRecords(f, format, func(rec arrow.RecordBatch) error {
			cols := map[string]*array.String{}
			for _, k := range []string{"id", "url", "link"} {
				if idx := rec.Schema().FieldIndices(k); len(idx) == 1 {
					cols[k] = rec.Column(idx[0]).(*array.String)
				}
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				r := map[string]string{}
				for _, k := range []string{"id", "url", "link"} {
					if c := cols[k]; c != nil && c.IsValid(i) {
						r[k] = c.Value(i)
					} else {
						r[k] = "<null>"
					}
				}
				rows = append(rows, r)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return rows
}
