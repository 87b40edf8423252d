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
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/onecore-dev/onecore/internal/atomicfile"
	"github.com/onecore-dev/onecore/jobs"
)

// merge assembles the finished parts, in shard order, into the single
// output file (atomically: the old file, if any, stays until the new one is
// complete), gathers the rejects beside it, and removes the staging folder.
func (r *runner) merge() error {
	final := r.out.merge
	// One assembler at a time: a second run that finished the shards too
	// waits, then finds the staging folder gone (removed by the first
	// while it held this lock) and the file in place.
	var lk *jobs.PartLock
	for {
		var err error
		lk, err = r.od.Lock("_merge")
		if err == nil {
			break
		}
		if errors.Is(err, os.ErrNotExist) && assembledByOther(r.od.Path, final) {
			return nil
		}
		if !errors.Is(err, jobs.ErrLocked) {
			return fmt.Errorf("assembling %s: %w", final, err)
		}
		r.cfg.Log.Info("waiting for another onecore assembling the same output", "out", final)
		time.Sleep(200 * time.Millisecond)
	}
	defer lk.Unlock()
	if assembledByOther(r.od.Path, final) {
		return nil
	}
	// Temporaries of an assembly killed earlier.
	stale, _ := filepath.Glob(filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+".tmp-*"))
	for _, f := range stale {
		os.Remove(f)
	}
	var parts, rejects []string
	for _, sh := range r.cfg.Shards { // world is 1 in merge mode: every shard is ours
		name := jobs.PartName(sh.Key)
		parts = append(parts, r.od.PartPath(name))
		if _, err := os.Stat(r.od.RejectsPath(name)); err == nil {
			rejects = append(rejects, r.od.RejectsPath(name))
		}
	}
	rejPath := final + ".rejects.jsonl"
	if len(rejects) > 0 {
		if err := concatFiles(rejPath, rejects); err != nil {
			return err
		}
		r.sum.Rejects = rejPath
	} else if err := os.Remove(rejPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if strings.HasPrefix(r.out.format, "jsonl") { // JSON Lines (and zstd frames) simply concatenate
		if err := concatFiles(final, parts); err != nil {
			return err
		}
	} else {
		w, err := r.cfg.Create(final, r.out.format, r.schema)
		if err != nil {
			return fmt.Errorf("create %s: %w", final, err)
		}
		for _, p := range parts {
			if err := copyRecords(p, r.out.format, func(rec arrow.RecordBatch) error { return writeAs(w, r.schema, rec) }); err != nil {
				w.Abort()
				return fmt.Errorf("merge %s: %w", p, err)
			}
			crashPoint("merge")
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("close %s: %w", final, err)
		}
	}
	crashPoint("merged")
	r.unlockAll()
	// Still holding the merge lock (its file goes with the folder): a
	// second run waiting to assemble finds the folder gone and the file in
	// place. Markers go first, so a kill during cleanup leaves parts
	// without markers, which a rerun redoes, never markers without parts.
	if err := os.RemoveAll(filepath.Join(r.od.Path, jobs.DoneDir)); err != nil {
		return err
	}
	syncDir(r.od.Path)
	crashPoint("cleanup")
	return os.RemoveAll(r.od.Path)
}

// assembledByOther reports whether another run assembled the output while
// this one waited: the staging folder's markers are gone and the file is
// there.
func assembledByOther(staging, final string) bool {
	if _, err := os.Stat(filepath.Join(staging, jobs.DoneDir)); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	_, err := os.Stat(final)
	return err == nil
}

// writeAs writes rec under schema: a part read back carries its reader's
// idea of the schema (Parquet field ids, list element names), while the
// columns' data are laid out exactly as written, so they are re-typed.
func writeAs(w PartWriter, schema *arrow.Schema, rec arrow.RecordBatch) error {
	if rec.NumCols() != int64(schema.NumFields()) {
		return fmt.Errorf("part has %d columns, the job's schema %d", rec.NumCols(), schema.NumFields())
	}
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		d := c.Data()
		nd := array.NewData(schema.Field(i).Type, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
		cols[i] = array.MakeFromData(nd)
		nd.Release()
	}
	out := array.NewRecordBatch(schema, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	defer out.Release()
	return w.Write(out)
}

// copyRecords streams the record batches of an output file to write.
func copyRecords(path, format string, write func(arrow.RecordBatch) error) error {
	switch format {
	case "parquet":
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			return err
		}
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		rr, err := fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			return err
		}
		defer rr.Release()
		for rr.Next() {
			if err := write(rr.RecordBatch()); err != nil {
				return err
			}
		}
		if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	case "arrow":
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if fr, err := ipc.NewFileReader(f); err == nil {
			defer fr.Close()
			for i := 0; i < fr.NumRecords(); i++ {
				rec, err := fr.RecordBatch(i)
				if err != nil {
					return err
				}
				if err := write(rec); err != nil {
					return err
				}
			}
			return nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		sr, err := ipc.NewReader(f)
		if err != nil {
			return err
		}
		defer sr.Release()
		for sr.Next() {
			if err := write(sr.RecordBatch()); err != nil {
				return err
			}
		}
		return sr.Err()
	}
	return fmt.Errorf("unknown format %q", format)
}

// concatFiles writes the concatenation of srcs to dst atomically.
func concatFiles(dst string, srcs []string) error {
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	for _, s := range srcs {
		in, err := os.Open(s)
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			return err
		}
		_, err = io.Copy(bw, in)
		in.Close()
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		os.Remove(f.Name())
		return err
	}
	syncDir(filepath.Dir(dst))
	return nil
}

// syncDir makes a rename that commits data durable (a variable so a test
// can check every such rename is followed by one).
var syncDir = atomicfile.SyncDir
