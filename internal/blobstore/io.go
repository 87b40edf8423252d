package blobstore

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"gocloud.dev/blob"
)

// ReaderAt reads an object with ranged GETs: each ReadAt is one request
// for exactly the bytes asked, so a Parquet reader fetches the footer and
// then only the column chunks it needs, and memory is the reader's buffers,
// never the object.
type ReaderAt struct {
	ctx  context.Context
	b    *blob.Bucket
	key  string
	path string
	size int64
}

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
	return &ReaderAt{ctx: ctx, b: b, key: key, path: p, size: size}, nil
}

// Size returns the object's size.
func (r *ReaderAt) Size() int64 { return r.size }

// ReadAt implements io.ReaderAt; a range cut short by the network is
// requested again (with backoff) rather than returned short.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.size-off))
	err := withRetry(r.ctx, func() error {
		rr, err := r.b.NewRangeReader(r.ctx, r.key, off, int64(n), nil)
		if err != nil {
			return err
		}
		defer rr.Close()
		_, err = io.ReadFull(rr, p[:n])
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read %s at %d: %w", r.path, off, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close releases nothing (each range is its own request); it exists so the
// readers can close a file and an object alike.
func (r *ReaderAt) Close() error { return nil }

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
		rr, err := s.b.NewRangeReader(s.ctx, s.key, s.off, -1, nil)
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
		if err == nil || (err == io.EOF && (s.size < 0 || s.off >= s.size)) {
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
	w      *blob.Writer
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
	ctx, cancel := context.WithCancel(ctx)
	w, err := b.NewWriter(ctx, key, &blob.WriterOptions{BufferSize: PartSize, MaxConcurrency: 2, IfNotExist: ifNotExist})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("create %s: %w", p, err)
	}
	return &Writer{path: p, w: w, cancel: cancel}, nil
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) { return w.w.Write(p) }

// Commit completes the upload: the object appears, whole, at its path.
func (w *Writer) Commit() error {
	if !w.done.CompareAndSwap(false, true) {
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
	w.cancel() // a cancelled context makes Close abort the upload
	w.w.Close()
}
