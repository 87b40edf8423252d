package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/internal/atomicfile"
	"github.com/onecore-dev/onecore/pipeline"
)

// evalFlags are the flags of eval.
type evalFlags struct {
	pred       string
	goldColumn string
	predColumn string
	head       string // auto, multiclass, multilabel or regression
	jsonOut    string
}

func init() {
	var fl evalFlags
	cmd := &cobra.Command{
		Use:   "eval --pred RESULTS --gold-column COLUMN",
		Short: "Score classify or extract results against gold labels (accuracy, F1, confusion matrix; exact match)",
		Long: `eval compares the predicted labels of a classify output with gold labels in
the same rows, so a classifier can be measured without another tool. RESULTS
is what onecore show reads: Parquet, Arrow IPC, JSON Lines (plain or .zst),
or an output directory (its parts). The gold labels are a column of it,
usually copied from the input with --keep (--keep label:gold: the input's
label becomes the column gold, next to the predicted label).

Prints the rows read, accuracy, macro-F1 (the unweighted mean of the
per-class F1), per-class precision, recall, F1 and support (gold rows), and
the confusion matrix (rows: gold label, columns: predicted label). The
classes are every label seen as gold or as a prediction: a gold label the
model never predicts counts in macro-F1 with F1 0, as does a predicted label
no row has as gold. A precision or recall with nothing to divide by is 0.

Rows whose gold is null are counted and skipped (unlabelled rows are not
errors); so are rows whose prediction is null. --json FILE also writes the
same numbers as JSON.

Results of the other heads (--head auto tells them by the prediction
column: a list is multilabel, a number regression):
  multilabel  (classify's labels column; gold a list, or the JSON text of
              one as --keep copies an array field): per-label precision,
              recall, F1 and support, micro and macro averages, subset
              accuracy (the whole set right) and Hamming loss (wrong
              label decisions per row and label).
  regression  (classify's value column; gold a number or its text): MAE,
              RMSE, R² (1 − residual/total sum of squares) and Pearson r.
  extract     (extract's answer column, with abstained; gold the answer
              text, null where the document does not hold it — these rows
              count: abstaining on them is right): exact match over every
              row (answer = gold after trimming spaces), token F1 over rows
              whose gold is present (SQuAD-style, lower-cased), and
              precision/recall/F1 of abstaining — bench/extract/score.py's
              metrics.`,
		Example: `  onecore classify --in testdata/sample --out r.parquet --keep gold
  onecore eval --pred r.parquet --gold-column gold
  onecore classify --in reviews.parquet --out r/ --keep label:gold
  onecore eval --pred r/ --gold-column gold --json metrics.json
  onecore classify --model tagger --in posts.jsonl --out t.parquet --keep tags:gold
  onecore eval --pred t.parquet --gold-column gold            # multilabel: labels vs gold
  onecore extract --task extract --model sender/ --question-field q --in labeled.jsonl --out a.parquet --keep answer:gold
  onecore eval --pred a.parquet --gold-column gold            # extract: answer vs gold`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd.OutOrStdout(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.pred, "pred", "", "classify results: file (.parquet, .arrow, .jsonl, .jsonl.zst) or output directory")
	f.StringVar(&fl.goldColumn, "gold-column", "", "column holding the gold label (e.g. from --keep label:gold)")
	f.StringVar(&fl.predColumn, "pred-column", "", "column holding the prediction (default: the first of label, labels, value the results have)")
	f.StringVar(&fl.head, "head", "auto", "what the results hold: multiclass (one label), multilabel (a list of labels), regression (a number), extract (an answer); auto: from the prediction column and its values")
	f.StringVar(&fl.jsonOut, "json", "", "also write the metrics as JSON to this file")
	rootCmd.AddCommand(cmd)
}

func runEval(w io.Writer, fl evalFlags) error {
	if fl.pred == "" || fl.goldColumn == "" {
		return usageError{errors.New("eval needs --pred RESULTS and --gold-column COLUMN")}
	}
	if fl.head == "" {
		fl.head = "auto"
	}
	switch fl.head {
	case "auto", headMulticlass, headMultilabel, headRegression, headExtract:
	default:
		return usageError{fmt.Errorf("--head %q: want auto, multiclass, multilabel, regression or extract", fl.head)}
	}
	files, err := resultFiles(fl.pred)
	if err != nil {
		return err
	}
	if fl.predColumn == "" {
		if fl.predColumn, err = defaultPredColumn(files[0]); err != nil {
			return err
		}
	}
	if fl.predColumn == fl.goldColumn {
		return usageError{fmt.Errorf("--pred-column %q: want a column other than the gold one", fl.predColumn)}
	}
	var pairs []labelPair
	for _, f := range files {
		row := 0
		if err := readLabelPairs(f, fl.goldColumn, fl.predColumn, func(p labelPair) {
			row++
			p.file, p.row = f, row
			pairs = append(pairs, p)
		}); err != nil {
			return err
		}
	}
	head := fl.head
	if head == "auto" {
		head = detectHead(pairs)
		if fl.predColumn == "answer" {
			head = headExtract
		}
	}
	var abstained []bool
	if head == headExtract {
		// abstained, row by row in the same order (a second pass: the
		// pair reader takes two columns)
		for _, f := range files {
			if err := readLabelPairs(f, fl.goldColumn, "abstained", func(p labelPair) {
				abstained = append(abstained, p.predValid && p.pred == "true")
			}); err != nil {
				return err
			}
		}
	}
	var m interface {
		print(w io.Writer, goldCol, predCol string) error
	}
	switch head {
	case headMultilabel:
		m, err = evaluateMultilabel(pairs)
	case headRegression:
		m, err = evaluateRegression(pairs)
	case headExtract:
		m, err = evaluateExtract(pairs, abstained)
	default:
		m, err = evaluate(pairs)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", fl.pred, err)
	}
	if err := m.print(w, fl.goldColumn, fl.predColumn); err != nil {
		return err
	}
	if fl.jsonOut != "" {
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(fl.jsonOut, append(b, '\n'))
	}
	return nil
}

// labelPair is one row's gold and predicted label; a null value is
// marked invalid rather than given a spelling that a real label could have.
type labelPair struct {
	gold, pred           string
	goldValid, predValid bool
	// the same cells as typed values, for the multilabel and regression
	// evaluations; file and row (1-based) name the row in errors
	goldCell, predCell evalCell
	file               string
	row                int
}

// readLabelPairs calls fn with the gold and predicted label of every row of
// one results file. A missing column is an error naming the columns there
// are, since a typo in --gold-column would otherwise look like "all null".
func readLabelPairs(path, goldCol, predCol string, fn func(labelPair)) error {
	switch f := pipeline.FormatOf(path); f {
	case "parquet", "arrow":
		return pipeline.ReadRecords(path, f, func(rec arrow.RecordBatch) error {
			gi, pi := rec.Schema().FieldIndices(goldCol), rec.Schema().FieldIndices(predCol)
			if len(gi) != 1 || len(pi) != 1 {
				names := make([]string, rec.NumCols())
				for i, fld := range rec.Schema().Fields() {
					names[i] = fld.Name
				}
				return missingColumn(path, goldCol, predCol, len(gi) == 1, names)
			}
			g, p := rec.Column(gi[0]), rec.Column(pi[0])
			for r := 0; r < int(rec.NumRows()); r++ {
				lp := labelPair{goldValid: g.IsValid(r), predValid: p.IsValid(r)}
				if lp.goldValid {
					lp.gold, lp.goldCell = cell(g, r), arrowEvalCell(g, r)
				}
				if lp.predValid {
					lp.pred, lp.predCell = cell(p, r), arrowEvalCell(p, r)
				}
				fn(lp)
			}
			return nil
		})
	case "jsonl", "jsonl.zst":
		return readJSONLPairs(path, f == "jsonl.zst", goldCol, predCol, fn)
	default:
		return usageError{fmt.Errorf("%s: not a results file (want .parquet, .arrow, .jsonl or .jsonl.zst)", path)}
	}
}

// readJSONLPairs is readLabelPairs for JSON Lines. A key absent from a row
// is null there (the writers omit nothing, but hand-made files may); a file
// where no row has the key is the missing-column error.
func readJSONLPairs(path string, zst bool, goldCol, predCol string, fn func(labelPair)) error {
	var keys []string // every key seen, for the missing-column error
	seenGold, seenPred := false, false
	rows := 0
	err := eachJSONLObject(path, zst, func(ks []string, vals []any) error {
		var lp labelPair
		for i, k := range ks {
			if indexOf(keys, k) < 0 {
				keys = append(keys, k)
			}
			switch k {
			case goldCol:
				seenGold = true
				if vals[i] != nil {
					lp.gold, lp.goldValid, lp.goldCell = jsonCell(vals[i]), true, jsonEvalCell(vals[i])
				}
			case predCol:
				seenPred = true
				if vals[i] != nil {
					lp.pred, lp.predValid, lp.predCell = jsonCell(vals[i]), true, jsonEvalCell(vals[i])
				}
			}
		}
		fn(lp)
		rows++
		return nil
	})
	if err != nil {
		return err
	}
	if rows > 0 && (!seenGold || !seenPred) {
		return missingColumn(path, goldCol, predCol, seenGold, keys)
	}
	return nil
}

func missingColumn(path, goldCol, predCol string, goldFound bool, have []string) error {
	col, flag := goldCol, "--gold-column"
	if goldFound {
		col, flag = predCol, "--pred-column"
	}
	return usageError{fmt.Errorf("%s: no column %q (%s; columns: %s)", path, col, flag, strings.Join(have, ", "))}
}

// classMetrics are one class's numbers.
type classMetrics struct {
	Label     string  `json:"label"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	Support   int     `json:"support"`   // rows with this gold label
	Predicted int     `json:"predicted"` // rows with this predicted label
}

// evalMetrics is everything eval reports, printed and written as JSON.
type evalMetrics struct {
	Head           string         `json:"head"`      // "multiclass"
	Rows           int            `json:"rows"`      // rows read
	NullGold       int            `json:"null_gold"` // skipped: gold is null
	NullPred       int            `json:"null_pred"` // skipped: gold set, prediction null
	Evaluated      int            `json:"evaluated"` // rows with both
	Correct        int            `json:"correct"`
	Accuracy       float64        `json:"accuracy"`
	MacroPrecision float64        `json:"macro_precision"`
	MacroRecall    float64        `json:"macro_recall"`
	MacroF1        float64        `json:"macro_f1"`
	Classes        []classMetrics `json:"classes"` // in label order
	// Labels orders the confusion matrix; Confusion[i][j] counts rows with
	// gold Labels[i] predicted as Labels[j].
	Labels    []string `json:"labels"`
	Confusion [][]int  `json:"confusion"`
}

// evaluate computes the metrics of the rows. The classes are the union of
// gold and predicted labels, sorted, so the confusion matrix is square and
// a class the model never predicts (or never should) weighs in macro-F1.
func evaluate(pairs []labelPair) (*evalMetrics, error) {
	m := &evalMetrics{Head: headMulticlass, Rows: len(pairs)}
	index := map[string]int{}
	for _, p := range pairs {
		switch {
		case !p.goldValid:
			m.NullGold++
			continue
		case !p.predValid:
			m.NullPred++
			continue
		}
		m.Evaluated++
		for _, l := range []string{p.gold, p.pred} {
			if _, ok := index[l]; !ok {
				index[l] = 0
				m.Labels = append(m.Labels, l)
			}
		}
	}
	if m.Evaluated == 0 {
		return nil, fmt.Errorf("no row has both a gold and a predicted label (%d rows, %d with a null gold)", m.Rows, m.NullGold)
	}
	sort.Strings(m.Labels)
	for i, l := range m.Labels {
		index[l] = i
	}
	k := len(m.Labels)
	m.Confusion = make([][]int, k)
	for i := range m.Confusion {
		m.Confusion[i] = make([]int, k)
	}
	for _, p := range pairs {
		if p.goldValid && p.predValid {
			m.Confusion[index[p.gold]][index[p.pred]]++
		}
	}
	for i, l := range m.Labels {
		c := classMetrics{Label: l}
		tp := m.Confusion[i][i]
		m.Correct += tp
		for j := 0; j < k; j++ {
			c.Support += m.Confusion[i][j]
			c.Predicted += m.Confusion[j][i]
		}
		c.Precision = ratio(tp, c.Predicted)
		c.Recall = ratio(tp, c.Support)
		// 2TP/(2TP+FP+FN): the harmonic mean of precision and recall, and 0
		// (not NaN) for a class with neither predictions nor gold rows right.
		c.F1 = ratio(2*tp, c.Predicted+c.Support)
		m.MacroPrecision += c.Precision / float64(k)
		m.MacroRecall += c.Recall / float64(k)
		m.MacroF1 += c.F1 / float64(k)
		m.Classes = append(m.Classes, c)
	}
	m.Accuracy = ratio(m.Correct, m.Evaluated)
	return m, nil
}

// print writes the metrics as plain text tables.
func (m *evalMetrics) print(w io.Writer, goldCol, predCol string) error {
	bw := bufio.NewWriter(w)
	printRows(bw, m.Rows, m.Evaluated, m.NullGold, m.NullPred, goldCol, predCol)
	fmt.Fprintf(bw, "accuracy   %s (%d/%d)\nmacro-F1   %s\n\n", f4(m.Accuracy), m.Correct, m.Evaluated, f4(m.MacroF1))

	rows := [][]string{{"class", "precision", "recall", "f1", "support"}}
	for _, c := range m.Classes {
		rows = append(rows, []string{c.Label, f4(c.Precision), f4(c.Recall), f4(c.F1), strconv.Itoa(c.Support)})
	}
	rows = append(rows, []string{"macro avg", f4(m.MacroPrecision), f4(m.MacroRecall), f4(m.MacroF1), strconv.Itoa(m.Evaluated)})
	writeAligned(bw, rows)

	fmt.Fprintf(bw, "\nconfusion matrix: rows are %s (gold), columns %s (predicted)\n", goldCol, predCol)
	rows = [][]string{append([]string{"gold \\ pred"}, m.Labels...)}
	for i, l := range m.Labels {
		r := []string{l}
		for _, n := range m.Confusion[i] {
			r = append(r, strconv.Itoa(n))
		}
		rows = append(rows, r)
	}
	writeAligned(bw, rows)
	return bw.Flush()
}

// f4 is a metric with 4 decimals (fixed, so the columns line up).
func f4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// writeAligned writes rows as columns two spaces apart: the first (names)
// left-aligned, the others (numbers) right-aligned.
func writeAligned(w io.Writer, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}
