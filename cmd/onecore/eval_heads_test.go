package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/onecore-dev/onecore/writers"
)

// writeParquet writes one record batch built by fill with the project's
// writer.
func writeParquet(t *testing.T, path string, schema *arrow.Schema, fill func(b *array.RecordBuilder)) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	fill(b)
	rec := b.NewRecordBatch()
	defer rec.Release()
	w, err := writers.Create(path, writers.Parquet, schema, writers.Options{})
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

// multilabelRows, computed by hand (labels a, b, c; row 5 has no gold):
//
//	gold   pred
//	a b    a        b missed
//	b      b c      c extra
//	–      –        exact
//	a c    a c      exact
//	null   a        skipped
//
//	a: TP 2, predicted 2, support 2 → P 1, R 1, F1 1
//	b: TP 1, predicted 1, support 2 → P 1, R 1/2, F1 2/3
//	c: TP 1, predicted 2, support 1 → P 1/2, R 1, F1 2/3
//	micro: TP 4, predicted 5, gold 5 → 4/5 each; macro P 5/6, R 5/6, F1 7/9
//	subset accuracy 2/4; Hamming loss 2 wrong decisions / (4 rows × 3) = 1/6
var multilabelRows = []struct{ gold, pred []string }{
	{[]string{"a", "b"}, []string{"a"}},
	{[]string{"b"}, []string{"b", "c"}},
	{[]string{}, []string{}},
	{[]string{"a", "c"}, []string{"a", "c"}},
	{nil, []string{"a"}},
}

// TestEvalMultilabel: eval on multilabel results (labels a list, gold the
// JSON text --keep copies from an array field) matches the hand
// computation, from JSON Lines and Parquet, with --head and
// --pred-column found by themselves.
// evalJSON runs eval on the predictions file in (gold column "gold", head
// auto), decodes its --json output into m and returns its printed report.
func evalJSON(t *testing.T, tmp, in string, m any) string {
	t.Helper()
	jsonOut := filepath.Join(tmp, "m.json")
	var out bytes.Buffer
	if err := runEval(&out, evalFlags{pred: in, goldColumn: "gold", head: "auto", jsonOut: jsonOut}); err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	b, _ := os.ReadFile(jsonOut)
	if err := json.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// nearTo checks a metric of file in against a hand computation.
func nearTo(t *testing.T, in string) func(what string, got, want float64) {
	return func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: %s %v, want %v", in, what, got, want)
		}
	}
}

func TestEvalMultilabel(t *testing.T) {
	tmp := t.TempDir()
	var lines []string
	for _, r := range multilabelRows {
		pred, _ := json.Marshal(r.pred)
		gold := "null"
		if r.gold != nil {
			g, _ := json.Marshal(r.gold)
			q, _ := json.Marshal(string(g)) // a string holding the array's JSON, as --keep writes it
			gold = string(q)
		}
		lines = append(lines, `{"id":"x","labels":`+string(pred)+`,"probs":[0.5],"gold":`+gold+`}`)
	}
	jsonl := filepath.Join(tmp, "m.jsonl")
	os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	pq := filepath.Join(tmp, "m.parquet")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "labels", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "gold", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	writeParquet(t, pq, schema, func(b *array.RecordBuilder) {
		lb := b.Field(0).(*array.ListBuilder)
		for _, r := range multilabelRows {
			lb.Append(true)
			for _, l := range r.pred {
				lb.ValueBuilder().(*array.StringBuilder).Append(l)
			}
			if r.gold == nil {
				b.Field(1).(*array.StringBuilder).AppendNull()
			} else {
				g, _ := json.Marshal(r.gold)
				b.Field(1).(*array.StringBuilder).Append(string(g))
			}
		}
	})
	for _, in := range []string{jsonl, pq} {
		var m multilabelMetrics
		out := evalJSON(t, tmp, in, &m)
		near := nearTo(t, in)
		if m.Head != "multilabel" || m.Rows != 5 || m.NullGold != 1 || m.Evaluated != 4 || m.ExactSets != 2 {
			t.Errorf("%s: counts %+v", in, m)
		}
		near("subset accuracy", m.SubsetAccuracy, 0.5)
		near("hamming loss", m.HammingLoss, 1.0/6)
		near("micro P", m.MicroPrecision, 0.8)
		near("micro R", m.MicroRecall, 0.8)
		near("micro F1", m.MicroF1, 0.8)
		near("macro P", m.MacroPrecision, 5.0/6)
		near("macro R", m.MacroRecall, 5.0/6)
		near("macro F1", m.MacroF1, 7.0/9)
		want := []labelMetrics{
			{Label: "a", Precision: 1, Recall: 1, F1: 1, Support: 2, Predicted: 2},
			{Label: "b", Precision: 1, Recall: 0.5, F1: 2.0 / 3, Support: 2, Predicted: 1},
			{Label: "c", Precision: 0.5, Recall: 1, F1: 2.0 / 3, Support: 1, Predicted: 2},
		}
		if len(m.Labels) != 3 {
			t.Fatalf("%s: labels %+v", in, m.Labels)
		}
		for i, w := range want {
			l := m.Labels[i]
			if l.Label != w.Label || l.Support != w.Support || l.Predicted != w.Predicted {
				t.Errorf("%s: label %+v, want %+v", in, l, w)
			}
			near(w.Label+" P", l.Precision, w.Precision)
			near(w.Label+" R", l.Recall, w.Recall)
			near(w.Label+" F1", l.F1, w.F1)
		}
		for _, s := range []string{"rows       5 (4 evaluated; skipped: 1 with a null gold)\n", "subset accuracy  0.5000 (2/4", "hamming loss     0.1667\n", "micro-F1         0.8000\n", "macro-F1         0.7778\n"} {
			if !strings.Contains(out, s) {
				t.Errorf("%s: output lacks %q:\n%s", in, s, out)
			}
		}
	}
	// a gold that is not a list names the file and row
	bad := filepath.Join(tmp, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"labels":["a"],"gold":"[\"a\"]"}`+"\n"+`{"labels":["a"],"gold":"a"}`+"\n"), 0o644)
	if err := runEval(&bytes.Buffer{}, evalFlags{pred: bad, goldColumn: "gold", head: "auto"}); err == nil || !strings.Contains(err.Error(), "bad.jsonl: row 2: gold \"a\" is not a list") {
		t.Errorf("gold not a list: %v", err)
	}
}

// TestEvalRegression: MAE, RMSE, R² and Pearson r by hand —
// gold 1 2 3 4 (and one null), predicted 1.5 2 2.5 5:
// errors .5 0 −.5 1 → MAE 0.5, RMSE √(1.5/4); gold mean 2.5, SS_tot 5 →
// R² 1 − 1.5/5 = 0.7; Pearson 5.5/√(5·7.25).
func TestEvalRegression(t *testing.T) {
	tmp := t.TempDir()
	gold := []string{"1", "2", "3", "4", ""}
	pred := []float32{1.5, 2, 2.5, 5, 3}
	var lines []string
	for i := range gold {
		g := `"` + gold[i] + `"` // --keep copies a number field as its text
		if gold[i] == "" {
			g = "null"
		}
		p, _ := json.Marshal(pred[i])
		lines = append(lines, `{"id":"x","value":`+string(p)+`,"gold":`+g+`}`)
	}
	jsonl := filepath.Join(tmp, "r.jsonl")
	os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	pq := filepath.Join(tmp, "r.parquet")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "value", Type: arrow.PrimitiveTypes.Float32},
		{Name: "gold", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	writeParquet(t, pq, schema, func(b *array.RecordBuilder) {
		for i := range gold {
			b.Field(0).(*array.Float32Builder).Append(pred[i])
			if gold[i] == "" {
				b.Field(1).(*array.StringBuilder).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(gold[i])
			}
		}
	})
	for _, in := range []string{jsonl, pq} {
		var m regressionMetrics
		out := evalJSON(t, tmp, in, &m)
		near := nearTo(t, in)
		if m.Head != "regression" || m.Rows != 5 || m.NullGold != 1 || m.Evaluated != 4 {
			t.Errorf("%s: counts %+v", in, m)
		}
		near("MAE", m.MAE, 0.5)
		near("RMSE", m.RMSE, math.Sqrt(1.5/4))
		near("R2", m.R2, 0.7)
		near("Pearson", m.Pearson, 5.5/math.Sqrt(5*7.25))
		near("gold mean", m.GoldMean, 2.5)
		near("pred mean", m.PredMean, 2.75)
		for _, s := range []string{"MAE        0.5000\n", "R²         0.7000\n", "Pearson r  0.9135\n"} {
			if !strings.Contains(out, s) {
				t.Errorf("%s: output lacks %q:\n%s", in, s, out)
			}
		}
	}
	// a gold that is not a number names the file and row; --head must be
	// one of the four
	bad := filepath.Join(tmp, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"value":1.0,"gold":"2"}`+"\n"+`{"value":1.5,"gold":"n/a"}`+"\n"), 0o644)
	if err := runEval(&bytes.Buffer{}, evalFlags{pred: bad, goldColumn: "gold", head: "auto"}); err == nil || !strings.Contains(err.Error(), `bad.jsonl: row 2: gold "n/a" is not a finite number`) {
		t.Errorf("gold not a number: %v", err)
	}
	if err := runEval(&bytes.Buffer{}, evalFlags{pred: bad, goldColumn: "gold", head: "ordinal"}); err == nil || !isUsageError(err) {
		t.Errorf("--head ordinal: %v", err)
	}
}
