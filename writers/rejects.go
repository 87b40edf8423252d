package writers

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/onecore-dev/onecore/readers"
)

// Rejects writes the rejects file: JSON Lines, one object per problem,
//
//	{"kind":"row","file":"a.jsonl","row":7,"reason":"malformed JSON at byte 12: ...","excerpt":"{\"text\":..."}
//	{"kind":"file","file":"b.parquet","row":120000,"reason":"...","excerpt":""}
//
// kind "row" is one rejected row; kind "file" is a file that could not be
// read (further), with row the index where reading stopped. Lines are
// written as problems happen (the file is not atomic: a partial rejects
// file after a crash is more useful than none). Safe for concurrent use.
type Rejects struct {
	mu  sync.Mutex
	f   *os.File
	bw  *bufio.Writer
	n   int64
	buf []byte
}

// CreateRejects creates (truncates) a rejects file.
func CreateRejects(path string) (*Rejects, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &Rejects{f: f, bw: bufio.NewWriterSize(f, 64<<10)}, nil
}

// Row records a rejected row. A nil *Rejects discards.
func (r *Rejects) Row(rej *readers.Reject) error {
	if r == nil {
		return nil
	}
	return r.write("row", rej.File, rej.Row, rej.Reason, rej.Excerpt)
}

// File records an unreadable file. A nil *Rejects discards.
func (r *Rejects) File(fe *readers.FileError) error {
	if r == nil {
		return nil
	}
	return r.write("file", fe.File, fe.Row, fe.Err.Error(), "")
}

func (r *Rejects) write(kind, file string, row int64, reason, excerpt string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := append(r.buf[:0], `{"kind":`...)
	b = appendString(b, kind)
	b = append(b, `,"file":`...)
	b = appendString(b, file)
	b = append(b, `,"row":`...)
	b = strconv.AppendInt(b, row, 10)
	b = append(b, `,"reason":`...)
	b = appendString(b, reason)
	b = append(b, `,"excerpt":`...)
	b = appendString(b, excerpt)
	b = append(b, "}\n"...)
	r.buf = b
	r.n++
	if _, err := r.bw.Write(b); err != nil {
		return fmt.Errorf("rejects file: %w", err)
	}
	return nil
}

// Count returns the number of lines written.
func (r *Rejects) Count() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Flush writes buffered lines to the file.
func (r *Rejects) Flush() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bw.Flush()
}

// Close flushes, syncs and closes the file. A nil *Rejects is fine.
func (r *Rejects) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.bw.Flush()
	if serr := r.f.Sync(); err == nil {
		err = serr
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}
