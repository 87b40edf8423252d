// Package readers streams documents out of corpus shards: Parquet files and
// JSON Lines files (plain, gzip or zstd compressed), from directories, globs
// or file lists, in a deterministic order and with bounded memory.
//
// A Reader yields one Document per input row. Problems are typed errors so a
// caller can count them and go on:
//
//   - *Reject: one row is unusable (malformed JSON line, missing or non-string
//     text, text over Options.MaxDocBytes, invalid UTF-8). The reader stays
//     usable; call Next again.
//   - *FileError: the file itself is unreadable from some point on (bad
//     gzip/zstd stream, bad Parquet footer or page). Every row before that
//     point has already been delivered; Next keeps returning the same error.
//
// Rows are counted from 0 in file order. For JSONL the row is the 0-based
// line index (blank lines are not documents but still count as lines, so
// row+1 is the line number an editor shows). For Parquet it is the 0-based
// row index in the file.
package readers

import (
	"fmt"
	"strconv"
	"strings"
)

// Format is the on-disk format of a shard.
type Format int

// Shard formats.
const (
	FormatUnknown Format = iota
	FormatParquet
	FormatJSONL     // plain JSON Lines
	FormatJSONLGzip // JSON Lines compressed with gzip
	FormatJSONLZstd // JSON Lines compressed with zstd
)

var formatNames = [...]string{"unknown", "parquet", "jsonl", "jsonl.gz", "jsonl.zst"}

// String returns the format's short name, e.g. "jsonl.zst".
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// Shard is one input file.
type Shard struct {
	Path string // path as opened
	Rel  string // path relative to the input (directory or glob) it came from; the base name for a plain file
	Size int64  // bytes on disk
	// ModNS is the file's or object's modification time in Unix
	// nanoseconds, 0 when unknown: with Size, what tells a later run
	// that a shard changed since it was processed.
	ModNS  int64
	Format Format
}

// UTF8Policy says what happens to string fields that are not valid UTF-8.
type UTF8Policy int

const (
	// UTF8Reject rejects the row (the reject names the field). The default:
	// nothing changes silently, and the rejects file says where to look.
	UTF8Reject UTF8Policy = iota
	// UTF8Repair replaces each invalid byte sequence with U+FFFD, as Python's
	// errors="replace" does, and keeps the row.
	UTF8Repair
)

// DefaultMaxDocBytes is the default Options.MaxDocBytes: 64 MiB.
const DefaultMaxDocBytes = 64 << 20

// Options select the fields a reader extracts.
type Options struct {
	TextField string   // field holding the document text; "" means "text"
	IDField   string   // field holding the document id; "" means "id"; missing or null → "file:row"
	Keep      []string // passthrough fields, delivered in this order in Document.Keep
	// MaxDocBytes caps one row: a JSONL line or a Parquet text value longer
	// than this is rejected (not read into memory for JSONL). 0 means
	// DefaultMaxDocBytes; negative means no limit.
	MaxDocBytes int64
	UTF8        UTF8Policy
	// Borrow makes the strings of a Document (ID, Text, Keep) alias the
	// reader's buffers instead of copying them, and reuses the Keep slice:
	// they are valid only until the next call to Next. For callers that
	// copy a document away at once (into an Arrow builder, say); it saves
	// allocations and a copy of every text.
	Borrow bool
}

func (o Options) withDefaults() Options {
	if o.TextField == "" {
		o.TextField = "text"
	}
	if o.IDField == "" {
		o.IDField = "id"
	}
	if o.MaxDocBytes == 0 {
		o.MaxDocBytes = DefaultMaxDocBytes
	}
	if o.MaxDocBytes < 0 {
		o.MaxDocBytes = 1<<63 - 1
	}
	return o
}

// Source locates a row in the input.
type Source struct {
	File string // shard path
	Row  int64  // 0-based row (JSONL: line index)
}

// Value is a nullable passthrough value. Strings pass through as they are;
// numbers and booleans as their JSON text (42, 0.5, true); nested values
// (objects, arrays, Parquet groups, lists and maps) as compact JSON text.
// Valid is false for null or missing fields.
type Value struct {
	S     string
	Valid bool
}

// Document is one input row.
type Document struct {
	ID     string // the id field, or "file:row" when it is missing or null
	Text   string
	Source Source
	Keep   []Value // one per Options.Keep, in that order
}

// Reject is a row that could not be turned into a Document.
type Reject struct {
	File    string
	Row     int64
	Reason  string
	Excerpt string // the start of the raw row, valid UTF-8, at most ExcerptBytes
	// ID is the row's id when it could be read despite the reason (a
	// missing or null text, say), so the rejects name the document;
	// "" when not.
	ID string
}

// ExcerptBytes caps Reject.Excerpt.
const ExcerptBytes = 256

func (r *Reject) Error() string {
	return fmt.Sprintf("%s: row %d: %s", r.File, r.Row, r.Reason)
}

// FileError reports a file that cannot be read (any further). Row is the
// number of rows delivered (as documents or rejects) before the failure,
// which is also the index of the row where reading stopped.
type FileError struct {
	File string
	Row  int64
	Err  error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("%s: row %d: %v", e.File, e.Row, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// excerpt returns the first ExcerptBytes of b as valid UTF-8 (a rune cut
// at the end, like any invalid sequence, becomes U+FFFD).
func excerpt(b []byte) string {
	if len(b) > ExcerptBytes {
		b = b[:ExcerptBytes]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
