package readers_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/readers"
)

// node runs a script from testdata with the test npm packages.
func node(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	mods := testenv.NodeModules(t)
	cmd := exec.Command(testenv.LookPath(t, "node"), append([]string{filepath.Join("testdata", script)}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	return out
}

var duckKeep = []string{"lang", "n", "score", "flag", "day", "ts", "price", "meta", "nums", "pairs", "m"}

// TestParquetFromDuckDB reads Parquet written by DuckDB (several row-group
// sizes and codecs, page format v1 and v2, dictionary-encoded strings,
// nested struct/list/map passthrough columns, nulls) and compares every
// value with what DuckDB itself reads from the same file.
func TestParquetFromDuckDB(t *testing.T) {
	dir := t.TempDir()
	out := node(t, "duckdb_write.js", dir)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<30)
	files := 0
	for sc.Scan() {
		var spec struct {
			File       string           `json:"file"`
			RowGroups  int              `json:"row_groups"`
			Dictionary bool             `json:"dictionary"`
			Rows       []map[string]any `json:"rows"`
		}
		if err := json.Unmarshal(sc.Bytes(), &spec); err != nil {
			t.Fatal(err)
		}
		files++
		t.Run(spec.File, func(t *testing.T) {
			if !spec.Dictionary {
				t.Errorf("DuckDB wrote no dictionary-encoded column; the test wants one")
			}
			path := filepath.Join(dir, spec.File)
			r, err := readers.Open(path, readers.Options{Keep: duckKeep})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for i, want := range spec.Rows {
				d, err := r.Next()
				if err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
				wantID, _ := want["id"].(string)
				if want["id"] == nil {
					wantID = path + ":" + strconv.Itoa(i)
				}
				if d.ID != wantID || d.Text != want["text"] || d.Source.Row != int64(i) {
					t.Fatalf("row %d: got id %q text %.40q, want %q %.40q", i, d.ID, d.Text, wantID, want["text"])
				}
				for k, name := range duckKeep {
					if !sameValue(d.Keep[k], want[name]) {
						t.Fatalf("row %d column %s: got %+v, DuckDB %#v", i, name, d.Keep[k], want[name])
					}
				}
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("after %d rows: %v, want EOF", len(spec.Rows), err)
			}
			t.Logf("%d rows in %d row groups", len(spec.Rows), spec.RowGroups)
		})
	}
	if files < 4 {
		t.Fatalf("node script produced %d files", files)
	}
}

// sameValue compares a passthrough value with DuckDB's: strings exactly,
// numbers numerically, JSON texts structurally.
func sameValue(got readers.Value, want any) bool {
	if want == nil {
		return !got.Valid
	}
	if !got.Valid {
		return false
	}
	switch w := want.(type) {
	case bool:
		return got.S == strconv.FormatBool(w)
	case float64:
		f, err := strconv.ParseFloat(got.S, 64)
		return err == nil && f == w
	case string:
		if got.S == w {
			return true
		}
		var a, b any
		if json.Unmarshal([]byte(got.S), &a) != nil || json.Unmarshal([]byte(w), &b) != nil {
			return false
		}
		return reflect.DeepEqual(a, b)
	}
	return false
}

// writeArrowParquet writes columns as one Parquet file with pqarrow.
func writeArrowParquet(t testing.TB, path string, rgRows int64, cols map[string]arrow.Array) {
	t.Helper()
	var fields []arrow.Field
	var arrs []arrow.Array
	for _, name := range []string{"id", "text", "extra"} {
		if a, ok := cols[name]; ok {
			fields = append(fields, arrow.Field{Name: name, Type: a.DataType(), Nullable: true})
			arrs = append(arrs, a)
		}
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, arrs, int64(arrs[0].Len()))
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rgRows), parquet.WithDataPageSize(256)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

func strings_(vals []string, valid []bool) arrow.Array {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues(vals, valid)
	return b.NewArray()
}

func TestParquetRowsAndRejects(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.parquet")
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	ib.AppendValues([]int64{10, 11, 0, 13, 14}, []bool{true, true, false, true, true})
	writeArrowParquet(t, path, 2, map[string]arrow.Array{
		"id":    ib.NewArray(),
		"text":  strings_([]string{"a", "", "c", "", "bad \xff"}, []bool{true, true, true, false, true}),
		"extra": strings_([]string{"x", "", "z", "", ""}, []bool{true, false, true, true, true}),
	})
	r, err := readers.Open(path, readers.Options{Keep: []string{"extra", "missing"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type row struct {
		id, text, extra string
		extraNull       bool
		reject          string
	}
	wants := []row{
		{id: "10", text: "a", extra: "x"},
		{id: "11", text: "", extraNull: true},
		{id: path + ":2", text: "c", extra: "z"},
		{reject: `"text" is null`},
		{reject: `"text" is not valid UTF-8`},
	}
	for i, w := range wants {
		d, err := r.Next()
		if w.reject != "" {
			var rej *readers.Reject
			if !errors.As(err, &rej) || !strings.Contains(rej.Reason, w.reject) || rej.Row != int64(i) || rej.File != path {
				t.Fatalf("row %d: got %v, want reject %q", i, err, w.reject)
			}
			continue
		}
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if d.ID != w.id || d.Text != w.text || d.Keep[0].Valid == w.extraNull || d.Keep[0].S != w.extra || d.Keep[1].Valid {
			t.Fatalf("row %d: got %+v, want %+v", i, d, w)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
	if r.Rows() != 5 || r.Docs() != 3 || r.Rejected() != 2 {
		t.Fatalf("counts %d %d %d", r.Rows(), r.Docs(), r.Rejected())
	}
	// repair instead of reject; a 1-byte limit rejects the longer texts
	r2, err := readers.Open(path, readers.Options{MaxDocBytes: 1, UTF8: readers.UTF8Repair})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	var got []string
	for {
		d, err := r2.Next()
		if err == io.EOF {
			break
		}
		var rej *readers.Reject
		switch {
		case errors.As(err, &rej):
			got = append(got, "reject:"+rej.Reason)
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, d.Text)
		}
	}
	want := []string{"a", "", "c", `reject:"text" is null`, `reject:"text" is 5 bytes, over the limit of 1 (MaxDocBytes)`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	r3, _ := readers.Open(path, readers.Options{UTF8: readers.UTF8Repair})
	defer r3.Close()
	for i := 0; i < 5; i++ {
		d, err := r3.Next()
		if i == 4 && (err != nil || d.Text != "bad \uFFFD") {
			t.Fatalf("repair: %q %v", d.Text, err)
		}
	}
}

func TestParquetSchemaErrors(t *testing.T) {
	dir := t.TempDir()
	noText := filepath.Join(dir, "notext.parquet")
	writeArrowParquet(t, noText, 10, map[string]arrow.Array{"id": strings_([]string{"a"}, nil)})
	intText := filepath.Join(dir, "inttext.parquet")
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	ib.Append(1)
	writeArrowParquet(t, intText, 10, map[string]arrow.Array{"text": ib.NewArray()})
	for path, want := range map[string]string{
		noText:                                `no column "text"`,
		intText:                               `want a string column`,
		filepath.Join(dir, "missing.parquet"): "no such file",
	} {
		_, err := readers.Open(path, readers.Options{})
		var fe *readers.FileError
		if !errors.As(err, &fe) || fe.File != path || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a file error containing %q", path, err, want)
		}
	}
}

// TestParquetCorrupt damages a valid file in many places: every outcome is
// rows, rejects and at most one *FileError naming the file, never a panic.
func TestParquetCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "good.parquet")
	n := 300
	ids := make([]string, n)
	texts := make([]string, n)
	for i := range ids {
		ids[i] = "id" + strconv.Itoa(i)
		texts[i] = strings.Repeat("text "+strconv.Itoa(i)+" ", 1+i%7)
	}
	writeArrowParquet(t, path, 64, map[string]arrow.Array{"id": strings_(ids, nil), "text": strings_(texts, nil)})
	data, _ := os.ReadFile(path)
	bad := filepath.Join(dir, "bad.parquet")
	step := int(math.Max(1, float64(len(data))/97))
	for at := 0; at < len(data); at += step {
		for _, mode := range []string{"truncate", "flip"} {
			var b []byte
			if mode == "truncate" {
				b = data[:at]
			} else {
				b = append([]byte(nil), data...)
				b[at] ^= 0xff
				if at+1 < len(b) {
					b[at+1] ^= 0x0f
				}
			}
			os.WriteFile(bad, b, 0o644)
			checkNoPanic(t, bad, n)
		}
	}
}

// checkNoPanic reads path to the end and checks the error discipline.
func checkNoPanic(t testing.TB, path string, maxRows int) {
	t.Helper()
	r, err := readers.Open(path, readers.Options{Keep: []string{"extra"}})
	if err != nil {
		var fe *readers.FileError
		if !errors.As(err, &fe) || fe.File != path {
			t.Fatalf("open: %v", err)
		}
		return
	}
	defer r.Close()
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		var rej *readers.Reject
		var fe *readers.FileError
		if errors.As(err, &fe) {
			if fe.File != path || fe.Row != r.Rows() || !strings.Contains(fe.Error(), path) || !strings.Contains(fe.Error(), "row ") {
				t.Fatalf("file error %v: file %q row %d, read %d", fe, fe.File, fe.Row, r.Rows())
			}
			break
		}
		if err != nil && (!errors.As(err, &rej) || rej.File != path) {
			t.Fatalf("untyped error %v", err)
		}
		if r.Rows() > int64(maxRows)*2+10 {
			t.Fatalf("read %d rows from a %d-row file", r.Rows(), maxRows)
		}
	}
}

func FuzzParquetReader(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.parquet")
	writeArrowParquet(f, path, 3, map[string]arrow.Array{
		"id":    strings_([]string{"a", "b", "c", "d"}, nil),
		"text":  strings_([]string{"one", "", "three", "four"}, []bool{true, true, false, true}),
		"extra": strings_([]string{"x", "y", "z", "w"}, nil),
	})
	seed, _ := os.ReadFile(path)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.parquet")
		os.WriteFile(p, data, 0o644)
		checkNoPanic(t, p, 1<<20)
	})
}
