package blobstore

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
)

// ReaderAt reads an object with ranged GETs, so a Parquet reader fetches
// the footer and then only the column chunks it needs, and memory is the
// reader's buffers, never the object.
//
// A reader that knows what it will read next says so with Expect (the
// Parquet reader announces each row group's column chunks). A ReadAt inside
// an announced range is then served from one GET of the rest of that range,
// kept open between calls: a column chunk read in 2 MiB steps costs one
// request instead of one per step, so the store's latency is paid once per
// chunk, not once per step (on a real object store tens of milliseconds
// each), and the socket's buffer reads ahead for free. Any other ReadAt is
// one request for exactly the bytes asked.
type ReaderAt struct {
	ctx  context.Context
	b    *blob.Bucket
	key  string
	path string
	size int64

	mu      sync.Mutex
	expect  []Range                // announced by Expect
	streams map[Range]*rangeStream // open reads of announced ranges
}

// Range is Len bytes of an object from offset Off.
type Range struct{ Off, Len int64 }

func (r Range) end() int64 { return r.Off + r.Len }

// rangeStream is an open GET of the rest of an announced range.
type rangeStream struct {
	s    *Stream // nil until first used
	busy bool    // a ReadAt is using it
}

// maxStreams bounds the GETs a ReaderAt keeps open (each holds a
// connection and its socket buffer); reads of further ranges are plain
// ranged reads.
const maxStreams = 8

// maxSkip is how far ahead of an open stream a read may start and still be
// served from it, the bytes between read and dropped: cheaper than a new
// request for gaps this small.
const maxSkip = 256 << 10

// OpenReaderAt opens the object p for ranged reads; size < 0 asks the
// store for it.
func OpenReaderAt(ctx context.Context, p string, size int64) (*ReaderAt, error) {
	b, key, err := open(ctx, p)
	if err != nil {
		return nil, err
	}
	if size < 0 {
		if size, err = Size(ctx, p); err != nil {
			return nil, err
		}
	}
	return &ReaderAt{ctx: ctx, b: b, key: key, path: p, size: size, streams: map[Range]*rangeStream{}}, nil
}

// Size returns the object's size.
func (r *ReaderAt) Size() int64 { return r.size }

// Expect announces the ranges to be read next, each front to back in
// ReadAts of any size (in any order across ranges). It replaces the
// previous announcement; streams of ranges no longer announced are closed.
// Ranges outside the object or empty are ignored: an announcement only
// changes how bytes are fetched, never which.
func (r *ReaderAt) Expect(ranges []Range) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expect = r.expect[:0]
	for _, g := range ranges {
		if g.Off >= 0 && g.Len > 0 && g.end() <= r.size {
			r.expect = append(r.expect, g)
		}
	}
	for g, rs := range r.streams {
		if !rs.busy && !r.expected(g) {
			rs.close()
			delete(r.streams, g)
		}
	}
}

func (r *ReaderAt) expected(g Range) bool {
	for _, e := range r.expect {
		if e == g {
			return true
		}
	}
	return false
}

// ReadAt implements io.ReaderAt; a range cut short by the network is
// requested again (with backoff) rather than returned short.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.size-off))
	if g, rs := r.take(off, n); rs != nil {
		err := r.readStream(g, rs, p[:n], off)
		r.release(g, rs)
		if err != nil {
			return 0, err
		}
	} else if err := r.readRange(p[:n], off); err != nil {
		return 0, fmt.Errorf("read %s at %d: %w", r.path, off, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readRange reads p at off with one GET of exactly those bytes.
func (r *ReaderAt) readRange(p []byte, off int64) error {
	return withRetry(r.ctx, func() error {
		gets.Add(1)
		rr, err := r.b.NewRangeReader(r.ctx, r.key, off, int64(len(p)), nil)
		if err != nil {
			return err
		}
		defer rr.Close()
		_, err = io.ReadFull(rr, p)
		return err
	})
}

// take returns the announced range holding [off, off+n) and its stream,
// marked busy, or a nil stream when the read is better done on its own: no
// range holds it, the read takes all that is left of its range and no
// stream is open there, the range's stream is busy, or maxStreams are open.
func (r *ReaderAt) take(off int64, n int) (Range, *rangeStream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.expect {
		if off < g.Off || off+int64(n) > g.end() {
			continue
		}
		rs := r.streams[g]
		switch {
		case rs == nil && off+int64(n) == g.end():
			return g, nil
		case rs == nil && len(r.streams) >= maxStreams:
			return g, nil
		case rs == nil:
			rs = &rangeStream{}
			r.streams[g] = rs
		case rs.busy:
			return g, nil
		}
		rs.busy = true
		return g, rs
	}
	return Range{}, nil
}

// readStream reads p at off from the range's stream, opening it (or
// reopening it, for a read behind it or far ahead of it) as needed. Its
// errors name the object and the offset where reading stopped.
func (r *ReaderAt) readStream(g Range, rs *rangeStream, p []byte, off int64) error {
	if rs.s != nil && (off < rs.s.off || off-rs.s.off > maxSkip) {
		rs.close()
	}
	if rs.s == nil {
		gets.Add(1)
		s := &Stream{ctx: r.ctx, b: r.b, key: r.key, path: r.path, size: r.size, off: off, end: g.end()}
		if err := s.reopen(); err != nil {
			return fmt.Errorf("read %s at %d: %w", r.path, off, err)
		}
		rs.s = s
	}
	if skip := off - rs.s.off; skip > 0 {
		if _, err := io.CopyN(io.Discard, rs.s, skip); err != nil {
			rs.close()
			return err
		}
	}
	if _, err := io.ReadFull(rs.s, p); err != nil {
		rs.close()
		return err
	}
	return nil
}

// release hands the stream back; one at the end of its range (its body read
// to the end, so the connection goes back to the pool) or of a range no
// longer announced is closed.
func (r *ReaderAt) release(g Range, rs *rangeStream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs.busy = false
	if rs.s == nil || rs.s.off >= g.end() || !r.expected(g) {
		rs.close()
		delete(r.streams, g)
	}
}

func (rs *rangeStream) close() {
	if rs.s != nil {
		rs.s.Close()
		rs.s = nil
	}
}

// Close closes the open streams.
func (r *ReaderAt) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for g, rs := range r.streams {
		rs.close()
		delete(r.streams, g)
	}
	r.expect = nil
	return nil
}

// gets counts the GETs ReaderAts have started, for tests.
var gets atomic.Int64

// Stream reads an object front to back in one GET, and when the
// connection drops midway (or the body ends before the object's size)
// reopens it from the byte it stopped at: a long JSON Lines shard survives
// a reset without reading anything twice.
type Stream struct {
	ctx  context.Context
	b    *blob.Bucket
	key  string
	path string
	size int64 // -1: unknown
	off  int64
	end  int64 // 0: read to the object's end; else stop before this offset
	rc   *blob.Reader
	fail int // consecutive failed attempts
}

// OpenStream opens the object p for a sequential read; size is its size
// when known (from the listing), or -1.
func OpenStream(ctx context.Context, p string, size int64) (*Stream, error) {
	b, key, err := open(ctx, p)
	if err != nil {
		return nil, err
	}
	s := &Stream{ctx: ctx, b: b, key: key, path: p, size: size}
	if err := s.reopen(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Stream) reopen() error {
	return withRetry(s.ctx, func() error {
		n := int64(-1)
		if s.end > 0 {
			n = s.end - s.off
		}
		rr, err := s.b.NewRangeReader(s.ctx, s.key, s.off, n, nil)
		if err != nil {
			return err
		}
		if s.size < 0 {
			s.size = rr.Size()
		}
		s.rc = rr
		return nil
	})
}

// Read implements io.Reader.
func (s *Stream) Read(p []byte) (int, error) {
	for {
		if s.rc == nil {
			if err := s.reopen(); err != nil {
				return 0, fmt.Errorf("read %s at %d: %w", s.path, s.off, err)
			}
		}
		n, err := s.rc.Read(p)
		s.off += int64(n)
		if err == nil || (err == io.EOF && s.atEnd()) {
			if n > 0 {
				s.fail = 0
			}
			return n, err
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the body ended before the object did
		}
		s.rc.Close()
		s.rc = nil
		s.fail++
		if s.fail >= maxAttempts || classify(err) == causeNone {
			return n, fmt.Errorf("read %s at %d: %w", s.path, s.off, err)
		}
		count(err)
		if n > 0 {
			return n, nil
		}
		select {
		case <-s.ctx.Done():
			return 0, s.ctx.Err()
		case <-time.After(backoff(s.fail)):
		}
	}
}

// atEnd reports whether the stream has read all it was opened for.
func (s *Stream) atEnd() bool {
	switch {
	case s.end > 0:
		return s.off >= s.end
	case s.size >= 0:
		return s.off >= s.size
	}
	return true // size unknown: trust the body's end
}

// Close ends the read.
func (s *Stream) Close() error {
	if s.rc == nil {
		return nil
	}
	err := s.rc.Close()
	s.rc = nil
	return err
}

// Writer uploads an object as it is written (a multipart upload once it
// outgrows one part), so memory is a few parts whatever the object's size.
// Nothing is visible at its path until Commit succeeds; Abort, or a kill,
// leaves no object (an upload that was never completed is invisible; a
// bucket lifecycle rule reclaims its parts).
type Writer struct {
	path   string
	w      *blob.Writer // gs://, azblob://, and s3:// keys s3Upload cannot write
	s3     *s3Upload    // s3://
	cancel context.CancelFunc
	done   atomic.Bool
}

// PartSize is the size of one uploaded part, and so the memory one Writer
// holds per concurrent part.
const PartSize = 8 << 20

// Create starts an upload to p. With ifNotExist the object is created only
// if it does not exist yet (If-None-Match: *): Commit fails with an error
// for which IsPrecondition is true otherwise.
func Create(ctx context.Context, p string, ifNotExist bool) (*Writer, error) {
	b, key, err := open(ctx, p)
	if err != nil {
		return nil, err
	}
	var client *s3.Client
	if Scheme(p) == "s3" && b.As(&client) {
		l, _ := Parse(p)
		if u := newS3Upload(ctx, client, l.Bucket, key, ifNotExist); u != nil {
			return &Writer{path: p, s3: u}, nil
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	w, err := b.NewWriter(ctx, key, &blob.WriterOptions{BufferSize: PartSize, MaxConcurrency: uploadConcurrency, IfNotExist: ifNotExist})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	return &Writer{path: p, w: w, cancel: cancel}, nil
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	if w.s3 != nil {
		return w.s3.Write(p)
	}
	return w.w.Write(p)
}

// Commit completes the upload: the object appears, whole, at its path.
func (w *Writer) Commit() error {
	if !w.done.CompareAndSwap(false, true) {
		return nil
	}
	if w.s3 != nil {
		if err := w.s3.Commit(); err != nil {
			return fmt.Errorf("upload %s: %w", w.path, err)
		}
		return nil
	}
	defer w.cancel()
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("upload %s: %w", w.path, err)
	}
	return nil
}

// Abort cancels the upload: nothing appears at the path. It is a no-op
// after Commit.
func (w *Writer) Abort() {
	if !w.done.CompareAndSwap(false, true) {
		return
	}
	if w.s3 != nil {
		w.s3.Abort()
		return
	}
	w.cancel() // a cancelled context makes Close abort the upload
	w.w.Close()
}
