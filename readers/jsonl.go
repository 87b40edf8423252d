package readers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/onecore-dev/onecore/internal/blobstore"
)

// jsonlBufSize is the line buffer: lines up to this size are parsed in
// place; longer ones are assembled in a growing side buffer.
const jsonlBufSize = 1 << 20

// zstdMaxWindow caps the zstd window a file may ask for (zstd --long=27
// uses 128 MiB); a larger one is a file error, not an allocation.
const zstdMaxWindow = 1 << 27

type jsonlSource struct {
	path    string
	opts    Options
	f       io.Closer // the file, or the object stream
	dec     io.Closer // decompressor, if any
	br      *bufio.Reader
	line    int64 // index of the next line
	slots   map[string]int
	spans   []span
	long    []byte  // assembles lines longer than the bufio buffer
	buf     []byte  // unescape scratch
	key     []byte  // key unescape scratch
	keepBuf []Value // Document.Keep, reused with Options.Borrow
	eof     bool
	cr      *countingReader // the file, counting bytes read (progress)
	size    int64           // of the file on disk
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// fraction is the share of the file's bytes read so far (read-ahead
// buffers included, so it runs slightly ahead of the rows delivered).
func (s *jsonlSource) fraction() float64 {
	if s.eof || s.size <= 0 {
		if s.eof {
			return 1
		}
		return 0
	}
	return min(1, float64(s.cr.n)/float64(s.size))
}

// Slot numbers in jsonlSource.spans.
const (
	slotText = 0
	slotID   = 1
	slotKeep = 2 // first passthrough field
)

func openJSONL(shard Shard, opts Options) (*jsonlSource, error) {
	var (
		f    io.ReadCloser
		size int64
	)
	if blobstore.Remote(shard.Path) {
		sz := shard.Size
		if sz <= 0 {
			sz = -1 // not listed (a single object named): ask the store
		}
		st, err := blobstore.OpenStream(context.Background(), shard.Path, sz)
		if err != nil {
			return nil, err
		}
		f, size = st, shard.Size
	} else {
		lf, err := os.Open(shard.Path)
		if err != nil {
			return nil, err
		}
		if st, err := lf.Stat(); err == nil {
			size = st.Size()
		}
		f = lf
	}
	s := &jsonlSource{path: shard.Path, opts: opts, f: f, cr: &countingReader{r: f}, size: size}
	var r io.Reader = s.cr
	switch shard.Format {
	case FormatJSONLGzip:
		zr, err := gzip.NewReader(bufio.NewReaderSize(s.cr, 256<<10))
		if err == io.EOF { // an empty file: no rows
			s.br = bufio.NewReader(strings.NewReader(""))
			return s.withSlots(), nil
		}
		if err != nil {
			f.Close()
			return nil, &FileError{File: shard.Path, Err: fmt.Errorf("gzip: %w", err)}
		}
		r, s.dec = zr, zr
	case FormatJSONLZstd:
		zr, err := zstd.NewReader(s.cr, zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderConcurrency(2))
		if err != nil {
			f.Close()
			return nil, &FileError{File: shard.Path, Err: fmt.Errorf("zstd: %w", err)}
		}
		r, s.dec = zr, zstdCloser{zr}
	}
	s.br = bufio.NewReaderSize(r, jsonlBufSize)
	return s.withSlots(), nil
}

// withSlots assigns the span slots of the wanted fields.
func (s *jsonlSource) withSlots() *jsonlSource {
	opts := s.opts
	// Slots: text, id, then keep fields. A keep field equal to text or id
	// gets its own slot only if distinct, so it shares theirs otherwise.
	s.slots = map[string]int{opts.TextField: slotText}
	if _, dup := s.slots[opts.IDField]; !dup {
		s.slots[opts.IDField] = slotID
	}
	s.spans = make([]span, slotKeep+len(opts.Keep))
	for i, k := range opts.Keep {
		if _, dup := s.slots[k]; !dup {
			s.slots[k] = slotKeep + i
		}
	}
	return s
}

var utf8BOM = []byte("\uFEFF")

type zstdCloser struct{ d *zstd.Decoder }

func (z zstdCloser) Close() error { z.d.Close(); return nil }

func (s *jsonlSource) close() error {
	if s.dec != nil {
		s.dec.Close()
	}
	return s.f.Close()
}

// readLine returns the next line without its terminator. It returns a
// *Reject for a line over MaxDocBytes (after skipping it) and io.EOF at the
// end. A read error is returned with the partial line it cut.
func (s *jsonlSource) readLine() ([]byte, error) {
	s.long = s.long[:0]
	var total int64
	over := false
	for {
		b, err := s.br.ReadSlice('\n')
		total += int64(len(b))
		switch {
		case err == nil || (err == io.EOF && total > 0):
			if err == io.EOF {
				s.eof = true
			}
			if over {
				return nil, &Reject{File: s.path, Row: s.line, Excerpt: excerpt(s.long),
					Reason: fmt.Sprintf("line is %d bytes, over the limit of %d (MaxDocBytes)", total, s.opts.MaxDocBytes)}
			}
			if len(s.long) > 0 {
				s.long = append(s.long, b...)
				b = s.long
			}
			return trimEOL(b), nil
		case err == bufio.ErrBufferFull:
			if over {
				continue
			}
			if total > s.opts.MaxDocBytes {
				over = true
				if len(s.long) == 0 {
					s.long = append(s.long, b[:ExcerptBytes]...)
				}
				s.long = s.long[:ExcerptBytes]
				continue
			}
			s.long = append(s.long, b...)
		case err == io.EOF:
			return nil, io.EOF
		default:
			if len(s.long) > 0 && !over {
				b = append(s.long, b...)
			}
			return b, err
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n > 1 && b[n-2] == '\r' {
			b = b[:n-2]
		}
	}
	return b
}

func (s *jsonlSource) next(doc *Document) error {
	for {
		if s.eof {
			return io.EOF
		}
		row := s.line
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF {
				return io.EOF
			}
			var rej *Reject
			if errors.As(err, &rej) {
				s.line++
				return rej
			}
			return &FileError{File: s.path, Row: row, Err: fmt.Errorf("reading line %d: %w", row+1, err)}
		}
		s.line++
		if row == 0 {
			line = bytes.TrimPrefix(line, utf8BOM) // written by some Windows tools
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines are not rows
		}
		if int64(len(line)) > s.opts.MaxDocBytes { // a long line that still fit the buffer
			return &Reject{File: s.path, Row: row, Excerpt: excerpt(line),
				Reason: fmt.Sprintf("line is %d bytes, over the limit of %d (MaxDocBytes)", len(line), s.opts.MaxDocBytes)}
		}
		return s.parse(line, row, doc)
	}
}

func (s *jsonlSource) reject(row int64, line []byte, format string, args ...any) *Reject {
	return &Reject{File: s.path, Row: row, Reason: fmt.Sprintf(format, args...), Excerpt: excerpt(line)}
}

func (s *jsonlSource) parse(line []byte, row int64, doc *Document) error {
	if err := scanObject(line, s.slots, s.spans, &s.key); err != nil {
		return s.reject(row, line, "%v", err)
	}
	err := s.parseFields(line, row, doc)
	if rej, ok := err.(*Reject); ok {
		rej.ID = s.rejectID(line)
	}
	return err
}

// rejectID is the id of a rejected row that parsed as a JSON object, or ""
// when its id field is missing, null or unusable. A copy: the line's buffer
// is reused for the next row.
func (s *jsonlSource) rejectID(line []byte) string {
	sp := s.spans[slotID]
	if s.opts.IDField == s.opts.TextField {
		sp = s.spans[slotText]
	}
	if sp.kind == kindMissing || sp.kind == kindNull {
		return ""
	}
	id, err := s.value(line, sp, s.opts.IDField)
	if err != nil {
		return ""
	}
	return strings.Clone(id)
}

// parseFields fills doc from a row scanObject has indexed.
func (s *jsonlSource) parseFields(line []byte, row int64, doc *Document) error {
	doc.Source = Source{File: s.path, Row: row}
	s.buf = s.buf[:0]
	// text
	sp := s.spans[slotText]
	switch sp.kind {
	case kindMissing:
		return s.reject(row, line, "no %q field", s.opts.TextField)
	case kindNull:
		return s.reject(row, line, "%q is null", s.opts.TextField)
	case kindOther:
		return s.reject(row, line, "%q is %s, want a string", s.opts.TextField, jsonKind(line[sp.start]))
	}
	txt, err := s.str(line, sp, s.opts.TextField)
	if err != nil {
		return s.reject(row, line, "%v", err)
	}
	doc.Text = txt
	// id
	idSpan := s.spans[slotID]
	if s.opts.IDField == s.opts.TextField {
		idSpan = sp
	}
	if doc.ID, err = s.value(line, idSpan, s.opts.IDField); err != nil {
		return s.reject(row, line, "%v", err)
	}
	if idSpan.kind == kindMissing || idSpan.kind == kindNull {
		doc.ID = defaultID(s.path, row)
	}
	// passthrough
	if len(s.opts.Keep) > 0 {
		doc.Keep = keepSlice(&s.keepBuf, len(s.opts.Keep), s.opts.Borrow)
		for i, k := range s.opts.Keep {
			ks := s.spans[s.slots[k]]
			if ks.kind == kindMissing || ks.kind == kindNull {
				continue
			}
			v, err := s.value(line, ks, k)
			if err != nil {
				return s.reject(row, line, "%v", err)
			}
			doc.Keep[i] = Value{S: v, Valid: true}
		}
	}
	return nil
}

// str decodes a string span and applies the UTF-8 policy.
func (s *jsonlSource) str(line []byte, sp span, field string) (string, error) {
	b := line[sp.start:sp.end]
	if sp.escaped {
		// Append (parse resets s.buf per row): a borrowed string decoded
		// earlier in the row must not be overwritten.
		start := len(s.buf)
		s.buf = unescape(s.buf, b)
		b = s.buf[start:]
	}
	if !utf8.Valid(b) {
		if s.opts.UTF8 == UTF8Reject {
			return "", fmt.Errorf("%q is not valid UTF-8", field)
		}
		return string(bytes.ToValidUTF8(b, []byte("\uFFFD"))), nil
	}
	return s.string(b), nil
}

// string converts b, borrowing it when Options.Borrow is set.
func (s *jsonlSource) string(b []byte) string {
	if s.opts.Borrow {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return string(b)
}

// value renders a field as a passthrough string: strings decoded, other
// values as compact JSON text, missing/null as "".
func (s *jsonlSource) value(line []byte, sp span, field string) (string, error) {
	switch sp.kind {
	case kindString:
		return s.str(line, sp, field)
	case kindOther:
		raw := line[sp.start:sp.end]
		if c := raw[0]; c == '{' || c == '[' {
			var out bytes.Buffer
			if err := json.Compact(&out, raw); err != nil {
				return "", fmt.Errorf("%q: %v", field, err)
			}
			b := out.Bytes()
			if !utf8.Valid(b) {
				if s.opts.UTF8 == UTF8Reject {
					return "", fmt.Errorf("%q is not valid UTF-8", field)
				}
				b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
			}
			return string(b), nil
		}
		return s.string(raw), nil
	}
	return "", nil
}

func jsonKind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
