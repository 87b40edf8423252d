package writers

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"

	"github.com/onecore-dev/onecore/readers"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		path string
		want Format
	}{
		{"a.parquet", Parquet}, {"dir/A.PARQUET", Parquet}, {"x.arrow", Arrow}, {"x.feather", Arrow}, {"x.ipc", Arrow},
		{"x.jsonl", JSONL}, {"x.ndjson", JSONL}, {"x.jsonl.zst", JSONLZstd}, {"x.csv", FormatUnknown}, {"x", FormatUnknown},
	} {
		if got := FormatOf(tc.path); got != tc.want {
			t.Errorf("FormatOf(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
	for _, f := range []Format{Parquet, Arrow, JSONL, JSONLZstd} {
		if got, err := ParseFormat(f.String()); err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f.String(), got, err)
		}
		if got := FormatOf("x" + f.Ext()); got != f {
			t.Errorf("FormatOf(x%s) = %v", f.Ext(), got)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("ParseFormat(csv) succeeded")
	}
}

func oneDocRecord(t *testing.T) (*DocBuilder, arrow.RecordBatch) {
	t.Helper()
	b, err := NewDocBuilder([]string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	b.Append(&readers.Document{ID: "1", Text: "t", Keep: []readers.Value{{S: "v", Valid: true}}})
	return b, b.NewRecord()
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Files appear only on Close; Abort and failed writes leave nothing.
func TestAtomicWrites(t *testing.T) {
	for _, f := range []Format{Parquet, Arrow, JSONL, JSONLZstd} {
		t.Run(f.String(), func(t *testing.T) {
			dir := t.TempDir()
			b, rec := oneDocRecord(t)
			defer b.Release()
			defer rec.Release()
			path := filepath.Join(dir, "out"+f.Ext())
			w, err := Create(path, FormatUnknown, rec.Schema(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			names := listDir(t, dir)
			if len(names) != 1 || !strings.HasPrefix(names[0], ".out") || !strings.Contains(names[0], ".tmp-") {
				t.Fatalf("while writing: %v, want one hidden temp file", names)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("final file visible before Close")
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if names := listDir(t, dir); len(names) != 1 || names[0] != "out"+f.Ext() {
				t.Fatalf("after Close: %v", names)
			}
			if err := w.Abort(); err != nil { // no-op after Close
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatal("Abort after Close removed the file")
			}
			// Abort leaves nothing
			w2, err := Create(filepath.Join(dir, "aborted"+f.Ext()), f, rec.Schema(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			w2.Write(rec)
			if err := w2.Abort(); err != nil {
				t.Fatal(err)
			}
			if names := listDir(t, dir); len(names) != 1 {
				t.Fatalf("after Abort: %v", names)
			}
			// a record of another schema is refused
			other, _ := DocSchema(nil)
			w3, _ := Create(filepath.Join(dir, "x"+f.Ext()), f, other, Options{})
			if err := w3.Write(rec); err == nil || !strings.Contains(err.Error(), "schema") {
				t.Fatalf("schema mismatch: %v", err)
			}
			w3.Abort()
		})
	}
	if _, err := Create(filepath.Join(t.TempDir(), "x.csv"), FormatUnknown, arrow.NewSchema(nil, nil), Options{}); err == nil || !strings.Contains(err.Error(), "--format") {
		t.Fatalf("unknown extension: %v", err)
	}
}

func TestDocSchema(t *testing.T) {
	s, err := DocSchema([]string{"lang", "url"})
	if err != nil {
		t.Fatal(err)
	}
	want := "id:utf8 text:utf8 lang:utf8? url:utf8?"
	var got []string
	for _, f := range s.Fields() {
		n := f.Name + ":" + f.Type.String()
		if f.Nullable {
			n += "?"
		}
		got = append(got, n)
	}
	if strings.Join(got, " ") != want {
		t.Fatalf("schema %v, want %s", got, want)
	}
	for _, bad := range [][]string{{"id"}, {"text"}, {"a", "a"}, {""}} {
		if _, err := DocSchema(bad); err == nil {
			t.Errorf("DocSchema(%q) succeeded", bad)
		}
	}
}

// TestJSONLTypes checks the JSON form of the Arrow types results use.
func TestJSONLTypes(t *testing.T) {
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "y\"q", Type: arrow.BinaryTypes.String})},
	}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	rb.Field(0).(*array.StringBuilder).AppendValues([]string{"a\"\\\n\t\x01</>\u2028é😀", ""}, []bool{true, false})
	rb.Field(1).(*array.Int64Builder).AppendValues([]int64{-5, math.MaxInt64}, nil)
	rb.Field(2).(*array.Uint32Builder).AppendValues([]uint32{7, math.MaxUint32}, nil)
	rb.Field(3).(*array.Float32Builder).AppendValues([]float32{0.1, 0}, []bool{true, false})
	rb.Field(4).(*array.Float64Builder).AppendValues([]float64{math.NaN(), 1e300}, nil)
	rb.Field(5).(*array.BooleanBuilder).AppendValues([]bool{true, false}, nil)
	lb := rb.Field(6).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{0.25, float32(math.Inf(1))}, nil)
	lb.Append(true)
	rb.Field(7).(*array.BinaryBuilder).AppendValues([][]byte{{0, 1, 2}, nil}, nil)
	sb := rb.Field(8).(*array.StructBuilder)
	for i := 0; i < 2; i++ {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
		sb.FieldBuilder(1).(*array.StringBuilder).Append("v")
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	dir := t.TempDir()
	for _, f := range []Format{JSONL, JSONLZstd} {
		path := filepath.Join(dir, "t"+f.Ext())
		w, err := Create(path, f, schema, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		if f == JSONLZstd {
			d, _ := zstd.NewReader(nil)
			if data, err = d.DecodeAll(data, nil); err != nil {
				t.Fatal(err)
			}
		}
		want := `{"s":"a\"\\\n\t\u0001</>` + "\u2028é😀" + `","i":-5,"u":7,"f":0.1,"d":null,"b":true,"l":[0.25,null],"bin":"AAEC","st":{"x":0,"y\"q":"v"}}` + "\n" +
			`{"s":null,"i":9223372036854775807,"u":4294967295,"f":null,"d":1e+300,"b":false,"l":[],"bin":"","st":{"x":1,"y\"q":"v"}}` + "\n"
		if string(data) != want {
			t.Errorf("%v:\n got %s\nwant %s", f, data, want)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if !json.Valid([]byte(line)) {
				t.Errorf("invalid JSON: %s", line)
			}
		}
	}
}

// FuzzAppendString: our JSON strings decode (with encoding/json) to the
// input, with invalid UTF-8 replaced.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\x7f", "é😀", "\xff\xfe", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q → %s: %v", s, b, err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); got != want && utf8.ValidString(s) {
			t.Fatalf("%q → %s → %q", s, b, got)
		}
		if !utf8.Valid(b) {
			t.Fatalf("%q → invalid UTF-8 %q", s, b)
		}
	})
}

func TestRejectsAndSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rejects.jsonl")
	r, err := CreateRejects(path)
	if err != nil {
		t.Fatal(err)
	}
	r.Row(&readers.Reject{File: "a.jsonl", Row: 3, Reason: "malformed \"JSON\"", Excerpt: "{bad\n"})
	r.File(&readers.FileError{File: "b.jsonl.gz", Row: 9, Err: os.ErrClosed})
	if r.Count() != 2 {
		t.Fatalf("count %d", r.Count())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var nilRejects *Rejects
	if err := nilRejects.Row(&readers.Reject{}); err != nil || nilRejects.Close() != nil {
		t.Fatal("nil Rejects must discard")
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []map[string]any{
		{"kind": "row", "file": "a.jsonl", "row": 3.0, "reason": `malformed "JSON"`, "excerpt": "{bad\n"},
		{"kind": "file", "file": "b.jsonl.gz", "row": 9.0, "reason": os.ErrClosed.Error(), "excerpt": ""},
	}
	for i, l := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("line %d %s: got %v, want %v", i, k, got[k], v)
			}
		}
	}
	var s Summary
	s.Add(Summary{RowsIn: 10, RowsOut: 8, Rejected: 2, Files: 2, BadFiles: 1})
	if !s.Partial() || s.Check() != nil || s.JSON() != `{"rows_in":10,"rows_out":8,"rejected":2,"files":2,"bad_files":1}` {
		t.Fatalf("summary %v %v %s", s.Partial(), s.Check(), s.JSON())
	}
	s.RowsOut = 9
	if s.Check() == nil {
		t.Fatal("Check missed broken accounting")
	}
}

func TestPoolAllocator(t *testing.T) {
	a := &poolAllocator{}
	b := a.Allocate(100 << 10)
	if len(b) != 100<<10 || cap(b) != 128<<10 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xff
	}
	a.Free(b)
	c := a.Allocate(90 << 10)
	if &c[:1][0] != &b[:1][0] {
		t.Fatal("buffer not reused")
	}
	for _, x := range c {
		if x != 0 {
			t.Fatal("reused buffer not zeroed")
		}
	}
	c = a.Reallocate(120<<10, c) // fits in place
	if &c[:1][0] != &b[:1][0] || len(c) != 120<<10 {
		t.Fatal("Reallocate within capacity moved")
	}
	c[0] = 7
	d := a.Reallocate(300<<10, c)
	if d[0] != 7 || len(d) != 300<<10 {
		t.Fatal("Reallocate lost data")
	}
	small := a.Allocate(10)
	if len(small) != 10 {
		t.Fatal("small allocation")
	}
	a.Free(small)
}
