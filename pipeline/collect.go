package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/jobs"
)

// shardRun is one shard being processed. The reader sets total, fileErr and
// aborted before it sends the end event; everything else belongs to the
// collector goroutine.
type shardRun struct {
	Shard
	name string
	lock *jobs.PartLock // held from claim until the marker is written

	total   int64
	fileErr error
	aborted bool
	badFile bool // fileErr accepted (--skip-bad-files): marked done as a bad file

	lockedByOther bool   // claim found another live run writing this part
	takenFrom     string // the dead worker whose expired lease claim took over

	ended     bool
	dead      bool // aborted or failed: drop its items
	next      int64
	pending   map[int64]*item
	bld       *array.RecordBuilder
	rows      int // rows in bld
	w         PartWriter
	rej       *rejectsFile
	rowsIn    int64
	rowsOut   int64
	rejected  int64
	tokens    int64
	textBytes int64
	keepSeen  []bool // per --keep field: some written row had a value
}

// collect puts results back in input order per shard, writes them, and
// finalizes each shard (atomic part, rejects, completion marker) as soon as
// its last row is in.
func (r *runner) collect(in <-chan event, fail func(error)) error {
	open := map[*shardRun]bool{}
	var firstErr error
	failed := func(sr *shardRun, err error) {
		if firstErr == nil {
			firstErr = err
			fail(err)
		}
		r.abort(sr)
		delete(open, sr)
	}
	// settle finalizes sr if its last row is in, and forgets it once it
	// is finished (or dropped).
	settle := func(sr *shardRun) {
		if err := r.maybeFinish(sr); err != nil {
			failed(sr, err)
		} else if sr.w == nil {
			delete(open, sr)
		}
	}
	for ev := range in {
		t0 := time.Now()
		switch {
		case ev.start != nil:
			sr := ev.start
			if firstErr != nil {
				r.abort(sr)
				break
			}
			if err := r.begin(sr); err != nil {
				failed(sr, err)
				break
			}
			open[sr] = true
		case ev.end != nil:
			sr := ev.end
			if sr.dead {
				break
			}
			sr.ended = true
			if sr.aborted {
				r.abort(sr)
				delete(open, sr)
				break
			}
			if sr.fileErr != nil {
				if !r.cfg.SkipBadFiles {
					// Not marked: the next run retries the shard (the file
					// may have been moved, truncated by a copy still
					// running, or hit an I/O error), and every run reports
					// it until it succeeds or the user accepts the loss.
					r.cfg.Log.Error("shard failed: not marked done, a rerun retries it (--skip-bad-files accepts the loss)", "file", sr.Path, "err", sr.fileErr)
					r.failMu.Lock()
					r.failed = append(r.failed, FailedShard{Shard: sr.Key, File: sr.Path, Error: sr.fileErr.Error()})
					r.failMu.Unlock()
					r.abort(sr)
					delete(open, sr)
					break
				}
				sr.badFile = true
				r.cfg.Log.Error("bad input file: skipped from the failing row on (--skip-bad-files)", "file", sr.Path, "err", sr.fileErr)
				if err := sr.rej.add(rejectRow{File: sr.Path, Row: -1, Reason: "file unreadable: " + sr.fileErr.Error()}); err != nil {
					failed(sr, err)
					break
				}
			}
			settle(sr)
		default:
			for _, it := range ev.items {
				sr := it.shard
				if sr.dead {
					continue
				}
				sr.pending[it.seq] = it
				if err := r.drain(sr); err != nil {
					failed(sr, err)
					continue
				}
				settle(sr)
			}
		}
		r.st.addBusy(stWrite, t0)
	}
	for sr := range open { // interrupted or failed: unfinished shards leave nothing behind
		r.abort(sr)
	}
	return firstErr
}

func (r *runner) begin(sr *shardRun) error {
	sr.pending = map[int64]*item{}
	w, err := r.cfg.Create(r.od.PartPath(sr.name), r.od.Format, r.schema)
	if err != nil {
		return fmt.Errorf("create part for %s: %w", sr.Key, err)
	}
	sr.w = w
	sr.bld = array.NewRecordBuilder(memory.DefaultAllocator, r.schema)
	sr.rej = &rejectsFile{path: r.od.RejectsPath(sr.name), remote: r.leases()}
	return nil
}

// drain moves the in-order prefix of pending results into the batch.
func (r *runner) drain(sr *shardRun) error {
	for {
		it, ok := sr.pending[sr.next]
		if !ok {
			return nil
		}
		delete(sr.pending, sr.next)
		sr.next++
		r.st.rowsIn.Add(1)
		sr.rowsIn++
		if it.reject != "" {
			sr.rejected++
			r.st.rejected.Add(1)
			if err := sr.rej.add(rejectRow{File: it.doc.File, Row: it.doc.Row, ID: it.doc.ID, Reason: it.reject}); err != nil {
				return err
			}
			crashPoint("reject")
			continue
		}
		sr.textBytes += int64(it.textLen)
		r.st.textSeen.Add(int64(it.textLen))
		r.appendRow(sr.bld, it)
		if sr.keepSeen == nil {
			sr.keepSeen = make([]bool, len(r.cfg.Job.Keep))
		}
		for k := range sr.keepSeen {
			if k < len(it.doc.Keep) && it.doc.Keep[k].Valid {
				sr.keepSeen[k] = true
			}
		}
		sr.rows++
		sr.rowsOut++
		sr.tokens += int64(len(it.tokens))
		r.st.rowsOut.Add(1)
		r.st.tokens.Add(int64(len(it.tokens)))
		if sr.rows >= r.cfg.BatchRows {
			if err := r.flush(sr); err != nil {
				return err
			}
		}
	}
}

func (r *runner) flush(sr *shardRun) error {
	if sr.rows == 0 {
		return nil
	}
	rec := sr.bld.NewRecordBatch()
	defer rec.Release()
	sr.rows = 0
	if err := sr.w.Write(rec); err != nil {
		return fmt.Errorf("write part %s: %w", r.od.PartPath(sr.name), err)
	}
	crashPoint("write")
	return nil
}

// maybeFinish finalizes a shard whose every row is in: the part is renamed
// into place, then the rejects file, then the completion marker — so a
// marker always means a complete part.
func (r *runner) maybeFinish(sr *shardRun) error {
	if !sr.ended || sr.next != sr.total || sr.w == nil {
		return nil
	}
	if err := r.flush(sr); err != nil {
		return err
	}
	sr.bld.Release()
	sr.bld = nil
	if err := sr.w.Close(); err != nil {
		return fmt.Errorf("close part %s: %w", r.od.PartPath(sr.name), err)
	}
	sr.w = nil
	crashPoint("renamed")
	if err := sr.rej.close(); err != nil {
		return err
	}
	crashPoint("rejects")
	m := jobs.Marker{Shard: sr.Key, Path: sr.Path, Part: filepath.Base(r.od.PartPath(sr.name)), RowsIn: sr.total, RowsOut: sr.rowsOut, Rejected: sr.rejected, Tokens: sr.tokens,
		Input: &jobs.InputStat{Size: sr.Size, ModNS: sr.ModNS}}
	if sr.fileErr != nil {
		m.BadFile = sr.fileErr.Error()
	}
	if r.leases() {
		m.Worker = jobs.WorkerID()
	}
	if err := r.od.MarkDone(sr.name, m); err != nil {
		return err
	}
	crashPoint("marked")
	r.warnMissingKeep(sr)
	if r.leases() {
		r.marked = append(r.marked, sr.Key)
		if sr.takenFrom != "" {
			r.takenOver = append(r.takenOver, sr.Key+" from "+sr.takenFrom)
		}
		if sr.lock.Lost() {
			r.leasesLost++
		}
	}
	sr.lock.Unlock()
	sr.lock = nil
	// Only now do the shard's rows count as written: rows of a shard that
	// is dropped (interrupt, disk full, a failed read) never reach a marked
	// part and are not reported.
	r.st.committed.add(jobs.Marker{RowsIn: sr.rowsIn, RowsOut: sr.rowsOut, Rejected: sr.rejected, Tokens: sr.tokens, BadFile: m.BadFile})
	r.st.shardsDone.Add(1)
	r.st.doneBytes.Add(sr.Size)
	r.st.doneText.Add(sr.textBytes)
	return nil
}

// warnMissingKeep warns, once per field and run, of a --keep field no
// written row of the shard had a value for (a typo, or a field another
// format names differently): its column is all null there, which is
// otherwise easy to miss.
func (r *runner) warnMissingKeep(sr *shardRun) {
	if sr.rowsOut == 0 {
		return
	}
	for k, spec := range r.cfg.Job.Keep {
		f, col := jobs.SplitKeep(spec)
		if (k < len(sr.keepSeen) && sr.keepSeen[k]) || r.keepWarned[spec] {
			continue
		}
		if r.keepWarned == nil {
			r.keepWarned = map[string]bool{}
		}
		r.keepWarned[spec] = true
		r.cfg.Log.Warn("--keep field has no value in any row of the shard: its column is null there (warned once per field)", "field", f, "column", col, "shard", sr.Path, "rows", sr.rowsOut)
	}
}

// abort drops a shard's unfinished outputs (nothing reaches its final name).
func (r *runner) abort(sr *shardRun) {
	sr.dead = true
	if sr.bld != nil {
		sr.bld.Release()
		sr.bld = nil
	}
	if sr.w != nil {
		sr.w.Abort()
		sr.w = nil
	}
	if sr.rej != nil {
		sr.rej.abort()
	}
	sr.pending = nil
	sr.lock.Unlock()
	sr.lock = nil
}

// appendRow appends one result row in schema order.
func (r *runner) appendRow(b *array.RecordBuilder, it *item) {
	nKeep := len(r.cfg.Job.Keep)
	firstKeep := len(r.schema.Fields()) - nKeep // keep columns come last, in Job.Keep order
	for i, f := range r.schema.Fields() {
		fb := b.Field(i)
		switch f.Name {
		case jobs.ColID:
			fb.(*array.StringBuilder).Append(it.doc.ID)
		case jobs.ColFile:
			fb.(*array.StringBuilder).Append(it.doc.File)
		case jobs.ColRow:
			fb.(*array.Int64Builder).Append(it.doc.Row)
		case jobs.ColTokens:
			fb.(*array.Int32Builder).Append(int32(len(it.tokens)))
		case jobs.ColTruncated:
			fb.(*array.BooleanBuilder).Append(it.truncated)
		case jobs.ColLabel:
			fb.(*array.StringBuilder).Append(it.res.label)
		case jobs.ColScore:
			fb.(*array.Float32Builder).Append(it.res.score)
		case jobs.ColProbs:
			appendList(fb.(*array.ListBuilder), it.res.probs)
		case jobs.ColLabels:
			lb := fb.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).AppendValues(it.res.labels, nil)
		case jobs.ColValue:
			fb.(*array.Float32Builder).Append(it.res.value)
		case jobs.ColMeanLogprob:
			fb.(*array.Float64Builder).Append(it.res.meanLogp)
		case jobs.ColPerplexity:
			fb.(*array.Float64Builder).Append(it.res.perplexity)
		case jobs.ColBitsPerByte:
			fb.(*array.Float64Builder).Append(it.res.bitsPerB)
		case jobs.ColAnswer:
			fb.(*array.StringBuilder).Append(it.res.answer)
		case jobs.ColAnswerLogp:
			fb.(*array.Float32Builder).Append(it.res.answerLogp)
		case jobs.ColAbstained:
			fb.(*array.BooleanBuilder).Append(it.res.abstained)
		case jobs.ColAnswerStart, jobs.ColAnswerEnd:
			ib := fb.(*array.Int64Builder)
			switch {
			case !it.res.spanOK:
				ib.AppendNull()
			case f.Name == jobs.ColAnswerStart:
				ib.Append(it.res.answerStart)
			default:
				ib.Append(it.res.answerEnd)
			}
		case jobs.ColEmbedding:
			appendList(fb.(*array.ListBuilder), it.res.embedding)
		default:
			k := i - firstKeep
			sb := fb.(*array.StringBuilder)
			if k >= 0 && k < len(it.doc.Keep) && it.doc.Keep[k].Valid {
				sb.Append(it.doc.Keep[k].S)
			} else {
				sb.AppendNull()
			}
		}
	}
}

func appendList(lb *array.ListBuilder, v []float32) {
	lb.Append(true)
	lb.ValueBuilder().(*array.Float32Builder).AppendValues(v, nil)
}

// rejectRow is one line of a rejects file.
type rejectRow struct {
	File   string `json:"file"`
	Row    int64  `json:"row"` // -1: the file as a whole
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
}

// rejectsFile streams a part's rejects to a temporary file and renames it
// into place with the part; with no rejects, any old file is removed.
type rejectsFile struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	// remote: the rejects are uploaded to object storage as they come,
	// and appear with Commit (no temporary file, no rename).
	remote bool
	obj    *blobstore.Writer
}

func (j *rejectsFile) add(row rejectRow) error {
	if j.remote && j.obj == nil {
		obj, err := blobstore.Create(context.Background(), j.path, false)
		if err != nil {
			return fmt.Errorf("rejects file: %w", err)
		}
		j.obj, j.bw = obj, bufio.NewWriter(obj)
	}
	if !j.remote && j.f == nil {
		f, err := os.CreateTemp(filepath.Dir(j.path), "."+filepath.Base(j.path)+".tmp-*")
		if err != nil {
			return fmt.Errorf("rejects file: %w", err)
		}
		j.f, j.bw = f, bufio.NewWriter(f)
	}
	b, _ := json.Marshal(row)
	j.bw.Write(b)
	return j.bw.WriteByte('\n')
}

func (j *rejectsFile) close() error {
	if j.remote {
		if j.obj == nil {
			return blobstore.Delete(context.Background(), j.path)
		}
		err := j.bw.Flush()
		if err == nil {
			err = j.obj.Commit()
		} else {
			j.obj.Abort()
		}
		j.obj = nil
		if err != nil {
			return fmt.Errorf("rejects file %s: %w", j.path, err)
		}
		return nil
	}
	if j.f == nil {
		if err := os.Remove(j.path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	tmp := j.f.Name()
	err := j.bw.Flush()
	if err == nil {
		err = j.f.Sync()
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rejects file %s: %w", j.path, err)
	}
	syncDir(filepath.Dir(j.path))
	return nil
}

func (j *rejectsFile) abort() {
	if j.obj != nil {
		j.obj.Abort()
		j.obj = nil
	}
	if j.f != nil {
		j.f.Close()
		os.Remove(j.f.Name())
		j.f = nil
	}
}
