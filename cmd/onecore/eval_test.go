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
)

// evalRows is the hand-computed example: gold c is never predicted, and
// one row has a null gold ("" below).
//
//	confusion (gold × pred, order a b c)   a: 2 1 0   b: 1 1 0   c: 1 1 0
//	a: TP 2, predicted 4, support 3 → P 1/2, R 2/3, F1 2·2/(4+3) = 4/7
//	b: TP 1, predicted 3, support 2 → P 1/3, R 1/2, F1 2·1/(3+2) = 2/5
//	c: TP 0, predicted 0, support 2 → P 0,   R 0,   F1 0
//	accuracy 3/7; macro P (1/2+1/3)/3 = 5/18, R (2/3+1/2)/3 = 7/18,
//	F1 (4/7+2/5)/3 = 34/105
var evalRows = [][2]string{ // gold, label
	{"a", "a"}, {"a", "a"}, {"a", "b"},
	{"b", "b"}, {"b", "a"},
	{"c", "b"}, {"c", "a"},
	{"", "a"},
}

// writeEvalInputs writes evalRows as r.jsonl, r.parquet (with the project's
// writers, gold a nullable utf8 column as --keep writes it) and an output
// directory of two Parquet parts; it returns their paths.
func writeEvalInputs(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	for _, r := range evalRows {
		gold := `"` + r[0] + `"`
		if r[0] == "" {
			gold = "null"
		}
		lines = append(lines, `{"id":"x","label":"`+r[1]+`","score":0.5,"gold":`+gold+`}`)
	}
	jsonl := filepath.Join(dir, "r.jsonl")
	if err := os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "label", Type: arrow.BinaryTypes.String},
		{Name: "gold", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	write := func(path string, rows [][2]string) {
		writeParquet(t, path, schema, func(b *array.RecordBuilder) {
			for _, r := range rows {
				b.Field(0).(*array.StringBuilder).Append("x")
				b.Field(1).(*array.StringBuilder).Append(r[1])
				if r[0] == "" {
					b.Field(2).(*array.StringBuilder).AppendNull()
				} else {
					b.Field(2).(*array.StringBuilder).Append(r[0])
				}
			}
		})
	}
	pq := filepath.Join(dir, "r.parquet")
	write(pq, evalRows)
	parts := filepath.Join(dir, "parts")
	os.MkdirAll(parts, 0o755)
	write(filepath.Join(parts, "part-0000-x.parquet"), evalRows[:3])
	write(filepath.Join(parts, "part-0001-y.parquet"), evalRows[3:])
	return []string{jsonl, pq, parts}
}

// TestEval: onecore eval's numbers match the hand computation above for
// JSON Lines, Parquet and a directory of parts, as text and as --json.
func TestEval(t *testing.T) {
	tmp := t.TempDir()
	for _, in := range writeEvalInputs(t, tmp) {
		jsonOut := filepath.Join(tmp, "m.json")
		os.Remove(jsonOut)
		var out bytes.Buffer
		if err := runEval(&out, evalFlags{pred: in, goldColumn: "gold", predColumn: "label", jsonOut: jsonOut}); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		b, err := os.ReadFile(jsonOut)
		if err != nil {
			t.Fatal(err)
		}
		var m evalMetrics
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		near := func(what string, got, want float64) {
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("%s: %s %v, want %v", in, what, got, want)
			}
		}
		if m.Rows != 8 || m.NullGold != 1 || m.NullPred != 0 || m.Evaluated != 7 || m.Correct != 3 {
			t.Errorf("%s: counts %+v", in, m)
		}
		near("accuracy", m.Accuracy, 3.0/7)
		near("macro precision", m.MacroPrecision, 5.0/18)
		near("macro recall", m.MacroRecall, 7.0/18)
		near("macro F1", m.MacroF1, 34.0/105)
		want := []classMetrics{
			{Label: "a", Precision: 1.0 / 2, Recall: 2.0 / 3, F1: 4.0 / 7, Support: 3, Predicted: 4},
			{Label: "b", Precision: 1.0 / 3, Recall: 1.0 / 2, F1: 2.0 / 5, Support: 2, Predicted: 3},
			{Label: "c", Precision: 0, Recall: 0, F1: 0, Support: 2, Predicted: 0},
		}
		if len(m.Classes) != len(want) {
			t.Fatalf("%s: classes %+v", in, m.Classes)
		}
		for i, w := range want {
			c := m.Classes[i]
			if c.Label != w.Label || c.Support != w.Support || c.Predicted != w.Predicted {
				t.Errorf("%s: class %+v, want %+v", in, c, w)
			}
			near(w.Label+" precision", c.Precision, w.Precision)
			near(w.Label+" recall", c.Recall, w.Recall)
			near(w.Label+" F1", c.F1, w.F1)
		}
		if got, _ := json.Marshal(m.Confusion); string(got) != "[[2,1,0],[1,1,0],[1,1,0]]" || strings.Join(m.Labels, ",") != "a,b,c" {
			t.Errorf("%s: confusion %s over %v", in, got, m.Labels)
		}
		text := out.String()
		for _, s := range []string{
			"rows       8 (7 evaluated; skipped: 1 with a null gold)\n",
			"accuracy   0.4286 (3/7)\n",
			"macro-F1   0.3238\n",
			"a             0.5000  0.6667  0.5714        3\n",
			"c             0.0000  0.0000  0.0000        2\n",
			"macro avg     0.2778  0.3889  0.3238        7\n",
			"confusion matrix: rows are gold (gold), columns label (predicted)\ngold \\ pred  a  b  c\na            2  1  0\nb            1  1  0\nc            1  1  0\n",
		} {
			if !strings.Contains(text, s) {
				t.Errorf("%s: output lacks %q:\n%s", in, s, text)
			}
		}
	}
}

// TestEvalErrors: a misspelt column names the columns there are (usage
// error), and results with no labelled row are an error, not accuracy 0.
func TestEvalErrors(t *testing.T) {
	tmp := t.TempDir()
	for _, in := range writeEvalInputs(t, tmp) {
		err := runEval(&bytes.Buffer{}, evalFlags{pred: in, goldColumn: "gld", predColumn: "label"})
		if err == nil || !isUsageError(err) || !strings.Contains(err.Error(), `no column "gld"`) || !strings.Contains(err.Error(), "gold") {
			t.Errorf("%s: --gold-column gld: %v", in, err)
		}
		err = runEval(&bytes.Buffer{}, evalFlags{pred: in, goldColumn: "gold", predColumn: "lbl"})
		if err == nil || !isUsageError(err) || !strings.Contains(err.Error(), "--pred-column") {
			t.Errorf("%s: --pred-column lbl: %v", in, err)
		}
	}
	if err := runEval(&bytes.Buffer{}, evalFlags{pred: "x.parquet"}); err == nil || !isUsageError(err) {
		t.Errorf("no --gold-column: %v", err)
	}
	unlabelled := filepath.Join(tmp, "u.jsonl")
	os.WriteFile(unlabelled, []byte(`{"label":"a","gold":null}`+"\n"), 0o644)
	if err := runEval(&bytes.Buffer{}, evalFlags{pred: unlabelled, goldColumn: "gold", predColumn: "label"}); err == nil || !strings.Contains(err.Error(), "1 with a null gold") {
		t.Errorf("all gold null: %v", err)
	}
}
