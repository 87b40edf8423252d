package writers_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/onecore-dev/onecore/readers"
	"github.com/onecore-dev/onecore/writers"
)

// pageDocs are documents that exercise the page writer: many pages per
// column chunk (texts of 0–4 KB), a text larger than a page, empty
// strings, and passthrough columns with nulls at random, in runs, or (in
// the last row groups) none at all.
func pageDocs() []readers.Document {
	rng := rand.New(rand.NewPCG(7, 7))
	words := strings.Fields("the quick brown fox jumps over a lazy dog Größe 日本語 🙂 \x00 \" \\")
	var docs []readers.Document
	for i := range 1500 {
		var sb strings.Builder
		for range rng.IntN(500) {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		d := readers.Document{ID: fmt.Sprintf("d%05d", i), Text: sb.String(), Keep: make([]readers.Value, 2)}
		switch {
		case i == 700:
			d.Text = strings.Repeat("large ", 3<<20/6) // 3 MiB: a page of its own
		case i%97 == 0:
			d.Text = ""
		}
		if i >= 750 || i%3 != 0 && (i/250)%2 == 0 { // nulls in a pattern, in runs, then none
			d.Keep[0] = readers.Value{S: fmt.Sprint("lang", i%5), Valid: true}
		}
		if rng.IntN(4) == 0 {
			d.Keep[1] = readers.Value{S: "", Valid: true} // empty, not null
		}
		docs = append(docs, d)
	}
	return docs
}

// readPqarrow reads a Parquet file with arrow-go (an implementation
// independent of the readers package's parquet-go) into documents and
// returns the Arrow schema it reconstructed.
func readPqarrow(t *testing.T, path string) ([]readers.Document, *arrow.Schema) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1000}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var docs []readers.Document
	for rr.Next() {
		rec := rr.RecordBatch()
		cols := make([]*array.String, rec.NumCols())
		for c := range cols {
			cols[c] = rec.Column(c).(*array.String)
		}
		for row := range int(rec.NumRows()) {
			d := readers.Document{ID: cols[0].Value(row), Text: cols[1].Value(row)}
			for _, c := range cols[2:] {
				d.Keep = append(d.Keep, readers.Value{S: c.Value(row), Valid: c.IsValid(row)})
			}
			docs = append(docs, d)
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	return docs, rr.Schema()
}

// TestParquetFastPath: the page-parallel writer of string schemas writes
// the same bytes whatever its concurrency, and parquet-go, arrow-go and
// DuckDB read back from it exactly what the pqarrow encoder's file holds.
func TestParquetFastPath(t *testing.T) {
	dir := t.TempDir()
	docs := pageDocs()
	write := func(name string, generic bool, opts writers.Options) string {
		writers.SetGenericParquet(generic)
		defer writers.SetGenericParquet(false)
		p := filepath.Join(dir, name)
		opts.Plain = writers.DocPlainColumns
		opts.RowGroupBytes = 3 << 19 // several row groups, some ending inside a record
		opts.RowGroupRows = 400
		writeDocs(t, p, docs, opts)
		return p
	}
	ref := write("ref.parquet", true, writers.Options{})
	var first []byte
	for _, c := range []int{1, 2, 3, 8} {
		p := write(fmt.Sprintf("fast%d.parquet", c), false, writers.Options{Concurrency: c})
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("Concurrency %d wrote different bytes than Concurrency 1", c)
		}
	}
	fast := filepath.Join(dir, "fast1.parquet")
	sameDocs(t, "pqarrow encoder, read by parquet-go", readDocs(t, ref), docs)
	sameDocs(t, "fast path, read by parquet-go", readDocs(t, fast), docs)
	refDocs, refSchema := readPqarrow(t, ref)
	fastDocs, fastSchema := readPqarrow(t, fast)
	sameDocs(t, "pqarrow encoder, read by arrow-go", refDocs, docs)
	sameDocs(t, "fast path, read by arrow-go", fastDocs, docs)
	if !fastSchema.Equal(refSchema) {
		t.Errorf("arrow-go reads schema %v from the fast path, %v from pqarrow's file", fastSchema, refSchema)
	}
	// and DuckDB, over many pages and row groups
	arr := filepath.Join(dir, "docs.arrow")
	writeDocs(t, arr, docs, writers.Options{})
	checkReadByOthers(t, fast, arr, docs)

	// metadata as arrow-go sees it: row groups, zstd, null counts
	pf, err := file.OpenParquetFile(fast, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if pf.NumRowGroups() < 3 {
		t.Errorf("%d row groups, want several", pf.NumRowGroups())
	}
	var nulls [4]int64
	maxPages := 0
	for g := range pf.NumRowGroups() {
		pr, err := pf.RowGroup(g).GetColumnPageReader(1)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for pr.Next() {
			n++
		}
		if err := pr.Err(); err != nil {
			t.Fatalf("row group %d text pages: %v", g, err)
		}
		maxPages = max(maxPages, n)
		rg := pf.MetaData().RowGroup(g)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Compression().String() != "ZSTD" {
				t.Errorf("row group %d column %d: %v", g, c, cc.Compression())
			}
			st, err := cc.Statistics()
			if err != nil || st == nil {
				t.Fatalf("row group %d column %d: no statistics (%v)", g, c, err)
			}
			nulls[c] += st.NullCount()
		}
	}
	if maxPages < 2 {
		t.Errorf("text column chunks have at most %d page(s), want several", maxPages)
	}
	var want [4]int64
	for _, d := range docs {
		for k, v := range d.Keep {
			if !v.Valid {
				want[2+k]++
			}
		}
	}
	if nulls != want {
		t.Errorf("null counts %v, want %v", nulls, want)
	}
}

// TestParquetFastPathEmptyAndAbort: a file without rows is valid, and an
// aborted writer stops its compressors.
func TestParquetFastPathEmptyAndAbort(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "empty.parquet")
	writeDocs(t, p, nil, writers.Options{Plain: writers.DocPlainColumns})
	if docs := readDocs(t, p); len(docs) != 0 {
		t.Fatalf("%d docs from an empty file", len(docs))
	}
	if docs, _ := readPqarrow(t, p); len(docs) != 0 {
		t.Fatalf("arrow-go: %d docs from an empty file", len(docs))
	}

	before := runtime.NumGoroutine()
	b, _ := writers.NewDocBuilder(keep)
	defer b.Release()
	for range 10 {
		w, err := writers.Create(filepath.Join(dir, "aborted.parquet"), writers.Parquet, b.Schema(), writers.Options{Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		b.Append(&readers.Document{ID: "x", Text: "y", Keep: make([]readers.Value, 2)})
		rec := b.NewRecord()
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		w.Abort()
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after aborting writers, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(m) > 0 {
		t.Fatalf("left behind: %v", m)
	}
}
