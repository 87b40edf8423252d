// Package writers writes Arrow record batches to Parquet (zstd), Arrow IPC
// files or JSON Lines (plain or zstd), always to a temporary name in the
// destination directory that is renamed into place only when the file is
// complete: a reader never sees a half-written output, and a killed run
// leaves only hidden ".*.tmp-*" files behind.
//
// It also holds what every command that reads shards and writes results
// shares: the document batch builder (DocBuilder), the rejects file
// (Rejects) and the run summary (Summary).
package writers

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/onecore-dev/onecore/internal/blobstore"
)

// Format is an output format.
type Format int

// Output formats.
const (
	FormatUnknown Format = iota
	Parquet              // Apache Parquet, zstd compressed
	Arrow                // Arrow IPC file format ("Feather v2"), uncompressed
	JSONL                // JSON Lines
	JSONLZstd            // JSON Lines, zstd compressed
)

var formatInfo = [...]struct{ name, ext string }{
	{"unknown", ""},
	{"parquet", ".parquet"},
	{"arrow", ".arrow"},
	{"jsonl", ".jsonl"},
	{"jsonl.zst", ".jsonl.zst"},
}

// String returns the name ParseFormat accepts.
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatInfo) {
		return formatInfo[f].name
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Ext returns the file extension of the format, with its dot.
func (f Format) Ext() string {
	if f >= 0 && int(f) < len(formatInfo) {
		return formatInfo[f].ext
	}
	return ""
}

// Formats lists the names ParseFormat accepts, for help texts.
const Formats = "parquet, arrow (alias ipc, feather), jsonl, jsonl.zst"

// ParseFormat parses a --format value.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimPrefix(s, ".")) {
	case "parquet", "pq":
		return Parquet, nil
	case "arrow", "ipc", "feather", "arrows":
		return Arrow, nil
	case "jsonl", "ndjson", "json":
		return JSONL, nil
	case "jsonl.zst", "jsonl.zstd", "ndjson.zst", "zst", "zstd":
		return JSONLZstd, nil
	}
	return FormatUnknown, fmt.Errorf("unknown output format %q (want %s)", s, Formats)
}

// FormatOf returns the format implied by a file name's extension, or
// FormatUnknown.
func FormatOf(path string) Format {
	n := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(n, ".parquet"):
		return Parquet
	case strings.HasSuffix(n, ".arrow"), strings.HasSuffix(n, ".ipc"), strings.HasSuffix(n, ".feather"):
		return Arrow
	case strings.HasSuffix(n, ".jsonl.zst"), strings.HasSuffix(n, ".ndjson.zst"), strings.HasSuffix(n, ".jsonl.zstd"):
		return JSONLZstd
	case strings.HasSuffix(n, ".jsonl"), strings.HasSuffix(n, ".ndjson"), strings.HasSuffix(n, ".json"):
		return JSONL
	}
	return FormatUnknown
}

// Options tune a Writer. The zero value is the default.
type Options struct {
	// RowGroupBytes closes a Parquet row group once this much uncompressed
	// Arrow data went into it. 0 means DefaultRowGroupBytes.
	RowGroupBytes int64
	// RowGroupRows caps the rows of a Parquet row group. 0 means
	// DefaultRowGroupRows.
	RowGroupRows int64
	// Plain lists columns holding mostly unique values (ids, texts): Parquet
	// writes them without dictionary encoding or statistics, which costs
	// time and saves nothing there.
	Plain []string
	// ZstdLevel is the zstd level (1-22) for Parquet and JSONL.zst; 0 means
	// DefaultParquetZstdLevel for Parquet and 3 (zstd's default) for JSONL.zst.
	ZstdLevel int
	// Concurrency is the number of goroutines compressing Parquet pages of
	// string-only schemas (such as DocSchema); 0 means GOMAXPROCS. The
	// bytes written do not depend on it.
	Concurrency int
}

// Defaults for Options.
const (
	DefaultRowGroupBytes = 64 << 20
	DefaultRowGroupRows  = 1 << 20
	// DefaultParquetZstdLevel is zstd level 1: on text it compresses about
	// as well as level 3 for half the CPU time, and Parquet writing is the
	// slowest stage of a conversion.
	DefaultParquetZstdLevel = 1
)

// genericParquet makes every Parquet file go through pqarrow (tests compare
// the two encoders).
var genericParquet = false

// encoder writes one format into a buffered file.
type encoder interface {
	write(rec arrow.RecordBatch) error
	// finish writes trailers and flushes the encoder's own buffers.
	finish() error
}

// Writer writes one output file.
type Writer struct {
	path, tmp string
	format    Format
	schema    *arrow.Schema
	f         *os.File          // local: the temporary file
	obj       *blobstore.Writer // object storage: the upload
	bw        *bufio.Writer
	enc       encoder
	rows      int64
	done      bool
}

// Create starts writing path in the given format (FormatUnknown: from the
// extension). The data goes to a hidden temporary file next to path; Close
// renames it into place, Abort removes it. A path in object storage
// (s3://bucket/key, see package blobstore) is uploaded as it is written
// and appears only when Close completes the upload; Abort cancels it. Records passed to Write must
// have exactly this schema.
func Create(path string, format Format, schema *arrow.Schema, opts Options) (*Writer, error) {
	if format == FormatUnknown {
		if format = FormatOf(path); format == FormatUnknown {
			return nil, fmt.Errorf("%s: cannot tell the output format from the extension (want %s, or set --format)", path, Formats)
		}
	}
	var w *Writer
	if blobstore.Remote(path) {
		// An object store has no rename: the upload itself is invisible
		// until committed, which gives the same all-or-nothing file.
		obj, err := blobstore.Create(context.Background(), path, false)
		if err != nil {
			return nil, err
		}
		w = &Writer{path: path, format: format, schema: schema, obj: obj, bw: bufio.NewWriterSize(obj, 1<<20)}
	} else {
		dir, base := filepath.Split(path)
		if dir == "" {
			dir = "."
		}
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, err
		}
		tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, err
		}
		w = &Writer{path: path, tmp: tmp, format: format, schema: schema, f: f, bw: bufio.NewWriterSize(f, 1<<20)}
	}
	var err error
	switch format {
	case Parquet:
		if isStringSchema(schema) && !genericParquet {
			w.enc, err = newStringsEncoder(w.bw, schema, opts)
		} else {
			w.enc, err = newParquetEncoder(w.bw, schema, opts)
		}
	case Arrow:
		w.enc, err = newIPCEncoder(w.bw, schema)
	case JSONL:
		w.enc, err = newJSONLEncoder(w.bw, schema, false, opts)
	case JSONLZstd:
		w.enc, err = newJSONLEncoder(w.bw, schema, true, opts)
	default:
		err = fmt.Errorf("unknown output format %v", format)
	}
	if err != nil {
		w.discard()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// Path returns the final path of the file.
func (w *Writer) Path() string { return w.path }

// Format returns the format being written.
func (w *Writer) Format() Format { return w.format }

// Schema returns the schema records must have.
func (w *Writer) Schema() *arrow.Schema { return w.schema }

// Rows returns the number of rows written so far.
func (w *Writer) Rows() int64 { return w.rows }

// Write appends a record batch. The caller keeps its reference.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.done {
		return fmt.Errorf("%s: write after close", w.path)
	}
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("%s: record schema %v does not match the file's schema %v", w.path, rec.Schema(), w.schema)
	}
	if err := w.enc.write(rec); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	w.rows += rec.NumRows()
	return nil
}

// Close finishes the file, syncs it to disk and renames it into place. On
// error the temporary file is removed and nothing appears at the path.
func (w *Writer) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	err := w.enc.finish()
	if err == nil {
		err = w.bw.Flush()
	}
	if w.obj != nil {
		if err == nil {
			return w.obj.Commit()
		}
		w.obj.Abort()
		return fmt.Errorf("%s: %w", w.path, err)
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.tmp, w.path)
	}
	if err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("%s: %w", w.path, err)
	}
	syncDir(filepath.Dir(w.path))
	return nil
}

// discard drops what was written: the temporary file, or the upload.
func (w *Writer) discard() error {
	if w.obj != nil {
		w.obj.Abort()
		return nil
	}
	w.f.Close()
	if err := os.Remove(w.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Abort stops writing and removes the temporary file. It is a no-op after
// Close, so `defer w.Abort()` is safe.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	if a, ok := w.enc.(interface{ abort() }); ok {
		a.abort()
	}
	return w.discard()
}

// syncDir makes a rename durable. Errors are ignored: some file systems
// cannot sync directories, and the rename itself already succeeded.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
