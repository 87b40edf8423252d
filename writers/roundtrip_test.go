package writers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/readers"
	"github.com/onecore-dev/onecore/writers"
)

var keep = []string{"lang", "meta"}

// inputRows are JSONL input rows covering the awkward cases: unicode of
// every width, NUL and control characters, JSON-hostile characters, empty
// strings, a 3 MB row, missing ids, null and nested passthrough values.
func inputRows() []map[string]any {
	huge := strings.Repeat("Große Daten, 大きなデータ, 🚀 ", 3<<20/40)
	return []map[string]any{
		{"id": "ascii", "text": "hello world", "lang": "en", "meta": map[string]any{"n": 1, "tags": []any{"a", "b"}}},
		{"id": "unicode", "text": "héllo wörld — 日本語 — עברית — e\u0301 — 😀👩‍👩‍👧 — \u2028\u2029", "lang": "multi"},
		{"id": "hostile", "text": "quote \" backslash \\ slash / nul \x00 bell \x07 tab \t cr \r lf \n end", "lang": "\"\\"},
		{"id": "empty", "text": "", "lang": ""},
		{"text": "no id here", "lang": nil, "meta": nil},
		{"id": "huge", "text": huge, "meta": []any{1.5, true, nil, "x"}},
		{"id": "", "text": "empty id"},
		{"id": 12345, "text": "numeric id", "meta": 7},
	}
}

func writeJSONL(t *testing.T, path string, rows []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	data := buf.Bytes()
	var out bytes.Buffer
	switch {
	case strings.HasSuffix(path, ".gz"):
		zw := gzip.NewWriter(&out)
		zw.Write(data)
		zw.Close()
		data = out.Bytes()
	case strings.HasSuffix(path, ".zst"):
		zw, _ := zstd.NewWriter(&out)
		zw.Write(data)
		zw.Close()
		data = out.Bytes()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readDocs reads every document of a shard, failing on any problem.
func readDocs(t *testing.T, path string) []readers.Document {
	t.Helper()
	r, err := readers.Open(path, readers.Options{Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var docs []readers.Document
	for {
		d, err := r.Next()
		if err == io.EOF {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, d)
	}
}

// writeDocs converts docs to path in its format, in batches of 3 so that
// records and row groups have several chunks.
func writeDocs(t *testing.T, path string, docs []readers.Document, opts writers.Options) {
	t.Helper()
	b, err := writers.NewDocBuilder(keep)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	w, err := writers.Create(path, writers.FormatUnknown, b.Schema(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := range docs {
		b.Append(&docs[i])
		if b.Len() == 3 || i == len(docs)-1 {
			rec := b.NewRecord()
			err := w.Write(rec)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readArrow reads an Arrow IPC file of DocSchema back into documents.
func readArrow(t *testing.T, path string) []readers.Document {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var docs []readers.Document
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		cols := make([]*array.String, rec.NumCols())
		for c := range cols {
			cols[c] = rec.Column(c).(*array.String)
		}
		for row := 0; row < int(rec.NumRows()); row++ {
			d := readers.Document{ID: cols[0].Value(row), Text: cols[1].Value(row)}
			for _, c := range cols[2:] {
				d.Keep = append(d.Keep, readers.Value{S: c.Value(row), Valid: c.IsValid(row)})
			}
			docs = append(docs, d)
		}
	}
	return docs
}

func sameDocs(t *testing.T, what string, got, want []readers.Document) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d docs, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Text != w.Text || fmt.Sprint(g.Keep) != fmt.Sprint(w.Keep) {
			t.Fatalf("%s: doc %d differs:\n got id %q keep %v text %.80q\nwant id %q keep %v text %.80q", what, i, g.ID, g.Keep, g.Text, w.ID, w.Keep, w.Text)
		}
	}
}

// TestRoundTrips: every input format → every output format → read back,
// identical ids, texts and passthrough values (nulls included).
func TestRoundTrips(t *testing.T) {
	dir := t.TempDir()
	rows := inputRows()
	src := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, src, rows)
	want := readDocs(t, src)
	if len(want) != len(rows) {
		t.Fatalf("read %d of %d input rows", len(want), len(rows))
	}
	// spot-check how the input surfaced
	if want[0].Keep[1].S != `{"n":1,"tags":["a","b"]}` || want[4].ID != src+":4" || want[4].Keep[0].Valid || want[7].ID != "12345" || want[7].Keep[1].S != "7" {
		t.Fatalf("unexpected input rendering: %+v / %+v / %+v", want[0].Keep, want[4], want[7])
	}
	inputs := map[string]string{"jsonl": src}
	for _, ext := range []string{".jsonl.gz", ".jsonl.zst"} {
		p := filepath.Join(dir, "in"+ext)
		writeJSONL(t, p, rows)
		inputs[ext[1:]] = p
	}
	pq := filepath.Join(dir, "in.parquet")
	writeDocs(t, pq, want, writers.Options{Plain: writers.DocPlainColumns, RowGroupRows: 4})
	inputs["parquet"] = pq

	for name, in := range inputs {
		docs := readDocs(t, in)
		for i := range docs {
			if strings.HasPrefix(docs[i].ID, in+":") { // default ids name their own input
				docs[i].ID = want[i].ID
			}
		}
		sameDocs(t, "read "+name, docs, want)
		for _, f := range []writers.Format{writers.Parquet, writers.Arrow, writers.JSONL, writers.JSONLZstd} {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(name, ".", "_")+f.Ext())
			writeDocs(t, out, docs, writers.Options{Plain: writers.DocPlainColumns, RowGroupBytes: 1 << 20})
			var back []readers.Document
			if f == writers.Arrow {
				back = readArrow(t, out)
			} else {
				back = readDocs(t, out)
			}
			sameDocs(t, name+" → "+f.String(), back, want)
		}
	}
}

// TestParquetRowGroups: RowGroupBytes and RowGroupRows bound row groups.
func TestParquetRowGroups(t *testing.T) {
	dir := t.TempDir()
	var docs []readers.Document
	for i := 0; i < 100; i++ {
		docs = append(docs, readers.Document{ID: fmt.Sprint(i), Text: strings.Repeat("x", 1000), Keep: make([]readers.Value, 2)})
	}
	for _, tc := range []struct {
		opts writers.Options
		want int
	}{
		{writers.Options{}, 1},
		{writers.Options{RowGroupRows: 10}, 10},
		{writers.Options{RowGroupBytes: 9000}, 12}, // batches of 3 docs ≈ 3 KB: a group closes after 3 batches, 9 docs
	} {
		path := filepath.Join(dir, "rg.parquet")
		writeDocs(t, path, docs, tc.opts)
		f, _ := os.Open(path)
		st, _ := f.Stat()
		pf, err := openParquetGroups(f, st.Size())
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if pf != tc.want {
			t.Errorf("%+v: %d row groups, want %d", tc.opts, pf, tc.want)
		}
		sameDocs(t, "row groups", readDocs(t, path), docs)
	}
}

// TestReadByOthers: DuckDB reads our Parquet, apache-arrow (JS) our Arrow
// IPC; both see the same rows, the declared types and nullability.
func TestReadByOthers(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, src, inputRows())
	docs := readDocs(t, src)
	pq, arr := filepath.Join(dir, "o.parquet"), filepath.Join(dir, "o.arrow")
	writeDocs(t, pq, docs, writers.Options{Plain: writers.DocPlainColumns})
	writeDocs(t, arr, docs, writers.Options{})
	checkReadByOthers(t, pq, arr, docs)
}

// checkReadByOthers reads pq with DuckDB and arr with apache-arrow (JS) and
// checks that both hold docs, with DocSchema(keep)'s types and nullability.
func checkReadByOthers(t *testing.T, pq, arr string, docs []readers.Document) {
	t.Helper()
	mods := testenv.NodeModules(t)

	cmd := exec.Command(testenv.LookPath(t, "node"), filepath.Join("testdata", "read_outputs.js"), pq, arr)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got struct {
		Parquet struct {
			Count      int                  `json:"count"`
			Columns    [][2]string          `json:"columns"`
			Repetition [][2]string          `json:"repetition"`
			Chunks     []map[string]any     `json:"chunks"`
			Rows       []map[string]*string `json:"rows"`
		} `json:"parquet"`
		Arrow struct {
			Count  int                  `json:"count"`
			Fields [][3]any             `json:"fields"`
			Rows   []map[string]*string `json:"rows"`
		} `json:"arrow"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	p, a := got.Parquet, got.Arrow
	if p.Count != len(docs) || a.Count != len(docs) {
		t.Fatalf("counts: parquet %d arrow %d, want %d", p.Count, a.Count, len(docs))
	}
	if fmt.Sprint(p.Columns) != "[[id VARCHAR] [text VARCHAR] [lang VARCHAR] [meta VARCHAR]]" {
		t.Errorf("DuckDB types %v", p.Columns)
	}
	if fmt.Sprint(p.Repetition) != "[[id REQUIRED] [text REQUIRED] [lang OPTIONAL] [meta OPTIONAL]]" {
		t.Errorf("Parquet repetition %v", p.Repetition)
	}
	for _, c := range p.Chunks {
		if c["compression"] != "ZSTD" {
			t.Errorf("column chunk %v not zstd", c)
		}
	}
	if fmt.Sprint(a.Fields) != "[[id Utf8 false] [text Utf8 false] [lang Utf8 true] [meta Utf8 true]]" {
		t.Errorf("Arrow fields %v", a.Fields)
	}
	for _, view := range []struct {
		name string
		rows []map[string]*string
	}{{"duckdb/parquet", p.Rows}, {"apache-arrow/ipc", a.Rows}} {
		for i, d := range docs {
			r := view.rows[i]
			if r["id"] == nil || *r["id"] != d.ID || r["text"] == nil || *r["text"] != d.Text {
				t.Fatalf("%s row %d: id/text differ (got id %v)", view.name, i, r["id"])
			}
			for k, name := range keep {
				v := r[name]
				if (v != nil) != d.Keep[k].Valid || (v != nil && *v != d.Keep[k].S) {
					t.Fatalf("%s row %d %s: got %v, want %+v", view.name, i, name, v, d.Keep[k])
				}
			}
		}
	}
}
