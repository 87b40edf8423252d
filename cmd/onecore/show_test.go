package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/onecore-dev/onecore/writers"
)

// TestShow: onecore show prints Parquet, Arrow and JSON Lines results as
// the same aligned table (floats rounded, lists shown), honours --columns
// and --limit, counts with --count, and refuses an unknown column.
func TestShow(t *testing.T) {
	tmp := t.TempDir()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "label", Type: arrow.BinaryTypes.String},
		{Name: "score", Type: arrow.PrimitiveTypes.Float32},
		{Name: "probs", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
		{Name: "gold", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ids := []string{"m1", "m2", "m3", "m4"}
	labels := []string{"ham", "spam", "ham", "ham"}
	scores := []float32{0.99984, 0.75, 1, 0.5}
	var lines []string
	for i := range ids {
		b.Field(0).(*array.StringBuilder).Append(ids[i])
		b.Field(1).(*array.StringBuilder).Append(labels[i])
		b.Field(2).(*array.Float32Builder).Append(scores[i])
		lb := b.Field(3).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{scores[i], 1 - scores[i]}, nil)
		if i == 3 {
			b.Field(4).(*array.StringBuilder).AppendNull()
			lines = append(lines, `{"id":"m4","label":"ham","score":0.5,"probs":[0.5,0.5],"gold":null}`)
		} else {
			b.Field(4).(*array.StringBuilder).Append("ham")
			lines = append(lines, `{"id":"`+ids[i]+`","label":"`+labels[i]+`","score":`+map[int]string{0: "0.99984", 1: "0.75", 2: "1.0"}[i]+`,"probs":[0.1,0.9],"gold":"ham"}`)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, f := range []writers.Format{writers.Parquet, writers.Arrow} {
		w, err := writers.Create(filepath.Join(tmp, "r"+f.Ext()), f, schema, writers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(tmp, "r.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	show := func(args ...string) (string, error) {
		var out bytes.Buffer
		fl := showFlags{limit: 10, width: 40}
		for i := 1; i < len(args); i++ {
			switch args[i] {
			case "--columns":
				fl.columns = strings.Split(args[i+1], ",")
			case "--limit":
				fl.limit = int(args[i+1][0] - '0')
			case "--count":
				fl.count = true
			}
		}
		err := runShow(&out, args[0], fl)
		return out.String(), err
	}
	for _, ext := range []string{".parquet", ".arrow", ".jsonl"} {
		p := filepath.Join(tmp, "r"+ext)
		out, err := show(p, "--columns", "id,score,gold", "--limit", "3")
		if err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		want := "┌────┬────────┬──────┐\n" +
			"│ id │ score  │ gold │\n" +
			"├────┼────────┼──────┤\n" +
			"│ m1 │ 0.9998 │ ham  │\n" +
			"│ m2 │ 0.75   │ ham  │\n" +
			"│ m3 │ 1      │ ham  │\n" +
			"└────┴────────┴──────┘\n3 row(s)\n"
		if out != want {
			t.Errorf("%s:\n%s\nwant\n%s", ext, out, want)
		}
		out, err = show(p, "--columns", "gold,label", "--count")
		if err != nil || !strings.Contains(out, "│ ham  │ ham   │ 2 │") || !strings.Contains(out, "│ NULL │ ham   │ 1 │") || !strings.Contains(out, "│ ham  │ spam  │ 1 │") {
			t.Errorf("%s --count: %v\n%s", ext, err, out)
		}
		if out, err := show(p); err != nil || !strings.Contains(out, "probs") || !strings.Contains(out, "4 row(s)") {
			t.Errorf("%s, all columns: %v\n%s", ext, err, out)
		}
		if _, err := show(p, "--columns", "nope"); err == nil || !isUsageError(err) || !strings.Contains(err.Error(), "label") {
			t.Errorf("%s: unknown column: %v", ext, err)
		}
	}
}
