package readers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/onecore-dev/onecore/internal/blobstore"
)

// source is one format's row decoder.
type source interface {
	// next fills doc or returns io.EOF, a *Reject or a *FileError.
	next(doc *Document) error
	close() error
	// fraction is how much of the shard has been consumed, 0 to 1: rows
	// of the row count for Parquet (its metadata has it), bytes of the
	// file on disk for JSON Lines (compressed or not).
	fraction() float64
}

// Reader streams the rows of one shard.
type Reader struct {
	shard Shard
	src   source
	rows  int64 // rows delivered: documents + rejects
	docs  int64
	rejs  int64
	err   error         // sticky: io.EOF or a *FileError
	frac  atomic.Uint64 // math.Float64bits of the last fraction(), read by progress reporters
}

// Open is OpenShard for a single path, with the format taken from its name.
func Open(path string, opts Options) (*Reader, error) {
	if blobstore.Remote(path) {
		n, err := blobstore.Size(context.Background(), path)
		if err != nil {
			return nil, &FileError{File: path, Err: err}
		}
		return OpenShard(Shard{Path: path, Size: n, Format: FormatOf(path)}, opts)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, &FileError{File: path, Err: err}
	}
	return OpenShard(Shard{Path: path, Size: st.Size(), Format: FormatOf(path)}, opts)
}

// OpenShard opens a shard for reading. A file that cannot be opened at all
// (missing, unknown format, bad Parquet footer, missing text column) is a
// *FileError.
func OpenShard(shard Shard, opts Options) (*Reader, error) {
	opts = opts.withDefaults()
	var (
		src source
		err error
	)
	switch shard.Format {
	case FormatJSONL, FormatJSONLGzip, FormatJSONLZstd:
		src, err = openJSONL(shard, opts)
	case FormatParquet:
		src, err = openParquet(shard, opts)
	default:
		err = &FileError{File: shard.Path, Err: fmt.Errorf("unknown format (want .parquet, .jsonl, .jsonl.gz or .jsonl.zst)")}
	}
	if err != nil {
		var fe *FileError
		if !errors.As(err, &fe) {
			err = &FileError{File: shard.Path, Err: err}
		}
		return nil, err
	}
	return &Reader{shard: shard, src: src}, nil
}

// Shard returns the shard being read.
func (r *Reader) Shard() Shard { return r.shard }

// Next returns the next document. At the end it returns io.EOF. A *Reject
// means the row was skipped (call Next again); a *FileError means the rest
// of the file is unreadable and is returned again by every later call.
func (r *Reader) Next() (Document, error) {
	var doc Document
	if r.err != nil {
		return doc, r.err
	}
	err := r.src.next(&doc)
	r.frac.Store(math.Float64bits(r.src.fraction()))
	switch e := err.(type) {
	case nil:
		r.rows++
		r.docs++
		return doc, nil
	case *Reject:
		r.rows++
		r.rejs++
		return doc, err
	case *FileError:
		r.err = err
		return doc, err
	default:
		if err == io.EOF {
			r.err = io.EOF
			return doc, io.EOF
		}
		r.err = &FileError{File: r.shard.Path, Row: r.rows, Err: e}
		return doc, r.err
	}
}

// RowCount returns the shard's number of rows when the format records it
// without a read (Parquet's footer), and false otherwise (JSON Lines).
func (r *Reader) RowCount() (int64, bool) {
	if c, ok := r.src.(interface{ rowCount() int64 }); ok {
		return c.rowCount(), true
	}
	return 0, false
}

// Rows returns how many rows were delivered so far, as documents or rejects.
func (r *Reader) Rows() int64 { return r.rows }

// Docs returns how many documents were delivered so far.
func (r *Reader) Docs() int64 { return r.docs }

// Rejected returns how many rows were rejected so far.
func (r *Reader) Rejected() int64 { return r.rejs }

// Fraction reports how much of the shard has been read, from 0 to 1: for
// Parquet, rows delivered of the file's row count; for JSON Lines, bytes of
// the file on disk consumed (so compressed input is measured by what it
// costs to read, never by its larger decompressed size). It is safe to call
// from another goroutine while Next runs, and never decreases.
func (r *Reader) Fraction() float64 { return math.Float64frombits(r.frac.Load()) }

// Close releases the file.
func (r *Reader) Close() error { return r.src.close() }

// defaultID is the id of a row without one: "file:row".
func defaultID(file string, row int64) string {
	return file + ":" + strconv.FormatInt(row, 10)
}

// keepSlice returns a zeroed Keep slice of n values: buf's, reused, when
// the caller borrows (Options.Borrow), a new one otherwise.
func keepSlice(buf *[]Value, n int, borrow bool) []Value {
	if !borrow {
		return make([]Value, n)
	}
	if cap(*buf) < n {
		*buf = make([]Value, n)
	}
	b := (*buf)[:n]
	clear(b)
	return b
}
