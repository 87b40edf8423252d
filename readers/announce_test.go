package readers

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/onecore-dev/onecore/internal/blobstore"
)

// recordingFile is a local Parquet file that records the ranges announced
// to it and checks each read against them, as blobstore.ReaderAt would use
// them.
type recordingFile struct {
	*os.File
	expect    []blobstore.Range
	announced int // Expect calls
	reads     int // reads after the first announcement
	outside   []string
}

func (f *recordingFile) Expect(r []blobstore.Range) {
	f.expect = append(f.expect[:0], r...)
	f.announced++
}

func (f *recordingFile) ReadAt(p []byte, off int64) (int, error) {
	if f.announced > 0 { // before: the footer
		f.reads++
		in := false
		for _, g := range f.expect {
			in = in || (off >= g.Off && off+int64(len(p)) <= g.Off+g.Len)
		}
		if !in {
			f.outside = append(f.outside, fmt.Sprintf("%d bytes at %d (announced %v)", len(p), off, f.expect))
		}
	}
	return f.File.ReadAt(p, off)
}

// TestParquetAnnouncesChunks: reading a Parquet file, the reader announces
// each row group's column chunks before reading them, and reads nothing
// else after the footer, for a projection (text, id, one kept column of
// three extra ones) of a file with several row groups and multi-page,
// multi-buffer chunks; a column that is not read is not announced.
func TestParquetAnnouncesChunks(t *testing.T) {
	type row struct {
		ID    string `parquet:"id"`
		Skip  string `parquet:"skip"`
		Text  string `parquet:"text"`
		N     int64  `parquet:"n,optional"`
		Other string `parquet:"other,dict"`
	}
	path := filepath.Join(t.TempDir(), "rg.parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[row](out, parquet.PageBufferSize(64<<10), parquet.Compression(&parquet.Zstd))
	rng := rand.New(rand.NewPCG(3, 4))
	hex := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0123456789abcdef"[rng.IntN(16)]
		}
		return string(b)
	}
	const groups, perGroup = 3, 1500
	for g := range groups {
		rows := make([]row, perGroup)
		for i := range rows {
			k := g*perGroup + i
			rows[i] = row{ID: fmt.Sprint("r", k), Skip: hex(200), Text: hex(3000), N: int64(k) + 1, Other: fmt.Sprint(k % 5)}
		}
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil { // one row group each
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out.Close()

	lf, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := lf.Stat()
	rf := &recordingFile{File: lf}
	src, err := parquetFromFile(path, rf, st.Size(), Options{Keep: []string{"n"}}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	if md := src.pf.Metadata(); len(md.RowGroups) != groups || md.RowGroups[0].Columns[2].MetaData.TotalCompressedSize <= parquetReadBuffer {
		t.Fatalf("file shape: %d row groups, text chunk %d bytes; want %d and > %d", len(md.RowGroups), md.RowGroups[0].Columns[2].MetaData.TotalCompressedSize, groups, parquetReadBuffer)
	}
	n := 0
	for {
		var d Document
		err := src.next(&d)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint("r", n); d.ID != want || len(d.Text) != 3000 || d.Keep[0].S != fmt.Sprint(n+1) {
			t.Fatalf("row %d: id %q, %d bytes of text, n %q", n, d.ID, len(d.Text), d.Keep[0].S)
		}
		n++
	}
	if n != groups*perGroup {
		t.Fatalf("%d rows, want %d", n, groups*perGroup)
	}
	if rf.announced != groups {
		t.Errorf("%d announcements, want one per row group (%d)", rf.announced, groups)
	}
	if len(rf.expect) != 3 {
		t.Errorf("announced %v, want the chunks of id, text and n", rf.expect)
	}
	if rf.reads < 3*groups || len(rf.outside) > 0 {
		t.Errorf("%d reads after the footer; outside the announced chunks: %v", rf.reads, rf.outside)
	}
}
