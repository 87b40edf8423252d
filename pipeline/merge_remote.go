package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/jobs"
)

// mergeRemote is merge for a single output object (--out s3://b/x.parquet).
// The parts were staged under OBJECT.onecore-parts/ like any object-storage
// output (leases, conditional markers, resume); here one worker, holding
// the staging prefix's "_merge" lease, streams them in shard order into
// one upload of the object — visible only once complete, so a reader never
// sees half a file and a kill leaves the old object, if any, in place —
// then writes the rejects and the record beside it, and deletes the
// staging prefix: markers first (a kill then leaves parts without markers,
// which a rerun redoes, never markers without parts), then the manifest
// (from then on the output counts as assembled), then the rest.
func (r *runner) mergeRemote() error {
	ctx := context.Background()
	final := r.out.merge
	var lk *jobs.PartLock
	for {
		var err error
		lk, err = r.od.Lock("_merge")
		if err == nil {
			break
		}
		if !errors.Is(err, jobs.ErrLocked) {
			return fmt.Errorf("assembling %s: %w", final, err)
		}
		if assembledByOther(r.od.Path, final) {
			return nil
		}
		r.cfg.Log.Info("waiting for another onecore assembling the same output", "out", final)
		time.Sleep(time.Second)
	}
	defer lk.Unlock()
	if assembledByOther(r.od.Path, final) {
		return nil
	}
	var parts, rejects []string
	for _, sh := range r.cfg.Shards {
		name := r.od.NameFor(sh.Key)
		if r.beyondLimit[name] {
			continue
		}
		parts = append(parts, r.od.PartPath(name))
		ok, err := r.od.Exists(r.od.RejectsPath(name))
		if err != nil {
			return err
		}
		if ok {
			rejects = append(rejects, r.od.RejectsPath(name))
		}
	}
	rejPath := final + ".rejects.jsonl"
	if len(rejects) > 0 {
		if err := concatObjects(ctx, rejPath, rejects); err != nil {
			return err
		}
		r.sum.Rejects = rejPath
	} else if err := blobstore.Delete(ctx, rejPath); err != nil {
		return err
	}
	if strings.HasPrefix(r.out.format, "jsonl") {
		if err := concatObjects(ctx, final, parts); err != nil {
			return err
		}
	} else if err := r.assembleRemote(ctx, final, parts); err != nil {
		return err
	}
	if err := writeOutputRecord(final, jobs.Manifest{Job: r.cfg.Job, ModelPath: r.cfg.ModelPath, ModelID: r.cfg.ModelID, Format: r.out.format}); err != nil {
		return err
	}
	crashPoint("merged")
	r.unlockAll()
	marks, err := blobstore.List(ctx, r.od.Join(jobs.DoneDir))
	if err != nil {
		return err
	}
	for _, o := range marks {
		if err := blobstore.Delete(ctx, o.Path); err != nil {
			return err
		}
	}
	if err := blobstore.Delete(ctx, r.od.Join(jobs.ManifestName)); err != nil {
		return err
	}
	crashPoint("cleanup")
	rest, err := blobstore.List(ctx, r.od.Path)
	if err != nil {
		return err
	}
	ours := lk.LeasePath()
	for _, o := range rest {
		if o.Path == ours {
			continue // the lease goes last, with Unlock
		}
		if err := blobstore.Delete(ctx, o.Path); err != nil {
			return err
		}
	}
	return nil
}

// assembleRemote writes the Parquet or Arrow parts, in order, as one file
// uploaded to final. Each part is copied to a local temporary file first
// (their readers need random access), one at a time, so the local disk
// holds at most one part.
func (r *runner) assembleRemote(ctx context.Context, final string, parts []string) error {
	tmp, err := os.MkdirTemp("", "onecore-merge-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	w, err := r.cfg.Create(final, r.out.format, r.schema)
	if err != nil {
		return fmt.Errorf("create %s: %w", final, err)
	}
	for i, p := range parts {
		local := filepath.Join(tmp, fmt.Sprintf("part-%d", i))
		if err := download(ctx, p, local); err != nil {
			w.Abort()
			return err
		}
		err := copyRecords(local, r.out.format, func(rec arrow.RecordBatch) error { return writeAs(w, r.schema, rec) })
		os.Remove(local)
		if err != nil {
			w.Abort()
			return fmt.Errorf("merge %s: %w", p, err)
		}
		crashPoint("merge")
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("close %s: %w", final, err)
	}
	return nil
}

// download copies the object p to the local file dst.
func download(ctx context.Context, p, dst string) error {
	s, err := blobstore.OpenStream(ctx, p, -1)
	if err != nil {
		return err
	}
	defer s.Close()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, s); err != nil {
		f.Close()
		return fmt.Errorf("download %s: %w", p, err)
	}
	return f.Close()
}

// concatObjects uploads the concatenation of the objects srcs to dst, as
// one upload (nothing appears at dst unless it completes).
func concatObjects(ctx context.Context, dst string, srcs []string) error {
	w, err := blobstore.Create(ctx, dst, false)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	for _, p := range srcs {
		s, err := blobstore.OpenStream(ctx, p, -1)
		if err != nil {
			w.Abort()
			return err
		}
		_, err = io.Copy(bw, s)
		s.Close()
		if err != nil {
			w.Abort()
			return fmt.Errorf("concatenating %s into %s: %w", p, dst, err)
		}
		crashPoint("merge")
	}
	if err := bw.Flush(); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}
