package readers_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/onecore-dev/onecore/readers"
	"github.com/onecore-dev/onecore/writers"
)

// projection is one way of reading a file: which column is the text, which
// the id, and which are passed through (in order, repeats allowed).
type projection struct {
	text, id string
	keep     []string
}

// TestParquetProjections holds every projection of a Parquet file — any
// column requested as text, id and --keep field, several times over (the
// pipeline adds the question field to Keep as well) — to a row-by-row
// reference, on files written by DuckDB and by our own writer. A column
// read by two projections once advanced its shared cursor twice, so row i
// got the text of row 2i and its kept value from row 2i+1.
func TestParquetProjections(t *testing.T) {
	dir := t.TempDir()
	out := node(t, "duckdb_write.js", dir)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<30)
	type file struct {
		path string
		rows []map[string]any
	}
	var files []file
	for sc.Scan() {
		var spec struct {
			File string           `json:"file"`
			Rows []map[string]any `json:"rows"`
		}
		if err := json.Unmarshal(sc.Bytes(), &spec); err != nil {
			t.Fatal(err)
		}
		files = append(files, file{filepath.Join(dir, spec.File), spec.Rows})
	}
	// The same rows written by us (writers' Parquet encoder, several row
	// groups and pages): id, text and the string column lang, kept.
	ours := filepath.Join(dir, "ours.parquet")
	var docs []readers.Document
	var ourRows []map[string]any
	for i, r := range files[1].rows {
		id, _ := r["id"].(string)
		if id == "" {
			id = fmt.Sprintf("gen-%d", i)
		}
		text := r["text"].(string)
		docs = append(docs, readers.Document{ID: id, Text: text, Keep: []readers.Value{{S: r["lang"].(string), Valid: true}}})
		ourRows = append(ourRows, map[string]any{"id": id, "text": text, "lang": r["lang"]})
	}
	writeOurParquet(t, ours, docs, []string{"lang"})
	files = append(files, file{ours, ourRows})

	projs := []projection{
		{"text", "id", []string{"text"}},
		{"text", "id", []string{"id", "text", "text", "lang", "id"}},
		{"text", "text", []string{"text"}},
		{"text", "lang", []string{"lang", "lang"}},
		{"lang", "id", []string{"text", "lang"}},
		{"id", "id", []string{"id"}},
		{"text", "n", []string{"n", "meta", "meta", "nums", "text"}},
		{"text", "id", []string{"pairs", "m", "pairs", "text", "id", "m"}},
	}
	// and random ones over the string columns, with repeats
	rng := rand.New(rand.NewPCG(1, 2))
	cols := []string{"id", "text", "lang"}
	for range 12 {
		p := projection{text: []string{"text", "lang"}[rng.IntN(2)], id: cols[rng.IntN(3)]}
		for range rng.IntN(6) {
			p.keep = append(p.keep, cols[rng.IntN(3)])
		}
		projs = append(projs, p)
	}
	for _, f := range files {
		for pi, p := range projs {
			if _, ok := f.rows[0]["n"]; !ok && hasAny(p, "n", "meta", "nums", "pairs", "m") {
				continue // our file has only id, text and lang
			}
			t.Run(fmt.Sprintf("%s/%d", filepath.Base(f.path), pi), func(t *testing.T) {
				checkProjection(t, f.path, f.rows, p)
			})
		}
	}
}

func hasAny(p projection, names ...string) bool {
	for _, n := range names {
		if p.id == n || p.text == n {
			return true
		}
		for _, k := range p.keep {
			if k == n {
				return true
			}
		}
	}
	return false
}

func checkProjection(t *testing.T, path string, rows []map[string]any, p projection) {
	for _, borrow := range []bool{false, true} {
		r, err := readers.Open(path, readers.Options{TextField: p.text, IDField: p.id, Keep: p.keep, Borrow: borrow})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range rows {
			d, err := r.Next()
			wantText, textOK := want[p.text].(string)
			if !textOK { // null text: the row is rejected
				if _, ok := err.(*readers.Reject); !ok {
					t.Fatalf("%+v row %d: got %v, want a reject (null text)", p, i, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%+v row %d: %v", p, i, err)
			}
			if d.Source.Row != int64(i) || d.Text != wantText {
				t.Fatalf("%+v row %d: got row %d text %.40q, want %.40q", p, i, d.Source.Row, d.Text, wantText)
			}
			wantID := path + ":" + strconv.Itoa(i)
			switch v := want[p.id].(type) {
			case string:
				wantID = v
			case float64:
				wantID = strconv.FormatFloat(v, 'f', -1, 64)
			}
			if d.ID != wantID {
				t.Fatalf("%+v row %d: id %q, want %q", p, i, d.ID, wantID)
			}
			for k, name := range p.keep {
				if !sameValue(d.Keep[k], want[name]) {
					t.Fatalf("%+v row %d keep %d (%s): got %+v, want %#v", p, i, k, name, d.Keep[k], want[name])
				}
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("%+v: after %d rows: %v, want EOF", p, len(rows), err)
		}
		r.Close()
	}
}

// writeOurParquet writes documents with the writers package (the encoder
// `onecore convert` and the pipeline use), in several small row groups.
func writeOurParquet(t *testing.T, path string, docs []readers.Document, keep []string) {
	t.Helper()
	b, err := writers.NewDocBuilder(keep)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	w, err := writers.Create(path, writers.Parquet, b.Schema(), writers.Options{Plain: writers.DocPlainColumns, RowGroupRows: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := range docs {
		b.Append(&docs[i])
		if b.Len() == 500 || i == len(docs)-1 {
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
