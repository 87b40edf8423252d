package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/klauspost/compress/zstd"
	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/pipeline"
)

// showFlags are the flags of show.
type showFlags struct {
	limit   int
	columns []string
	count   bool
	width   int
}

func init() {
	var fl showFlags
	cmd := &cobra.Command{
		Use:   "show FILE|DIR",
		Short: "Print results (Parquet, Arrow, JSON Lines) as a table",
		Long: `show prints a results file as an aligned table, so results can be looked at
without another tool: Parquet, Arrow IPC and JSON Lines (plain or .zst), or an
output directory (its parts, in name order).

Floats are rounded to 4 decimals, long values cut to --width characters
(with …), nulls shown as NULL. --count prints, instead of rows, the number of
rows per distinct combination of the --columns values (a GROUP BY ... count),
most frequent first.

DuckDB, if installed, reads the same files with SQL; show needs nothing else.`,
		Example: `  onecore show results.parquet
  onecore show results.parquet --columns id,label,score,gold --limit 5
  onecore show results.parquet --columns gold,label --count
  onecore show scores/ --columns id,bits_per_byte --limit 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShow(cmd.OutOrStdout(), args[0], fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.limit, "limit", 10, "rows to print (0: all; with --count, groups)")
	f.StringSliceVar(&fl.columns, "columns", nil, "columns to print, in this order (default: all)")
	f.BoolVar(&fl.count, "count", false, "count rows per distinct value of --columns instead of printing rows")
	f.IntVar(&fl.width, "width", 40, "cut longer values to this many characters")
	rootCmd.AddCommand(cmd)
}

// errEnough stops reading once --limit rows are in (or, for eval, the
// columns are known).
var errEnough = errors.New("enough rows")

func runShow(w io.Writer, path string, fl showFlags) error {
	if fl.limit < 0 || fl.width < 4 {
		return usageError{errors.New("--limit must be ≥ 0 and --width ≥ 4")}
	}
	if fl.count && len(fl.columns) == 0 {
		return usageError{errors.New("--count needs --columns (the values to count by)")}
	}
	files, err := resultFiles(path)
	if err != nil {
		return err
	}
	t := &table{want: fl.columns, width: fl.width}
	if !fl.count && fl.limit > 0 {
		t.limit = fl.limit
	}
	for _, f := range files {
		if err := t.read(f); errors.Is(err, errEnough) {
			break
		} else if err != nil {
			return err
		}
	}
	if err := t.project(); err != nil {
		return usageError{err}
	}
	if fl.count {
		t.countBy()
		if fl.limit > 0 && len(t.rows) > fl.limit {
			t.rows = t.rows[:fl.limit]
		}
	}
	t.print(w)
	return nil
}

// resultFiles lists the results files of path: path itself, or the parts of
// an output directory in name order (show and eval read the same things).
func resultFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	all, _ := filepath.Glob(filepath.Join(path, "part-*"))
	for _, f := range all {
		if pipeline.FormatOf(f) != "" {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no part-* results files", path)
	}
	return files, nil
}

// table is the rows read so far, as display strings.
type table struct {
	want   []string
	width  int
	limit  int // stop after this many rows (0: all)
	header []string
	rows   [][]string
}

func (t *table) full() bool { return t.limit > 0 && len(t.rows) >= t.limit }

// read appends the rows of one results file.
func (t *table) read(path string) error {
	switch f := pipeline.FormatOf(path); f {
	case "parquet", "arrow":
		return pipeline.ReadRecords(path, f, t.addRecord)
	case "jsonl", "jsonl.zst":
		return t.readJSONL(path, f == "jsonl.zst")
	default:
		return usageError{fmt.Errorf("%s: not a results file (want .parquet, .arrow, .jsonl or .jsonl.zst)", path)}
	}
}

func (t *table) addRecord(rec arrow.RecordBatch) error {
	names := make([]string, rec.NumCols())
	for i, f := range rec.Schema().Fields() {
		names[i] = f.Name
	}
	if t.header == nil {
		t.header = names
	}
	for r := 0; r < int(rec.NumRows()); r++ {
		if t.full() {
			return errEnough
		}
		row := make([]string, len(t.header))
		for i, n := range names {
			if j := indexOf(t.header, n); j >= 0 {
				row[j] = cell(rec.Column(i), r)
			}
		}
		t.rows = append(t.rows, row)
	}
	if t.full() {
		return errEnough
	}
	return nil
}

// cell renders one value: floats rounded, lists of floats too.
func cell(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch c := col.(type) {
	case *array.Float64:
		return fmtFloat(c.Value(i))
	case *array.Float32:
		return fmtFloat(float64(c.Value(i)))
	case *array.String:
		return c.Value(i)
	case *array.List:
		lo, hi := c.ValueOffsets(i)
		parts := make([]string, 0, hi-lo)
		for k := lo; k < hi; k++ {
			parts = append(parts, cell(c.ListValues(), int(k)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return col.ValueStr(i)
}

func fmtFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(math.Round(v*1e4)/1e4, 'f', -1, 64)
}

// readJSONL reads JSON Lines rows; the columns are the keys in order of
// first appearance.
func (t *table) readJSONL(path string, zst bool) error {
	return eachJSONLObject(path, zst, func(keys []string, vals []any) error {
		if t.full() {
			return errEnough
		}
		for _, k := range keys {
			if indexOf(t.header, k) < 0 {
				t.header = append(t.header, k)
				for i := range t.rows {
					t.rows[i] = append(t.rows[i], "NULL")
				}
			}
		}
		row := make([]string, len(t.header))
		for i := range row {
			row[i] = "NULL"
		}
		for i, k := range keys {
			row[indexOf(t.header, k)] = jsonCell(vals[i])
		}
		t.rows = append(t.rows, row)
		return nil
	})
}

// objectInOrder decodes one JSON object keeping its keys' order.
func objectInOrder(dec *json.Decoder) ([]string, []any, error) {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not a JSON object")
	}
	var keys []string
	var vals []any
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, tok.(string))
		vals = append(vals, v)
	}
	return keys, vals, nil
}

func jsonCell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case json.Number:
		if f, err := x.Float64(); err == nil && strings.ContainsAny(string(x), ".eE") {
			return fmtFloat(f)
		}
		return string(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = jsonCell(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

// project keeps the --columns, in their order.
func (t *table) project() error {
	if len(t.want) == 0 {
		return nil
	}
	idx := make([]int, len(t.want))
	for i, c := range t.want {
		if idx[i] = indexOf(t.header, c); idx[i] < 0 {
			return fmt.Errorf("no column %q (columns: %s)", c, strings.Join(t.header, ", "))
		}
	}
	for r, row := range t.rows {
		nr := make([]string, len(idx))
		for i, j := range idx {
			nr[i] = row[j]
		}
		t.rows[r] = nr
	}
	t.header = append([]string(nil), t.want...)
	return nil
}

// countBy replaces the rows by one per distinct row with its count, most
// frequent first (ties in value order).
func (t *table) countBy() {
	counts := map[string]int{}
	first := map[string][]string{}
	for _, row := range t.rows {
		k := strings.Join(row, "\x00")
		if counts[k] == 0 {
			first[k] = row
		}
		counts[k]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	t.rows = t.rows[:0]
	for _, k := range keys {
		t.rows = append(t.rows, append(append([]string(nil), first[k]...), strconv.Itoa(counts[k])))
	}
	t.header = append(t.header, "n")
}

// print draws the table with box-drawing characters, like DuckDB's.
func (t *table) print(w io.Writer) {
	cut := func(s string) string {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", "\\n"), "\t", " ")
		if utf8.RuneCountInString(s) <= t.width {
			return s
		}
		r := []rune(s)
		return string(r[:t.width-1]) + "…"
	}
	widths := make([]int, len(t.header))
	for i, h := range t.header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, row := range t.rows {
		for i := range row {
			row[i] = cut(row[i])
			widths[i] = max(widths[i], utf8.RuneCountInString(row[i]))
		}
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	line := func(l, m, r string) {
		bw.WriteString(l)
		for i, wd := range widths {
			if i > 0 {
				bw.WriteString(m)
			}
			bw.WriteString(strings.Repeat("─", wd+2))
		}
		bw.WriteString(r + "\n")
	}
	cells := func(vals []string) {
		bw.WriteString("│")
		for i, v := range vals {
			fmt.Fprintf(bw, " %s%s │", v, strings.Repeat(" ", widths[i]-utf8.RuneCountInString(v)))
		}
		bw.WriteString("\n")
	}
	line("┌", "┬", "┐")
	cells(t.header)
	line("├", "┼", "┤")
	for _, row := range t.rows {
		cells(row)
	}
	line("└", "┴", "┘")
	fmt.Fprintf(bw, "%d row(s)\n", len(t.rows))
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// eachJSONLObject calls fn with the keys (in file order) and values of
// every non-blank line of a JSON Lines results file (plain or zstd), with
// room for long lines (an embedding row, a long answer). A line that is not
// a JSON object is an error naming the file and line; an error of fn stops
// the read and is returned as it is (errEnough, say).
func eachJSONLObject(path string, zst bool, fn func(keys []string, vals []any) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if zst {
		d, err := zstd.NewReader(f)
		if err != nil {
			return err
		}
		defer d.Close()
		r = d
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.UseNumber()
		keys, vals, err := objectInOrder(dec)
		if err != nil {
			return fmt.Errorf("%s: line %d: %v", path, n, err)
		}
		if err := fn(keys, vals); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
