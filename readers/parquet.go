package readers

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// The Parquet reader streams row group by row group and, within a row
// group, page by page: each projected column (text, id, passthrough) has a
// cursor over its own pages, so memory holds one decoded page per column,
// whatever the row-group size. Columns not asked for are never read.
//
// Passthrough values surface as strings (see Value): BYTE_ARRAY as its bytes
// (UTF-8 policy applied), integers, floats and booleans as their JSON text,
// DATE as 2006-01-02, TIMESTAMP as RFC 3339 in UTC, DECIMAL as its exact
// decimal text, UUID in its canonical form, other fixed-length bytes as hex,
// and nested columns (groups, lists, maps) as compact JSON built with
// parquet-go's row reconstruction (object keys sorted, binary leaves base64).

// parquetReadBuffer is the read-ahead buffer per column.
const parquetReadBuffer = 2 << 20

type parquetSource struct {
	path string
	opts Options
	f    io.Closer // the file, or the object's ranged reader
	pf   *parquet.File

	text, id *leafCursor   // id is nil when the file has no id column
	keep     []keepColumn  // one per Options.Keep
	cursors  []*leafCursor // all leaf cursors, for advancing row groups

	rg       int                 // next row group
	rgLeft   int64               // rows left in the current row group
	row      int64               // file row of the next row
	keepVals [][][]parquet.Value // per keep column: its leaves' values of this row
	keepBuf  []Value             // Document.Keep, reused with Options.Borrow
}

// keepColumn extracts one passthrough field.
type keepColumn struct {
	name   string
	leaf   *leafCursor   // flat column
	leaves []*leafCursor // nested column: its leaves in schema order
	schema *parquet.Schema
	absent bool // not in this file: always null
}

// parquetFile is what a Parquet shard is read through: an *os.File or a
// *blobstore.ReaderAt.
type parquetFile interface {
	io.ReaderAt
	io.Closer
}

func openParquet(shard Shard, opts Options) (*parquetSource, error) {
	var (
		f    parquetFile
		size int64
	)
	if blobstore.Remote(shard.Path) {
		// Ranged GETs: the footer, then the column chunks the reader asks
		// for, each through one GET once announced (see announce); memory
		// stays the read buffers whatever the object's size.
		sz := shard.Size
		if sz <= 0 {
			sz = -1
		}
		ra, err := blobstore.OpenReaderAt(context.Background(), shard.Path, sz)
		if err != nil {
			return nil, err
		}
		f, size = ra, ra.Size()
	} else {
		lf, err := os.Open(shard.Path)
		if err != nil {
			return nil, err
		}
		st, err := lf.Stat()
		if err != nil {
			lf.Close()
			return nil, err
		}
		f, size = lf, st.Size()
	}
	return parquetFromFile(shard.Path, f, size, opts)
}

// parquetFromFile reads the Parquet file f of the given size; path names
// it in errors. f is closed on error.
func parquetFromFile(path string, f parquetFile, size int64, opts Options) (src *parquetSource, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &FileError{File: path, Err: fmt.Errorf("corrupt Parquet file (decoder panic: %v)", p)}
		}
		if err != nil {
			f.Close()
		}
	}()
	pf, err := parquet.OpenFile(f, size,
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(parquetReadBuffer))
	if err != nil {
		return nil, &FileError{File: path, Err: fmt.Errorf("not a readable Parquet file: %w", err)}
	}
	s := &parquetSource{path: path, opts: opts, f: f, pf: pf}
	root := pf.Root()
	textCol := root.Column(opts.TextField)
	if textCol == nil {
		return nil, &FileError{File: path, Err: fmt.Errorf("no column %q (the text field; columns: %v)", opts.TextField, columnNames(root))}
	}
	if !textCol.Leaf() || textCol.MaxRepetitionLevel() > 0 || textCol.Type().Kind() != parquet.ByteArray {
		return nil, &FileError{File: path, Err: fmt.Errorf("column %q (the text field) is %s, want a string column", opts.TextField, describe(textCol))}
	}
	s.text = s.cursor(textCol)
	if c := root.Column(opts.IDField); c != nil {
		if !c.Leaf() || c.MaxRepetitionLevel() > 0 {
			return nil, &FileError{File: path, Err: fmt.Errorf("column %q (the id field) is %s, want a scalar column", opts.IDField, describe(c))}
		}
		s.id = s.cursor(c)
	}
	for _, name := range opts.Keep {
		kc := keepColumn{name: name}
		c := root.Column(name)
		switch {
		case c == nil:
			kc.absent = true
		case c.Leaf() && c.MaxRepetitionLevel() == 0:
			kc.leaf = s.cursor(c)
		default:
			var node parquet.Node
			for _, fld := range pf.Schema().Fields() {
				if fld.Name() == name {
					node = fld
				}
			}
			kc.schema = parquet.NewSchema("row", parquet.Group{name: node})
			leafCols(c, func(l *parquet.Column) { kc.leaves = append(kc.leaves, s.cursor(l)) })
		}
		s.keep = append(s.keep, kc)
	}
	return s, nil
}

// cursor returns the cursor of a leaf column, shared when a column is
// projected twice (e.g. --keep of the id field).
func (s *parquetSource) cursor(c *parquet.Column) *leafCursor {
	for _, lc := range s.cursors {
		if lc.index == c.Index() {
			return lc
		}
	}
	lc := &leafCursor{col: c, index: c.Index(), buf: make([]parquet.Value, 0, 512)}
	s.cursors = append(s.cursors, lc)
	return lc
}

func leafCols(c *parquet.Column, fn func(*parquet.Column)) {
	if c.Leaf() {
		fn(c)
		return
	}
	for _, ch := range c.Columns() {
		leafCols(ch, fn)
	}
}

func columnNames(root *parquet.Column) []string {
	var names []string
	for _, c := range root.Columns() {
		names = append(names, c.Name())
	}
	return names
}

func describe(c *parquet.Column) string {
	switch {
	case !c.Leaf():
		return "a group"
	case c.MaxRepetitionLevel() > 0:
		return "repeated"
	}
	return c.Type().String()
}

func (s *parquetSource) close() error { return s.f.Close() }

// rowCount is the file's row count, from the footer.
func (s *parquetSource) rowCount() int64 { return s.pf.NumRows() }

// fraction is rows delivered of the file's row count (from the footer).
func (s *parquetSource) fraction() float64 {
	n := s.pf.NumRows()
	if n <= 0 {
		return 1
	}
	return min(1, float64(s.row)/float64(n))
}

func (s *parquetSource) next(doc *Document) (err error) {
	row := s.row
	defer func() {
		if p := recover(); p != nil {
			err = &FileError{File: s.path, Row: row, Err: fmt.Errorf("corrupt Parquet data (decoder panic: %v)", p)}
		}
	}()
	for s.rgLeft == 0 {
		rgs := s.pf.RowGroups()
		if s.rg >= len(rgs) {
			return io.EOF
		}
		rg := rgs[s.rg]
		chunks := rg.ColumnChunks()
		s.announce(s.rg)
		for _, lc := range s.cursors {
			lc.release()
			if lc.pages != nil {
				lc.pages.Close()
			}
			if lc.index >= len(chunks) {
				return &FileError{File: s.path, Row: s.row, Err: fmt.Errorf("row group %d has %d columns, want column %d", s.rg, len(chunks), lc.index)}
			}
			lc.pages = chunks[lc.index].Pages()
			lc.vr, lc.buf, lc.i = nil, lc.buf[:0], 0
		}
		s.rgLeft = rg.NumRows()
		s.rg++
	}
	fail := func(err error) error {
		return &FileError{File: s.path, Row: row, Err: fmt.Errorf("row group %d: %w", s.rg-1, err)}
	}
	// Advance every distinct column cursor exactly once per row (a column
	// projected several times, e.g. as the text and as a --keep field,
	// shares one cursor), and read all of them first so that a rejected row
	// still advances every cursor.
	for _, lc := range s.cursors {
		if lc.cur, err = lc.nextRow(); err != nil {
			return fail(err)
		}
	}
	tv := s.text.cur
	var idv []parquet.Value
	if s.id != nil {
		idv = s.id.cur
	}
	if s.keepVals == nil {
		s.keepVals = make([][][]parquet.Value, len(s.keep))
	}
	keepVals := s.keepVals
	for k := range s.keep {
		kc := &s.keep[k]
		switch {
		case kc.leaf != nil:
			keepVals[k] = append(keepVals[k][:0], kc.leaf.cur)
		case kc.leaves != nil:
			keepVals[k] = make([][]parquet.Value, len(kc.leaves))
			for j, lc := range kc.leaves {
				keepVals[k][j] = lc.cur
			}
		}
	}
	s.rgLeft--
	s.row++

	reject := func(format string, args ...any) error {
		var ex []byte
		if len(tv) == 1 && !tv[0].IsNull() {
			ex = tv[0].ByteArray()
		}
		rej := &Reject{File: s.path, Row: row, Reason: fmt.Sprintf(format, args...), Excerpt: excerpt(ex)}
		if s.id != nil && !idv[0].IsNull() {
			if id, err := s.scalar(s.id.col, idv[0]); err == nil {
				rej.ID = strings.Clone(id) // a copy: the page goes after this row
			}
		}
		return rej
	}
	doc.Source = Source{File: s.path, Row: row}
	if tv[0].IsNull() {
		return reject("%q is null", s.opts.TextField)
	}
	tb := tv[0].ByteArray()
	if int64(len(tb)) > s.opts.MaxDocBytes {
		return reject("%q is %d bytes, over the limit of %d (MaxDocBytes)", s.opts.TextField, len(tb), s.opts.MaxDocBytes)
	}
	if doc.Text, err = s.utf8(tb, s.opts.TextField); err != nil {
		return reject("%v", err)
	}
	doc.ID = defaultID(s.path, row)
	if s.id != nil && !idv[0].IsNull() {
		if doc.ID, err = s.scalar(s.id.col, idv[0]); err != nil {
			return reject("%v", err)
		}
	}
	if len(s.keep) > 0 {
		doc.Keep = keepSlice(&s.keepBuf, len(s.keep), s.opts.Borrow)
		for k := range s.keep {
			kc := &s.keep[k]
			switch {
			case kc.leaf != nil:
				v := keepVals[k][0][0]
				if v.IsNull() {
					continue
				}
				str, err := s.scalar(kc.leaf.col, v)
				if err != nil {
					return reject("%v", err)
				}
				doc.Keep[k] = Value{S: str, Valid: true}
			case kc.leaves != nil:
				str, ok, err := s.nested(kc, keepVals[k])
				if err != nil {
					return reject("%v", err)
				}
				doc.Keep[k] = Value{S: str, Valid: ok}
			}
		}
	}
	return nil
}

// announce tells an object's reader which column chunks of row group rg
// are about to be read, so that each is fetched with one request rather
// than one per read buffer (see blobstore.ReaderAt.Expect). The ranges are
// the ones parquet-go reads a chunk from: its dictionary page (or first data
// page) on, TotalCompressedSize bytes.
func (s *parquetSource) announce(rg int) {
	ex, ok := s.f.(interface{ Expect([]blobstore.Range) })
	if !ok {
		return
	}
	groups := s.pf.Metadata().RowGroups
	if rg >= len(groups) {
		return
	}
	cols := groups[rg].Columns
	ranges := make([]blobstore.Range, 0, len(s.cursors))
	for _, lc := range s.cursors {
		if lc.index >= len(cols) {
			continue
		}
		md := &cols[lc.index].MetaData
		off := md.DataPageOffset
		if md.DictionaryPageOffset != 0 {
			off = md.DictionaryPageOffset
		}
		ranges = append(ranges, blobstore.Range{Off: off, Len: md.TotalCompressedSize})
	}
	ex.Expect(ranges)
}

// utf8 converts bytes to a string under the UTF-8 policy.
func (s *parquetSource) utf8(b []byte, field string) (string, error) {
	if !utf8.Valid(b) {
		if s.opts.UTF8 == UTF8Reject {
			return "", fmt.Errorf("%q is not valid UTF-8", field)
		}
		return string(toValidUTF8(b)), nil
	}
	if s.opts.Borrow {
		// valid until the page is released, after this row
		return unsafe.String(unsafe.SliceData(b), len(b)), nil
	}
	return string(b), nil
}

// scalar renders a non-null flat value as a passthrough string.
func (s *parquetSource) scalar(c *parquet.Column, v parquet.Value) (string, error) {
	var ltv format.LogicalTypeValue
	if lt := c.Type().LogicalType(); lt != nil {
		ltv = lt.Value
	}
	switch v.Kind() {
	case parquet.Boolean:
		return strconv.FormatBool(v.Boolean()), nil
	case parquet.Int32, parquet.Int64:
		n := v.Int64()
		if v.Kind() == parquet.Int32 {
			n = int64(v.Int32())
		}
		switch t := ltv.(type) {
		case *format.DateType:
			return time.Unix(n*86400, 0).UTC().Format("2006-01-02"), nil
		case *format.TimestampType:
			return formatTimestamp(n, t.Unit), nil
		case *format.DecimalType:
			return formatDecimal(strconv.FormatInt(n, 10), int(t.Scale)), nil
		case *format.IntType:
			if !t.IsSigned {
				if v.Kind() == parquet.Int32 {
					return strconv.FormatUint(uint64(uint32(n)), 10), nil
				}
				return strconv.FormatUint(uint64(n), 10), nil
			}
		}
		return strconv.FormatInt(n, 10), nil
	case parquet.Float:
		return formatFloat(float64(v.Float()), 32), nil
	case parquet.Double:
		return formatFloat(v.Double(), 64), nil
	case parquet.Int96:
		// legacy Impala/Spark timestamp: nanoseconds of day + Julian day
		b := v.Int96()
		nanos := int64(b[1])<<32 | int64(b[0])
		day := int64(b[2]) - 2440588
		return time.Unix(day*86400, nanos).UTC().Format(time.RFC3339Nano), nil
	case parquet.FixedLenByteArray, parquet.ByteArray:
		b := v.ByteArray()
		switch t := ltv.(type) {
		case *format.UUIDType:
			if len(b) == 16 {
				h := hex.EncodeToString(b)
				return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
			}
		case *format.DecimalType:
			return formatDecimal(bigEndianSigned(b).String(), int(t.Scale)), nil
		}
		if v.Kind() == parquet.FixedLenByteArray {
			return hex.EncodeToString(b), nil
		}
		return s.utf8(b, c.Name())
	}
	return v.String(), nil
}

// bigEndianSigned decodes a big-endian two's complement integer.
func bigEndianSigned(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n
}

// formatFloat prints the shortest text that reads back to the same value
// (NaN and ±Inf print as "NaN", "+Inf", "-Inf").
func formatFloat(f float64, bits int) string {
	return strconv.FormatFloat(f, 'g', -1, bits)
}

func formatTimestamp(n int64, u format.TimeUnit) string {
	var t time.Time
	switch u.Value.(type) {
	case *format.MilliSeconds:
		t = time.UnixMilli(n)
	case *format.NanoSeconds:
		t = time.Unix(0, n)
	default:
		t = time.UnixMicro(n)
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// formatDecimal places the decimal point scale digits from the right.
func formatDecimal(digits string, scale int) string {
	if scale <= 0 {
		return digits
	}
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	for len(digits) <= scale {
		digits = "0" + digits
	}
	out := digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	if neg {
		out = "-" + out
	}
	return out
}

// nested renders a nested column's row as compact JSON; ok is false when
// the whole value is null.
func (s *parquetSource) nested(kc *keepColumn, leaves [][]parquet.Value) (string, bool, error) {
	if len(leaves) > 0 && len(leaves[0]) == 1 && leaves[0][0].DefinitionLevel() == 0 && kc.leaves[0].col.MaxDefinitionLevel() > 0 {
		// definition level 0 at the top: the field itself is null
		if isTopNull(kc) {
			return "", false, nil
		}
	}
	var row parquet.Row
	for j, vals := range leaves {
		for _, v := range vals {
			row = append(row, v.Level(v.RepetitionLevel(), v.DefinitionLevel(), j))
		}
	}
	m := map[string]any{}
	if err := reconstruct(kc.schema, &m, row); err != nil {
		return "", false, fmt.Errorf("%q: %v", kc.name, err)
	}
	val, ok := m[kc.name]
	if !ok || val == nil {
		return "", false, nil
	}
	b, err := json.Marshal(jsonSafe(val))
	if err != nil {
		return "", false, fmt.Errorf("%q: %v", kc.name, err)
	}
	str, err := s.utf8(b, kc.name)
	return str, err == nil, err
}

// reconstruct is Schema.Reconstruct with its panics (it panics when the
// row does not fit the schema) turned into errors.
func reconstruct(schema *parquet.Schema, m *map[string]any, row parquet.Row) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot rebuild nested value: %v", p)
		}
	}()
	return schema.Reconstruct(m, row)
}

// isTopNull reports whether a definition level of 0 means the field itself
// is null, i.e. the field is optional.
func isTopNull(kc *keepColumn) bool {
	f := kc.schema.Fields()[0]
	return f.Optional()
}

// jsonSafe replaces []byte (which encoding/json would base64) by a string
// when it is valid UTF-8, so string leaves of nested values stay readable.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return base64.StdEncoding.EncodeToString(x)
	case map[string]any:
		for k, e := range x {
			x[k] = jsonSafe(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonSafe(e)
		}
	}
	return v
}

func toValidUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
			// collapse a run of invalid bytes into one U+FFFD, like bytes.ToValidUTF8
			for b = b[1:]; len(b) > 0; b = b[1:] {
				if r, n := utf8.DecodeRune(b); r != utf8.RuneError || n > 1 {
					break
				}
			}
			continue
		}
		out = append(out, b[:n]...)
		b = b[n:]
	}
	return out
}

// leafCursor walks the values of one leaf column through its pages.
type leafCursor struct {
	col   *parquet.Column
	index int
	pages parquet.Pages
	page  parquet.Page // current page, released when done (flat columns)
	vr    parquet.ValueReader
	buf   []parquet.Value
	i     int
	row   []parquet.Value // assembles a repeated row that spans refills
	// cur is this row's values (nextRow's result), read once per row by
	// parquetSource.next however many projections share the cursor.
	cur []parquet.Value
}

// fill makes at least one value available, reading pages as needed.
func (c *leafCursor) fill() error {
	for c.i >= len(c.buf) {
		if c.vr != nil {
			n, err := c.vr.ReadValues(c.buf[:cap(c.buf)])
			c.buf, c.i = c.buf[:n], 0
			if n > 0 {
				return nil
			}
			if err != nil && err != io.EOF {
				return fmt.Errorf("column %q: %w", c.col.Name(), err)
			}
			c.vr = nil
		}
		c.release()
		p, err := c.pages.ReadPage()
		if err == io.EOF {
			return fmt.Errorf("column %q: ran out of values before the row group's row count", c.col.Name())
		}
		if err != nil {
			return fmt.Errorf("column %q: %w", c.col.Name(), err)
		}
		c.page, c.vr = p, p.Values()
	}
	return nil
}

// release hands the current page's buffers back to parquet-go for reuse by
// the next page, which saves allocating and zeroing a buffer per page. Only
// for flat columns: their values of earlier rows have all been consumed
// (Options.Borrow strings are valid only until the next Next call), while a
// repeated column's row can span two pages.
func (c *leafCursor) release() {
	if c.page != nil && c.col.MaxRepetitionLevel() == 0 {
		parquet.Release(c.page)
	}
	c.page = nil
}

// nextRow returns the values of the next row: one value for a flat column,
// all values up to the next repetition level 0 for a repeated one. The
// slice is valid until the next call.
func (c *leafCursor) nextRow() ([]parquet.Value, error) {
	if err := c.fill(); err != nil {
		return nil, err
	}
	if c.col.MaxRepetitionLevel() == 0 {
		c.i++
		return c.buf[c.i-1 : c.i], nil
	}
	c.row = append(c.row[:0], c.buf[c.i])
	c.i++
	for {
		if c.i >= len(c.buf) {
			err := c.fill()
			if err != nil {
				// the last row of the chunk ends at the end of the chunk
				if c.pages != nil && c.vr == nil {
					return c.row, nil
				}
				return nil, err
			}
		}
		if c.buf[c.i].RepetitionLevel() == 0 {
			return c.row, nil
		}
		c.row = append(c.row, c.buf[c.i])
		c.i++
	}
}
