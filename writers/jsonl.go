package writers

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/klauspost/compress/zstd"
)

// jsonlEncoder writes one JSON object per row, with every column of the
// schema as a key in schema order (nulls as null, never omitted, so the
// shape is as stable as the schema). Strings are escaped as encoding/json
// does minus its HTML escaping; binary is base64; NaN and ±Inf, which JSON
// cannot represent, become null; lists become arrays and structs objects.
type jsonlEncoder struct {
	out   io.Writer
	zw    *zstd.Encoder
	names [][]byte // `"name":` per column, pre-escaped
	buf   []byte
}

func newJSONLEncoder(w io.Writer, schema *arrow.Schema, compressed bool, opts Options) (*jsonlEncoder, error) {
	e := &jsonlEncoder{out: w}
	if compressed {
		level := zstd.SpeedDefault
		if opts.ZstdLevel != 0 {
			level = zstd.EncoderLevelFromZstd(opts.ZstdLevel)
		}
		zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(level))
		if err != nil {
			return nil, err
		}
		e.zw, e.out = zw, zw
	}
	for i, f := range schema.Fields() {
		var b []byte
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.Name)
		e.names = append(e.names, append(b, ':'))
	}
	return e, nil
}

func (e *jsonlEncoder) write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		e.buf = append(e.buf, '{')
		for c, col := range cols {
			e.buf = append(e.buf, e.names[c]...)
			e.buf = appendValue(e.buf, col, i)
		}
		e.buf = append(e.buf, '}', '\n')
		if len(e.buf) >= 1<<20 {
			if _, err := e.out.Write(e.buf); err != nil {
				return err
			}
			e.buf = e.buf[:0]
		}
	}
	return nil
}

func (e *jsonlEncoder) finish() error {
	if _, err := e.out.Write(e.buf); err != nil {
		return err
	}
	e.buf = nil
	if e.zw != nil {
		return e.zw.Close()
	}
	return nil
}

// appendValue appends element i of arr as JSON.
func appendValue(b []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(b, "null"...)
	}
	switch a := arr.(type) {
	case *array.String:
		return appendString(b, a.Value(i))
	case *array.LargeString:
		return appendString(b, a.Value(i))
	case *array.StringView:
		return appendString(b, a.Value(i))
	case *array.Binary:
		return appendBase64(b, a.Value(i))
	case *array.LargeBinary:
		return appendBase64(b, a.Value(i))
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(b, a.Value(i), 10)
	case *array.Float32:
		return appendFloat(b, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendFloat(b, a.Value(i), 64)
	case array.ListLike: // List, LargeList, FixedSizeList, ListView
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			b = appendValue(b, vals, int(j))
		}
		return append(b, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for f := 0; f < a.NumField(); f++ {
			if f > 0 {
				b = append(b, ',')
			}
			b = appendString(b, st.Field(f).Name)
			b = append(b, ':')
			b = appendValue(b, a.Field(f), i)
		}
		return append(b, '}')
	}
	// Rarer types (dates, timestamps, decimals, maps, ...): arrow's own JSON form.
	v, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, v...)
}

func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

func appendBase64(b, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// safeASCII marks bytes that appear unescaped inside a JSON string.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
