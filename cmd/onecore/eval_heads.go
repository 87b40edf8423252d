package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/pipeline"
)

// The kinds of classify results eval scores (--head): the head kinds a
// checkpoint records.
const (
	headMulticlass = engine.HeadMulticlass
	headMultilabel = engine.HeadMultilabel
	headRegression = engine.HeadRegression
)

// evalCell is one results cell as a typed value: a list (an Arrow list or
// a JSON array), a number, or text. Text may still hold a list or a number
// (--keep copies an input's array or number field as its JSON text), which
// asList and asNumber accept.
type evalCell struct {
	kind cellKind
	text string   // kindText
	list []string // kindList
	num  float64  // kindNumber
}

type cellKind uint8

const (
	kindText cellKind = iota
	kindNumber
	kindList
)

// arrowEvalCell reads row i (not null) of an Arrow column.
func arrowEvalCell(col arrow.Array, i int) evalCell {
	switch c := col.(type) {
	case *array.List:
		lo, hi := c.ValueOffsets(i)
		l := make([]string, 0, hi-lo)
		for k := lo; k < hi; k++ {
			if !c.ListValues().IsNull(int(k)) {
				l = append(l, cell(c.ListValues(), int(k)))
			}
		}
		return evalCell{kind: kindList, list: l}
	case *array.Float32:
		return evalCell{kind: kindNumber, num: float64(c.Value(i))}
	case *array.Float64:
		return evalCell{kind: kindNumber, num: c.Value(i)}
	case *array.Int64:
		return evalCell{kind: kindNumber, num: float64(c.Value(i))}
	case *array.Int32:
		return evalCell{kind: kindNumber, num: float64(c.Value(i))}
	case *array.String:
		return evalCell{kind: kindText, text: c.Value(i)}
	}
	return evalCell{kind: kindText, text: col.ValueStr(i)}
}

// jsonEvalCell is arrowEvalCell for a decoded JSON value (not null).
func jsonEvalCell(v any) evalCell {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return evalCell{kind: kindNumber, num: f}
		}
	case []any:
		l := make([]string, 0, len(x))
		for _, e := range x {
			if e != nil {
				l = append(l, jsonCell(e))
			}
		}
		return evalCell{kind: kindList, list: l}
	case string:
		return evalCell{kind: kindText, text: x}
	}
	return evalCell{kind: kindText, text: jsonCell(v)}
}

// asList is the cell as a set of labels: a list, or text holding a JSON
// array of strings.
func (c evalCell) asList() ([]string, error) {
	switch c.kind {
	case kindList:
		return c.list, nil
	case kindText:
		var l []string
		if err := json.Unmarshal([]byte(c.text), &l); err != nil {
			return nil, fmt.Errorf("%q is not a list of labels (want a list, or the JSON text of an array of strings)", c.text)
		}
		return l, nil
	}
	return nil, fmt.Errorf("%v is a number, not a list of labels", c.num)
}

// asNumber is the cell as a number: a number, or text holding one.
func (c evalCell) asNumber() (float64, error) {
	switch c.kind {
	case kindNumber:
		return c.num, nil
	case kindText:
		f, err := strconv.ParseFloat(strings.TrimSpace(c.text), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%q is not a finite number", c.text)
		}
		return f, nil
	}
	return 0, errors.New("a list is not a number")
}

// detectHead is --head auto: the kind of the first non-null prediction.
func detectHead(pairs []labelPair) string {
	for _, p := range pairs {
		if p.predValid {
			switch p.predCell.kind {
			case kindList:
				return headMultilabel
			case kindNumber:
				return headRegression
			}
			return headMulticlass
		}
	}
	return headMulticlass
}

// defaultPredColumn is --pred-column when not given: the first of label
// (multiclass), labels (multilabel), value (regression) and answer
// (extract) that the first results file has.
func defaultPredColumn(path string) (string, error) {
	cols, err := resultColumns(path)
	if err != nil {
		return "", err
	}
	for _, c := range []string{"label", "labels", "value", "answer"} {
		if indexOf(cols, c) >= 0 {
			return c, nil
		}
	}
	return "", usageError{fmt.Errorf("%s: no column label, labels, value or answer: give --pred-column (columns: %s)", path, strings.Join(cols, ", "))}
}

// resultColumns lists the columns (errEnough, show's, stops the read) of a results file: the schema of
// Parquet/Arrow, the keys of the first row of JSON Lines.
func resultColumns(path string) ([]string, error) {
	var cols []string
	switch f := pipeline.FormatOf(path); f {
	case "parquet", "arrow":
		err := pipeline.ReadRecords(path, f, func(rec arrow.RecordBatch) error {
			for _, fld := range rec.Schema().Fields() {
				cols = append(cols, fld.Name)
			}
			return errEnough
		})
		if err != nil && !errors.Is(err, errEnough) {
			return nil, err
		}
	case "jsonl", "jsonl.zst":
		err := eachJSONLObject(path, f == "jsonl.zst", func(keys []string, _ []any) error {
			cols = keys
			return errEnough
		})
		if err != nil && !errors.Is(err, errEnough) {
			return nil, err
		}
	default:
		return nil, usageError{fmt.Errorf("%s: not a results file (want .parquet, .arrow, .jsonl or .jsonl.zst)", path)}
	}
	return cols, nil
}

// labelMetrics are one label's numbers in a multilabel evaluation.
type labelMetrics struct {
	Label     string  `json:"label"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	Support   int     `json:"support"`   // rows whose gold set has the label
	Predicted int     `json:"predicted"` // rows whose predicted set has it
}

// multilabelMetrics is eval's report for a multilabel head.
type multilabelMetrics struct {
	Head           string         `json:"head"` // "multilabel"
	Rows           int            `json:"rows"`
	NullGold       int            `json:"null_gold"`
	NullPred       int            `json:"null_pred"`
	Evaluated      int            `json:"evaluated"`
	ExactSets      int            `json:"exact_sets"`
	SubsetAccuracy float64        `json:"subset_accuracy"` // rows whose predicted set equals the gold set
	HammingLoss    float64        `json:"hamming_loss"`    // wrong label decisions / (rows × labels)
	MicroPrecision float64        `json:"micro_precision"`
	MicroRecall    float64        `json:"micro_recall"`
	MicroF1        float64        `json:"micro_f1"`
	MacroPrecision float64        `json:"macro_precision"`
	MacroRecall    float64        `json:"macro_recall"`
	MacroF1        float64        `json:"macro_f1"`
	Labels         []labelMetrics `json:"labels"` // sorted by label
}

// scoredPairs converts gold and prediction of every row that has both with
// conv, counting the rows with a null gold or prediction; a value conv
// refuses is an error naming the file and row.
func scoredPairs[T any](pairs []labelPair, conv func(evalCell) (T, error), nullGold, nullPred *int) (gold, pred []T, err error) {
	for _, p := range pairs {
		switch {
		case !p.goldValid:
			*nullGold++
			continue
		case !p.predValid:
			*nullPred++
			continue
		}
		g, err := conv(p.goldCell)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: row %d: gold %v", p.file, p.row, err)
		}
		v, err := conv(p.predCell)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: row %d: prediction %v", p.file, p.row, err)
		}
		gold, pred = append(gold, g), append(pred, v)
	}
	return gold, pred, nil
}

// evaluateMultilabel scores predicted label sets against gold sets. The
// labels are every label seen in a gold or predicted set; duplicates in a
// set count once.
func evaluateMultilabel(pairs []labelPair) (*multilabelMetrics, error) {
	m := &multilabelMetrics{Head: headMultilabel, Rows: len(pairs)}
	type counts struct{ tp, pred, gold int }
	per := map[string]*counts{}
	get := func(l string) *counts {
		c := per[l]
		if c == nil {
			c = &counts{}
			per[l] = c
		}
		return c
	}
	golds, preds, err := scoredPairs(pairs, evalCell.asList, &m.NullGold, &m.NullPred)
	if err != nil {
		return nil, err
	}
	m.Evaluated = len(golds)
	var wrong int // label decisions that differ: |gold Δ pred| summed over rows
	for i := range golds {
		gs, ps := set(golds[i]), set(preds[i])
		for l := range gs {
			get(l).gold++
			if ps[l] {
				get(l).tp++
			} else {
				wrong++
			}
		}
		for l := range ps {
			get(l).pred++
			if !gs[l] {
				wrong++
			}
		}
		if sameSet(gs, ps) {
			m.ExactSets++
		}
	}
	if m.Evaluated == 0 {
		return nil, fmt.Errorf("no row has both a gold and a predicted label set (%d rows, %d with a null gold)", m.Rows, m.NullGold)
	}
	names := make([]string, 0, len(per))
	for l := range per {
		names = append(names, l)
	}
	sort.Strings(names)
	var tp, pred, gold int
	for _, l := range names {
		c := per[l]
		lm := labelMetrics{Label: l, Support: c.gold, Predicted: c.pred,
			Precision: ratio(c.tp, c.pred), Recall: ratio(c.tp, c.gold), F1: ratio(2*c.tp, c.pred+c.gold)}
		m.Labels = append(m.Labels, lm)
		k := float64(len(names))
		m.MacroPrecision += lm.Precision / k
		m.MacroRecall += lm.Recall / k
		m.MacroF1 += lm.F1 / k
		tp, pred, gold = tp+c.tp, pred+c.pred, gold+c.gold
	}
	m.MicroPrecision, m.MicroRecall, m.MicroF1 = ratio(tp, pred), ratio(tp, gold), ratio(2*tp, pred+gold)
	m.SubsetAccuracy = ratio(m.ExactSets, m.Evaluated)
	if len(names) > 0 {
		m.HammingLoss = float64(wrong) / float64(m.Evaluated*len(names))
	}
	return m, nil
}

func set(l []string) map[string]bool {
	s := make(map[string]bool, len(l))
	for _, x := range l {
		s[x] = true
	}
	return s
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// ratio is a/b, and 0 (not NaN) when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (m *multilabelMetrics) print(w io.Writer, goldCol, predCol string) error {
	bw := bufio.NewWriter(w)
	printRows(bw, m.Rows, m.Evaluated, m.NullGold, m.NullPred, goldCol, predCol)
	fmt.Fprintf(bw, "subset accuracy  %s (%d/%d rows with the exact gold set)\n", f4(m.SubsetAccuracy), m.ExactSets, m.Evaluated)
	fmt.Fprintf(bw, "hamming loss     %s\nmicro-F1         %s\nmacro-F1         %s\n\n", f4(m.HammingLoss), f4(m.MicroF1), f4(m.MacroF1))
	rows := [][]string{{"label", "precision", "recall", "f1", "support", "predicted"}}
	for _, l := range m.Labels {
		rows = append(rows, []string{l.Label, f4(l.Precision), f4(l.Recall), f4(l.F1), strconv.Itoa(l.Support), strconv.Itoa(l.Predicted)})
	}
	rows = append(rows, []string{"micro avg", f4(m.MicroPrecision), f4(m.MicroRecall), f4(m.MicroF1), "", ""})
	rows = append(rows, []string{"macro avg", f4(m.MacroPrecision), f4(m.MacroRecall), f4(m.MacroF1), "", ""})
	writeAligned(bw, rows)
	return bw.Flush()
}

// regressionMetrics is eval's report for a regression head.
type regressionMetrics struct {
	Head      string  `json:"head"` // "regression"
	Rows      int     `json:"rows"`
	NullGold  int     `json:"null_gold"`
	NullPred  int     `json:"null_pred"`
	Evaluated int     `json:"evaluated"`
	MAE       float64 `json:"mae"`
	RMSE      float64 `json:"rmse"`
	R2        float64 `json:"r2"`      // 1 − SS_res/SS_tot (0 when the gold values are all equal)
	Pearson   float64 `json:"pearson"` // 0 when either side is constant
	GoldMean  float64 `json:"gold_mean"`
	PredMean  float64 `json:"pred_mean"`
}

// evaluateRegression scores predicted numbers against gold numbers.
func evaluateRegression(pairs []labelPair) (*regressionMetrics, error) {
	m := &regressionMetrics{Head: headRegression, Rows: len(pairs)}
	gs, ps, err := scoredPairs(pairs, evalCell.asNumber, &m.NullGold, &m.NullPred)
	if err != nil {
		return nil, err
	}
	m.Evaluated = len(gs)
	if m.Evaluated == 0 {
		return nil, fmt.Errorf("no row has both a gold and a predicted value (%d rows, %d with a null gold)", m.Rows, m.NullGold)
	}
	n := float64(len(gs))
	for i := range gs {
		m.GoldMean += gs[i] / n
		m.PredMean += ps[i] / n
	}
	var abs, sq, ssTot, sgp, spp float64
	for i := range gs {
		d := ps[i] - gs[i]
		abs += math.Abs(d)
		sq += d * d
		dg, dp := gs[i]-m.GoldMean, ps[i]-m.PredMean
		ssTot += dg * dg
		sgp += dg * dp
		spp += dp * dp
	}
	m.MAE, m.RMSE = abs/n, math.Sqrt(sq/n)
	if ssTot > 0 {
		m.R2 = 1 - sq/ssTot
		if spp > 0 {
			m.Pearson = sgp / math.Sqrt(ssTot*spp)
		}
	}
	return m, nil
}

func (m *regressionMetrics) print(w io.Writer, goldCol, predCol string) error {
	bw := bufio.NewWriter(w)
	printRows(bw, m.Rows, m.Evaluated, m.NullGold, m.NullPred, goldCol, predCol)
	fmt.Fprintf(bw, "MAE        %s\nRMSE       %s\nR²         %s\nPearson r  %s\nmean       %s (gold), %s (predicted)\n",
		f4(m.MAE), f4(m.RMSE), f4(m.R2), f4(m.Pearson), f4(m.GoldMean), f4(m.PredMean))
	return bw.Flush()
}

// printRows writes the "rows N (M evaluated; skipped: …)" line.
func printRows(w io.Writer, rows, evaluated, nullGold, nullPred int, goldCol, predCol string) {
	fmt.Fprintf(w, "rows       %d", rows)
	var skipped []string
	if nullGold > 0 {
		skipped = append(skipped, fmt.Sprintf("%d with a null %s", nullGold, goldCol))
	}
	if nullPred > 0 {
		skipped = append(skipped, fmt.Sprintf("%d with a null %s", nullPred, predCol))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, " (%d evaluated; skipped: %s)", evaluated, strings.Join(skipped, ", "))
	}
	fmt.Fprintln(w)
}
