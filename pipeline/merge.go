package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
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
	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/jobs"
)

// merge assembles the finished parts, in shard order, into the single
// output file (atomically: the old file, if any, stays until the new one is
// complete), gathers the rejects beside it, and removes the staging folder.
func (r *runner) merge() error {
	final := r.out.merge
	if blobstore.Remote(final) {
		return r.mergeRemote()
	}
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
		name := r.od.NameFor(sh.Key)
		if r.beyondLimit[name] {
			continue // a limited job stopped before this shard: it has no part
		}
		parts = append(parts, r.od.PartPath(name))
		if _, err := os.Stat(r.od.RejectsPath(name)); err == nil {
			rejects = append(rejects, r.od.RejectsPath(name))
		}
	}
	if final == stdoutName {
		return r.mergeToStdout(parts, rejects)
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
	if err := writeOutputRecord(final, jobs.Manifest{Job: r.cfg.Job, ModelPath: r.cfg.ModelPath, ModelID: r.cfg.ModelID, Format: r.out.format}); err != nil {
		return err
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

// mergeToStdout writes the parts, in shard order, to the run's Stdout, and
// the rejects as warnings on the log (there is no place beside a pipe to
// put a rejects file). The staging folder is the caller's temporary one.
func (r *runner) mergeToStdout(parts, rejects []string) error {
	bw := bufio.NewWriterSize(r.cfg.Stdout, 1<<20)
	for _, p := range parts {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(bw, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("writing results to stdout: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing results to stdout: %w", err)
	}
	for _, p := range rejects {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			r.cfg.Log.Warn("rejected", "row", line)
		}
	}
	if len(rejects) > 0 {
		r.sum.Rejects = "stderr (the log's \"rejected\" lines)"
	}
	return nil
}

// OutputRecordSuffix names the record written beside a single output file
// (FILE + suffix): the job and model that wrote it, and the file's size and
// modification time then. A later run replaces the file only when the
// record matches it and this run's job and model (the rerun of the same
// command); anything else there, another job's results or a file some other
// tool wrote, is refused without --force.
const OutputRecordSuffix = ".onecore.json"

// outputRecord is the content of FILE.onecore.json.
type outputRecord struct {
	jobs.Manifest
	Size    int64 `json:"size"`
	MTimeNS int64 `json:"mtime_ns"`
}

// writeOutputRecord records, beside the assembled file final, which job and
// model wrote it.
func writeOutputRecord(final string, m jobs.Manifest) error {
	size, mtime, err := statOutput(final)
	if err != nil {
		return err
	}
	m.Version = 1
	if m.Fingerprint == "" && m.Job != nil {
		m.Fingerprint = m.Job.Fingerprint()
	}
	m.Created = time.Now().UTC().Format(time.RFC3339)
	b, _ := json.MarshalIndent(outputRecord{Manifest: m, Size: size, MTimeNS: mtime}, "", "  ")
	if blobstore.Remote(final) {
		return blobstore.WriteAll(context.Background(), final+OutputRecordSuffix, append(b, '\n'), false)
	}
	return atomicfile.WriteFile(final+OutputRecordSuffix, append(b, '\n'))
}

// statOutput is the size and modification time (Unix ns) of an output file
// or object; a missing one is os.ErrNotExist.
func statOutput(p string) (size, mtimeNS int64, err error) {
	if blobstore.Remote(p) {
		return blobstore.Stat(context.Background(), p)
	}
	st, err := os.Stat(p)
	if err != nil {
		return 0, 0, err
	}
	return st.Size(), st.ModTime().UnixNano(), nil
}

// readOutput reads a file or object beside an output; a missing one is
// os.ErrNotExist.
func readOutput(p string) ([]byte, error) {
	if blobstore.Remote(p) {
		return blobstore.ReadAll(context.Background(), p)
	}
	return os.ReadFile(p)
}

// checkOutputFile refuses to replace an existing single output file that
// this job and model did not write, unless force is set: either its record
// (FILE.onecore.json) matches it and this run, or the staging folder holds
// this same job's unfinished assembly (a run killed after renaming the file
// into place but before cleaning up).
func checkOutputFile(out output, m jobs.Manifest, force bool) error {
	size, mtime, err := statOutput(out.merge)
	if errors.Is(err, os.ErrNotExist) || force {
		return nil
	}
	if err != nil {
		return err
	}
	fp := m.Job.Fingerprint()
	same := func(o jobs.Manifest) bool { return o.Fingerprint == fp && o.ModelID == m.ModelID }
	var rec outputRecord
	b, err := readOutput(out.merge + OutputRecordSuffix)
	if err == nil && json.Unmarshal(b, &rec) == nil {
		if rec.Size == size && rec.MTimeNS == mtime {
			if same(rec.Manifest) {
				return nil
			}
			return fmt.Errorf("%s was written by a different job or model (fingerprint %s, model %s id %s; this run %s, id %s): use another --out, or --force to replace it", out.merge, rec.Fingerprint, rec.ModelPath, rec.ModelID, fp, m.ModelID)
		}
	}
	var staged jobs.Manifest
	if b, err := readOutput(jobs.OutDir{Path: out.dir}.Join(jobs.ManifestName)); err == nil && json.Unmarshal(b, &staged) == nil && same(staged) {
		return nil
	}
	return fmt.Errorf("%s already exists and was not written by this job and model (no matching %s beside it): use another --out, or --force to replace it", out.merge, filepath.Base(out.merge)+OutputRecordSuffix)
}

// assembledByOther reports whether another run assembled the output while
// this one waited: the staging folder's markers are gone and the file is
// there (in object storage, which has no folders: the staging prefix's
// manifest is gone and the object is there).
func assembledByOther(staging, final string) bool {
	if blobstore.Remote(final) {
		ctx := context.Background()
		if ok, err := blobstore.Exists(ctx, blobstore.Join(staging, jobs.ManifestName)); err != nil || ok {
			return false
		}
		ok, err := blobstore.Exists(ctx, final)
		return err == nil && ok
	}
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

// ReadRecords streams the record batches of a Parquet or Arrow IPC results
// file (format "parquet" or "arrow") to fn, stopping at fn's first error,
// which it returns. onecore show reads results with it.
func ReadRecords(path, format string, fn func(arrow.RecordBatch) error) error {
	return copyRecords(path, format, fn)
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
