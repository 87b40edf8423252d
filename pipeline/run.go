package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/jobs"
)

// Config is everything one run needs.
type Config struct {
	Job       *jobs.Job // normalized
	Shards    []Shard   // every input shard, sorted; Run assigns this rank's share
	Source    Source
	Tokenizer Tokenizer
	Model     Model
	ModelPath string
	ModelID   string
	Create    CreateFunc

	// Out is a directory of parts (one per shard), or a file (.parquet,
	// .arrow, .jsonl) the parts are merged into at the end.
	Out    string
	Format string // parts format in directory mode: parquet (default), arrow, jsonl

	Placement  jobs.Placement
	Workers    int  // engine workers (default: usable cores)
	TokWorkers int  // tokenizer goroutines (default: max(2, workers/2))
	PackTok    int  // tokens per engine pack (default 1024: four 256-token blocks)
	BatchRows  int  // rows per output record batch (default 1024)
	Pin        bool // pin each engine worker to its own core
	Force      bool // overwrite an output dir written by another job/model
	// SkipBadFiles accepts unreadable input files: such a shard is marked
	// done with the rows read before the error (and a rejects line saying
	// why) instead of being left for the next run to retry.
	SkipBadFiles bool

	// Stdout receives the results when Out is "-" or /dev/stdout (default
	// os.Stdout): a field so tests can capture it.
	Stdout io.Writer

	Log      *slog.Logger
	Progress io.Writer     // a terminal: draw a progress bar there; nil: log lines
	LogEvery time.Duration // period of progress log lines (default 10s)
}

// item is one document travelling through the stages.
type item struct {
	shard     *shardRun
	seq       int64
	doc       Doc
	tokens    []int32 // <bos> + document tokens (truncated)
	truncated bool
	seqs      [][]int32
	promptLen int
	reject    string // non-empty: goes to rejects with this reason
	textLen   int    // bytes of text (the text itself is dropped after tokenizing)
	// scoredBytes are the bytes of text the kept tokens cover (score: the
	// denominator of bits_per_byte): textLen, or less when truncated.
	scoredBytes int
	// spanText and spanOffs are the kept part of the text and its tokens'
	// byte offsets (extract with a span head), until the answer is cut.
	spanText string
	spanOffs [][2]int
	// windows are the document-token ranges generative extraction prompts
	// with (one per sequence), and windowTexts their text for --extractive
	// decoding by text, until decoded.
	windows     [][2]int
	windowTexts []string
	res         result
}

func (it *item) cost() int {
	n := 0
	for _, s := range it.seqs {
		n += len(s)
	}
	return n
}

// event is what the collector receives: a shard start or end, or finished
// items (a pack from an engine worker, or rejects), in any shard order.
type event struct {
	start *shardRun
	end   *shardRun
	items []*item
}

// Documents travel between the reader, the tokenizer pool and the packer in
// batches of up to batchDocs documents (or batchBytes of text): one channel
// hand-off, and at most one goroutine wake-up, per batch instead of per
// document, so the plumbing rarely takes a core away from an engine worker.
const (
	batchDocs  = 16
	batchBytes = 256 << 10
)

// Run executes the job. It returns the summary and, on failure, an error;
// an interrupted run (ctx cancelled) returns a summary with Interrupted set
// and no error.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	out, err := resolveOutput(cfg.Out, cfg.Format, cfg.Placement)
	if err != nil {
		return nil, err
	}
	tk, labels, err := newTask(cfg.Job, cfg.Model, cfg.Tokenizer)
	if err != nil {
		return nil, err
	}
	if w, ok := tk.(warner); ok {
		for _, msg := range w.warnings() {
			cfg.Log.Warn(msg)
		}
	}
	head := ""
	if h, ok := tk.(interface{ headKind() string }); ok {
		head = h.headKind()
	}
	schema := jobs.SchemaFor(cfg.Job, labels, head)
	manifest := jobs.Manifest{Job: cfg.Job, ModelPath: cfg.ModelPath, ModelID: cfg.ModelID}
	for _, f := range schema.Fields() {
		manifest.Columns = append(manifest.Columns, f.Name+":"+f.Type.String())
	}
	if out.merge == stdoutName {
		// Results to stdout cannot be resumed (what was written is gone
		// with the pipe), so the parts are staged in a private temporary
		// folder, removed whatever happens.
		tmp, err := os.MkdirTemp("", "onecore-stdout-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		out.dir = tmp
	} else if out.merge != "" {
		if err := checkOutputFile(out, manifest, cfg.Force); err != nil {
			return nil, err
		}
	}
	od := jobs.OutDir{Path: out.dir, Format: out.format}
	if err := od.Prepare(manifest, cfg.Force); err != nil {
		return nil, err
	}

	cfg.Shards = excludeOutput(cfg.Shards, out, cfg.Log)
	if len(cfg.Shards) == 0 {
		return nil, fmt.Errorf("no input left: every input file is inside the output %s", cfg.Out)
	}
	cfg.Shards = resolveKeys(cfg.Shards, od)
	r := &runner{cfg: cfg, task: tk, schema: schema, od: od, out: out, sum: newSummary(cfg)}
	defer r.unlockAll()
	if err := r.plan(); err != nil {
		return nil, err
	}
	start := time.Now()
	cpu0, cpuOK := processCPU()
	stopProgress := r.startProgress()
	err = r.execute(ctx)
	// A single output file needs every shard: shards another live run was
	// writing are waited for (that run may finish them, or stop, leaving
	// them to us), so of two overlapping runs one always assembles.
	// With leases (object storage) workers are elastic: each stays until
	// every shard is done, so a shard whose holder dies is taken over when
	// its lease expires instead of waiting for a resubmission.
	for (out.merge != "" || r.leases()) && err == nil && ctx.Err() == nil && r.st.locked.Load() > 0 && len(r.failed) == 0 {
		pending, werr := r.waitForOthers(ctx)
		if werr != nil || len(pending) == 0 {
			err = werr
			break
		}
		r.work = pending
		err = r.execute(ctx)
	}
	stopProgress()
	if cpu1, ok := processCPU(); ok && cpuOK {
		r.st.processCPU = cpu1 - cpu0
	}
	r.sum.finish(time.Since(start), &r.st)
	r.sum.Failed = r.failed
	if blobstore.Remote(od.Path) || anyRemote(cfg.Shards) {
		rc := blobstore.Retries()
		r.sum.Retries = &rc
	}
	if r.leases() {
		r.sum.Claim, r.sum.Worker = "lease", jobs.WorkerID()
		r.sum.TakenOver, r.sum.LeasesLost = r.takenOver, r.leasesLost
		rec := jobs.WorkerRecord{Worker: jobs.WorkerID(), Started: start.UTC().Format(time.RFC3339Nano), Finished: time.Now().UTC().Format(time.RFC3339Nano),
			Shards: r.marked, TakenOver: r.takenOver, SkippedBusy: r.sum.ShardsLocked, Retries: r.sum.Retries.Total(), Interrupted: ctx.Err() != nil}
		if werr := od.WriteWorkerRecord(rec); werr != nil {
			cfg.Log.Warn("could not write the worker record", "err", werr)
		}
	}
	r.sum.ShardsFailed = len(r.failed)
	if err != nil {
		return r.sum, err
	}
	if r.sum.Rejected > 0 || r.sum.BadFiles > 0 {
		r.sum.Rejects = od.RejectsDirPath() + "/"
	}
	if ctx.Err() != nil {
		r.sum.Interrupted = true
		return r.sum, nil
	}
	if out.merge != "" {
		if r.sum.ShardsFailed > 0 {
			return r.sum, nil // not assembled: the caller reports the failed shards
		}
		if r.sum.ShardsLocked > 0 || r.sum.ShardsDone+r.sum.ShardsAlreadyDone+r.sum.ShardsBeyondLimit != r.sum.ShardsAssigned {
			return r.sum, fmt.Errorf("%d shard(s) are being written by another running onecore; %s not assembled (rerun when it has finished)", r.sum.ShardsLocked, out.merge)
		}
		if err := r.merge(); err != nil {
			return r.sum, err
		}
	}
	return r.sum, nil
}

// excludeOutput drops input files that are this run's own output: the parts
// folder (or the staging folder of a single output file) and the output
// file itself with its record and rejects beside it, for an output placed inside the input tree, which would
// otherwise be read back as input on the next run.
func excludeOutput(shards []Shard, out output, log *slog.Logger) []Shard {
	if blobstore.Remote(out.dir) {
		// Object keys have no links or relative forms: compare the paths.
		mine := map[string]bool{}
		if out.merge != "" {
			for _, suffix := range []string{"", OutputRecordSuffix, ".rejects.jsonl"} {
				mine[out.merge+suffix] = true
			}
		}
		kept := shards[:0:0]
		for _, sh := range shards {
			if !strings.HasPrefix(sh.Path, out.dir+"/") && !mine[sh.Path] {
				kept = append(kept, sh)
			}
		}
		if d := len(shards) - len(kept); d > 0 {
			log.Info("input files inside the output are not read", "files", d, "out", out.dir)
		}
		return kept
	}
	dir := canonicalPath(out.dir)
	// the file, and what is written beside it: its record and rejects
	files := map[string]bool{}
	if out.merge != "" && out.merge != stdoutName {
		for _, suffix := range []string{"", OutputRecordSuffix, ".rejects.jsonl"} {
			files[canonicalPath(out.merge+suffix)] = true
		}
	}
	kept := shards[:0:0]
	dropped := 0
	for _, sh := range shards {
		p := canonicalPath(sh.Path)
		if files[p] || (out.dir != "" && p == dir) || strings.HasPrefix(p, dir+string(filepath.Separator)) {
			dropped++
			continue
		}
		kept = append(kept, sh)
	}
	if dropped > 0 {
		log.Info("input files inside the output are not read", "files", dropped, "out", out.dir)
	}
	return kept
}

// canonicalPath is path made absolute with symbolic links resolved (as far
// as they exist), for comparing locations.
func canonicalPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	// the path may not exist yet: resolve its parent
	if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(r, filepath.Base(abs))
	}
	return abs
}

// resolveKeys makes shard keys unique while keeping them stable when input
// files are added: of the shards sharing a relative-path key, the one an
// earlier run marked done under that key (its marker records the file)
// keeps it, else the one with the smallest path; the others are keyed by
// their full path. So adding b/x.jsonl beside an existing a/x.jsonl adds
// one part and leaves a's part and marker as they are.
func resolveKeys(shards []Shard, od jobs.OutDir) []Shard {
	groups := map[string][]int{}
	for i, sh := range shards {
		groups[sh.Key] = append(groups[sh.Key], i)
	}
	for key, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		keeper := idx[0]
		for _, i := range idx[1:] {
			if shards[i].Path < shards[keeper].Path {
				keeper = i
			}
		}
		if m := od.Marked(od.NameFor(key)); m != nil && m.Path != "" {
			for _, i := range idx {
				if canonicalPath(shards[i].Path) == canonicalPath(m.Path) {
					keeper = i
				}
			}
		}
		for _, i := range idx {
			if i != keeper {
				shards[i].Key = shards[i].Path
			}
		}
	}
	return shards
}

func (c *Config) defaults() error {
	if c.Job == nil || c.Source == nil || c.Tokenizer == nil || c.Model == nil || c.Create == nil {
		return errors.New("pipeline: incomplete config")
	}
	if c.Workers <= 0 {
		c.Workers = len(engine.AllowedCPUs())
	}
	if c.TokWorkers <= 0 {
		c.TokWorkers = max(2, c.Workers/2)
	}
	if c.PackTok <= 0 {
		c.PackTok = 1024
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 1024
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.LogEvery <= 0 {
		c.LogEvery = 10 * time.Second
	}
	if c.Placement.World == 0 {
		c.Placement = jobs.Placement{Rank: 0, World: 1, From: "default"}
	}
	return nil
}

// output is where results go.
type output struct {
	dir    string // parts directory
	format string
	merge  string // final merged file ("" in directory mode)
}

// FormatOf maps an output file name to its format ("" when it is not a
// results file name, i.e. a directory).
func FormatOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".parquet":
		return "parquet"
	case ".arrow", ".ipc", ".feather":
		return "arrow"
	case ".jsonl", ".ndjson":
		return "jsonl"
	}
	if n := strings.ToLower(name); strings.HasSuffix(n, ".jsonl.zst") || strings.HasSuffix(n, ".ndjson.zst") {
		return "jsonl.zst"
	}
	return ""
}

// StagingSuffix names the parts directory of a merged output file.
const StagingSuffix = ".onecore-parts"

// stdoutName is output.merge for results written to standard output.
const stdoutName = "-"

// IsStdout reports whether --out names standard output ("-" or
// /dev/stdout).
func IsStdout(out string) bool { return out == "-" || out == "/dev/stdout" }

// CheckOutput validates --out and --format the way Run will, without
// touching the file system beyond a stat: the command calls it before
// loading the model, so a bad flag is a usage error reported at once.
func CheckOutput(out, format string, p jobs.Placement) error {
	_, err := resolveOutput(out, format, p)
	return err
}

func resolveOutput(out, format string, p jobs.Placement) (output, error) {
	if out == "" {
		return output{}, errors.New("no output: pass --out DIR/ or --out FILE.parquet")
	}
	if IsStdout(out) {
		// Only formats that can be written front to back go to a pipe:
		// Parquet and Arrow files end with a footer written last.
		switch format {
		case "":
			format = "jsonl"
		case "jsonl", "jsonl.zst":
		default:
			return output{}, fmt.Errorf("--out %s: --format %q cannot be streamed; want jsonl or jsonl.zst", out, format)
		}
		if p.World > 1 {
			return output{}, fmt.Errorf("--out %s with rank %d of %d: give a directory (each rank writes its own parts)", out, p.Rank, p.World)
		}
		return output{format: format, merge: stdoutName}, nil
	}
	if blobstore.Remote(out) {
		if l, err := blobstore.Parse(out); err == nil && l.Key == "" {
			return output{}, fmt.Errorf("--out %s: give a prefix inside the bucket (s3://%s/PREFIX/): the bucket root would mix the output with everything else in it", out, l.Bucket)
		}
		if f := FormatOf(out); f != "" && !strings.HasSuffix(out, "/") {
			// one object: the parts are staged under OBJECT.onecore-parts/
			// (leases, markers, resume as for a prefix) and assembled into
			// it by one upload once every shard is done
			if format != "" && format != f {
				return output{}, fmt.Errorf("--format %s contradicts the output name %s", format, out)
			}
			if p.World > 1 {
				return output{}, fmt.Errorf("--out %s is a single object but this is rank %d of %d: give a prefix (end it with /), or drop --rank/--world (workers share the shards by leases)", out, p.Rank, p.World)
			}
			return output{dir: out + StagingSuffix, format: f, merge: out}, nil
		}
		// an object-storage prefix is a directory of parts: the same format rules below
	} else if f := FormatOf(out); f != "" && !strings.HasSuffix(out, "/") {
		if st, err := os.Stat(out); err == nil && st.IsDir() {
			return output{dir: out, format: f}, nil
		}
		if format != "" && format != f {
			return output{}, fmt.Errorf("--format %s contradicts the output name %s", format, out)
		}
		if p.World > 1 {
			return output{}, fmt.Errorf("--out %s is a single file but this is rank %d of %d: give a directory (each rank writes its own parts)", out, p.Rank, p.World)
		}
		return output{dir: out + StagingSuffix, format: f, merge: out}, nil
	}
	switch format {
	case "":
		format = "parquet"
	case "parquet", "arrow", "jsonl", "jsonl.zst":
	default:
		return output{}, fmt.Errorf("--format %q: want parquet, arrow, jsonl or jsonl.zst", format)
	}
	return output{dir: strings.TrimSuffix(out, "/"), format: format}, nil
}

// readingShard is the shard the reader is in, for progress.
type readingShard struct {
	f    Fractioner
	size int64
}

// stats are the run's live counters (atomics: read by the progress loop).
type stats struct {
	rowsIn, rowsOut, rejected, tokens atomic.Int64
	files, shardsDone                 atomic.Int64
	readBytes                         atomic.Int64                 // input bytes of shards read to the end
	reading                           atomic.Pointer[readingShard] // the shard being read, when its reader knows its fraction
	progressMax                       atomic.Int64                 // the largest estimate reported (progress never goes back)
	committed                         committedTotals              // rows of marked shards: the summary's counts
	doneBytes, doneText               atomic.Int64                 // finished shards: input bytes, text bytes
	textSeen                          atomic.Int64                 // text bytes collected
	locked, doneMeanwhile             atomic.Int64                 // shards skipped at claim time
	busy                              [nStages]atomic.Int64        // nanoseconds
	engineCPU                         atomic.Int64                 // engine workers' thread CPU time, nanoseconds
	processCPU                        time.Duration                // the whole process during execute (0: unknown)
}

const (
	stRead = iota
	stTokenize
	stPack
	stEngine
	stWrite
	nStages
)

var stageNames = [nStages]string{"read", "tokenize", "pack", "engine", "write"}

func (s *stats) addBusy(stage int, since time.Time) { s.busy[stage].Add(int64(time.Since(since))) }

type runner struct {
	cfg    Config
	task   task
	schema *arrow.Schema
	od     jobs.OutDir
	out    output
	sum    *Summary
	st     stats
	work   []*shardRun // unfinished shards of this rank
	total  int64       // input bytes of work
	prevMu sync.Mutex
	failMu sync.Mutex
	failed []FailedShard // shards whose file failed, left unmarked for a retry
	// keepWarned holds the --keep fields already warned about (collector
	// goroutine only).
	keepWarned map[string]bool
	// marked, takenOver and leasesLost are the who-did-what of a lease
	// run (collector goroutine).
	marked     []string
	takenOver  []string
	leasesLost int
	// beyondLimit holds the part names of shards not read because the
	// job's limit was reached first (reader goroutine, then merge).
	beyondLimit map[string]bool
}

// plan picks this rank's shards and skips finished ones. Locks are taken
// one shard at a time, just before reading it (claim): a run holds few
// descriptors however many shards there are, and two overlapping runs
// share the remaining shards instead of one skipping everything.
func (r *runner) plan() error {
	idx := jobs.Assign(len(r.cfg.Shards), r.cfg.Placement)
	snap, err := r.od.Snapshot()
	if err != nil {
		return err
	}
	seen := map[string]string{}
	var changed []string
	for _, i := range idx {
		sh := r.cfg.Shards[i]
		name := r.od.NameFor(sh.Key)
		if prev, ok := seen[name]; ok {
			return fmt.Errorf("shards %s and %s map to the same part name", prev, sh.Key)
		}
		seen[name] = sh.Key
		r.sum.ShardsAssigned++
		if snap.MaybeDone(r.od, name) { // else no marker in the listing: not done
			m, done, err := r.od.Done(name)
			if err != nil {
				return err
			}
			if done {
				if c := shardChange(r.od, name, &m, sh); c != "" {
					changed = append(changed, c)
				}
				r.sum.ShardsAlreadyDone++
				r.sum.Previous.add(m)
				continue
			}
		}
		r.work = append(r.work, &shardRun{Shard: sh, name: name})
		r.total += sh.Size
	}
	if len(changed) > 0 {
		return changedShardsError(r.out.dir, changed)
	}
	r.sum.ShardsToDo = len(r.work)
	return nil
}

// shardChange describes how the finished shard sh (marker m) changed since
// it was read, "" when it did not. A shard now read from another path than
// the marker's (the input copied or moved: a copy has new times) is
// compared by size only.
func shardChange(od jobs.OutDir, name string, m *jobs.Marker, sh Shard) string {
	modNS := sh.ModNS
	if m.Path != sh.Path {
		modNS = 0
	}
	how := m.Input.Changed(sh.Size, modNS)
	if how == "" {
		return ""
	}
	return fmt.Sprintf("%s (%s; marker %s)", sh.Path, how, od.MarkerPath(name))
}

// changedShardsError refuses to resume an output some of whose finished
// shards have changed since: their results there are of the old content,
// and carrying on would finish the job on a mix of two versions of the
// input, with nothing in the output to say which rows are which.
func changedShardsError(out string, changed []string) error {
	list := changed
	if len(list) > 5 {
		list = append(list[:5:5], fmt.Sprintf("and %d more", len(changed)-5))
	}
	return fmt.Errorf("%d input shard(s) changed since %s recorded their results: %s; its results for them are of the old content. "+
		"Remove those markers to redo just those shards, or write the job to another --out",
		len(changed), out, strings.Join(list, "; "))
}

// waitForOthers waits until no other process holds the lock of a shard
// this run skipped as locked, and returns those of them still unfinished
// (the other run stopped before marking them), for this run to do.
func (r *runner) waitForOthers(ctx context.Context) ([]*shardRun, error) {
	var pending []*shardRun
	for _, sr := range r.work {
		if !sr.lockedByOther {
			continue
		}
		r.cfg.Log.Info("waiting for another onecore to finish a shard of the same output", "shard", sr.Key)
		var held *jobs.PartLock // a lease taken over is kept for the rerun of the shard
		for {
			lk, err := r.od.Lock(sr.name)
			if err == nil {
				if r.leases() {
					held = lk
				} else {
					lk.Unlock()
				}
				break
			}
			if errors.Is(err, os.ErrNotExist) && assembledByOther(r.od.Path, r.out.merge) {
				// the other run finished every shard and assembled the
				// file meanwhile (its markers are gone with the folder)
				r.st.doneMeanwhile.Add(r.st.locked.Swap(0))
				return nil, nil
			}
			if !errors.Is(err, jobs.ErrLocked) {
				return nil, err
			}
			poll := 200 * time.Millisecond
			if r.leases() {
				poll = time.Second // each try is a request to the store
			}
			select {
			case <-ctx.Done():
				return nil, nil
			case <-time.After(poll):
			}
		}
		r.st.locked.Add(-1)
		if r.leases() && r.out.merge != "" && assembledByOther(r.od.Path, r.out.merge) {
			// the other worker assembled the object and cleaned the
			// staging prefix meanwhile: nothing is left to do
			held.Unlock()
			r.st.doneMeanwhile.Add(r.st.locked.Swap(0) + 1)
			return nil, nil
		}
		if m, done, err := r.od.Done(sr.name); err != nil {
			held.Unlock()
			return nil, err
		} else if done {
			held.Unlock()
			r.st.doneMeanwhile.Add(1)
			r.prevMu.Lock()
			r.sum.Previous.add(m)
			r.prevMu.Unlock()
			continue
		}
		pending = append(pending, &shardRun{Shard: sr.Shard, name: sr.name, lock: held})
	}
	return pending, nil
}

// removeStale deletes temporaries a killed run left for part name (we hold
// its lock, so no live process is writing them).
func (r *runner) removeStale(name string) {
	if blobstore.Remote(r.od.Path) {
		return // uploads never completed are invisible: nothing to clean
	}
	for _, dir := range []string{r.od.Path, filepath.Join(r.od.Path, jobs.RejectsDir), filepath.Join(r.od.Path, jobs.DoneDir)} {
		matches, _ := filepath.Glob(filepath.Join(dir, "."+name+"*"))
		for _, m := range matches {
			os.Remove(m)
		}
	}
}

func (r *runner) unlockAll() {
	for _, sr := range r.work {
		sr.lock.Unlock()
		sr.lock = nil
	}
}

// claim takes the shard's part lock; false when another live process holds
// it or finished the shard meanwhile (re-checked under the lock).
func (r *runner) claim(sr *shardRun) (bool, error) {
	lk, err := sr.lock, error(nil) // held already: a lease waitForOthers took over
	sr.lock = nil
	if lk == nil {
		lk, err = r.od.Lock(sr.name)
	}
	if errors.Is(err, jobs.ErrLocked) {
		r.st.locked.Add(1)
		sr.lockedByOther = true
		r.cfg.Log.Warn("shard skipped: another onecore is writing its part", "shard", sr.Key)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if m, done, _ := r.od.Done(sr.name); done {
		lk.Unlock()
		r.st.doneMeanwhile.Add(1)
		r.prevMu.Lock()
		r.sum.Previous.add(m)
		r.prevMu.Unlock()
		return false, nil
	}
	r.removeStale(sr.name)
	sr.lock = lk
	if from := lk.TakenFrom(); from != "" {
		r.cfg.Log.Warn("took over the expired lease of a worker that stopped", "shard", sr.Key, "from", from)
		sr.takenFrom = from
	}
	return true, nil
}

// leases reports shards claimed by lease objects (object-storage output)
// rather than flock.
func (r *runner) leases() bool { return blobstore.Remote(r.od.Path) }

// anyRemote reports shards read from object storage.
func anyRemote(shards []Shard) bool {
	for _, sh := range shards {
		if blobstore.Remote(sh.Path) {
			return true
		}
	}
	return false
}

// execute runs the stages over r.work.
func (r *runner) execute(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Internal failures cancel with a cause; the outer ctx is the interrupt.
	fail := func(err error) { cancel(err) }
	failure := func() error {
		if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}

	w := r.cfg.Workers
	tokCh := make(chan []*item, r.cfg.TokWorkers)
	packIn := make(chan []*item, r.cfg.TokWorkers)
	engCh := make(chan []*item, 2*w)
	collCh := make(chan event, 4*w)

	var producers sync.WaitGroup // everything that sends to collCh
	producers.Add(1)
	go func() { // reader
		defer producers.Done()
		defer close(tokCh)
		stage(ctx, "read", func() { r.read(ctx, tokCh, collCh, fail) })
	}()

	var tokWG sync.WaitGroup
	for range r.cfg.TokWorkers {
		tokWG.Add(1)
		producers.Add(1)
		go func() {
			defer tokWG.Done()
			defer producers.Done()
			stage(ctx, "tokenize", func() { r.tokenize(tokCh, packIn, collCh) })
		}()
	}
	go func() { tokWG.Wait(); close(packIn) }()

	go func() { // packer
		defer close(engCh)
		stage(ctx, "pack", func() { r.pack(packIn, engCh) })
	}()

	ready := make(chan error, w)
	for i := range w {
		producers.Add(1)
		go func() {
			defer producers.Done()
			stage(ctx, "engine", func() { r.engine(i, engCh, collCh, ready, fail) })
		}()
	}
	for range w {
		if err := <-ready; err != nil {
			fail(err)
		}
	}
	go func() { producers.Wait(); close(collCh) }()

	stage(ctx, "collect", func() {
		if err := r.collect(collCh, fail); err != nil {
			fail(err)
		}
	})
	return failure()
}

// stage runs f with the pprof label stage=name, so a CPU profile of a run
// splits by stage (go tool pprof -tags).
func stage(ctx context.Context, name string, f func()) {
	pprof.Do(ctx, pprof.Labels("stage", name), func(context.Context) { f() })
}

// read streams the work shards, one after another, into the tokenizer pool
// (in batches).
func (r *runner) read(ctx context.Context, tokCh chan<- []*item, collCh chan<- event, fail func(error)) {
	opts := r.cfg.readOptions()
	opts.Keep = r.keepFields()
	var batch []*item
	text := 0
	send := func() {
		if len(batch) > 0 {
			tokCh <- batch
			batch, text = nil, 0
		}
	}
	// A limited job reads the first Limit rows in shard order. Shards an
	// earlier run of the same job marked done come first in that order (they
	// are a prefix unless runs overlapped), so their rows count: a rerun
	// after an interrupt reads exactly the rows the first run would have.
	limited, left := r.cfg.Job.Limit > 0, int64(0)
	if limited {
		left = max(0, r.cfg.Job.Limit-r.sum.Previous.RowsIn)
	}
	for i, sr := range r.work {
		if ctx.Err() != nil {
			return
		}
		if limited && left == 0 {
			r.beyondLimit = map[string]bool{}
			for _, rest := range r.work[i:] {
				r.beyondLimit[rest.name] = true
			}
			r.sum.ShardsBeyondLimit = len(r.work) - i
			r.cfg.Log.Info("--limit reached: the remaining shards are not read", "limit", r.cfg.Job.Limit, "shards_not_read", len(r.work)-i)
			return
		}
		if ok, err := r.claim(sr); err != nil {
			fail(err)
			return
		} else if !ok {
			continue
		}
		collCh <- event{start: sr}
		t0 := time.Now()
		rd, err := r.cfg.Source.Open(sr.Shard, opts)
		r.st.files.Add(1)
		if f, ok := rd.(Fractioner); ok && err == nil {
			r.st.reading.Store(&readingShard{f: f, size: sr.Size})
		}
		var seq int64
		if err != nil {
			sr.fileErr = err
		} else {
			for !limited || seq < left { // seq: rows read of this shard (documents and rejects)
				if ctx.Err() != nil {
					sr.aborted = true
					break
				}
				doc, err := rd.Next()
				if err == io.EOF {
					break
				}
				var rowErr *RowError
				if errors.As(err, &rowErr) {
					it := &item{shard: sr, seq: seq, doc: Doc{File: rowErr.File, Row: rowErr.Row, ID: rowErr.ID}, reject: rowErr.Reason}
					seq++
					r.st.addBusy(stRead, t0)
					collCh <- event{items: []*item{it}}
					t0 = time.Now()
					continue
				}
				if err != nil {
					sr.fileErr = err
					break
				}
				batch = append(batch, &item{shard: sr, seq: seq, doc: doc})
				text += len(doc.Text)
				seq++
				crashPoint("read")
				if len(batch) >= batchDocs || text >= batchBytes {
					r.st.addBusy(stRead, t0)
					send()
					t0 = time.Now()
				}
			}
			rd.Close()
		}
		r.st.reading.Store(nil)
		r.st.readBytes.Add(sr.Size) // read to the end, or given up on: either way consumed
		r.st.addBusy(stRead, t0)
		send() // the shard's last documents go now, not with the next shard's
		sr.total = seq
		left -= seq
		collCh <- event{end: sr}
	}
}

// keepFields are the reader's passthrough fields: the job's input fields
// (not their output columns: --keep label:gold reads label), then the
// question field (read but only output when also kept).
func (r *runner) keepFields() []string {
	k := r.cfg.Job.KeepFields()
	if q := r.cfg.Job.QuestionField; q != "" && r.cfg.Job.Task == jobs.TaskExtract {
		k = append(k, q)
	}
	return k
}

// MaxBytesPerToken bounds how much text is tokenized for a document: text
// beyond max_tokens × MaxBytesPerToken bytes is never looked at, so a 20 MB
// document costs no more than a long one.
const MaxBytesPerToken = 32

// tokenize encodes batches of documents, applies the truncation policy and
// prepares the task's engine inputs.
func (r *runner) tokenize(in <-chan []*item, out chan<- []*item, collCh chan<- event) {
	for batch := range in {
		t0 := time.Now()
		ok, rejected := batch[:0], []*item(nil)
		for _, it := range batch {
			r.tokenizeDoc(it)
			it.doc.Text = "" // the text is not needed any more: keep memory flat
			if it.reject != "" {
				rejected = append(rejected, it)
			} else {
				ok = append(ok, it)
			}
		}
		r.st.addBusy(stTokenize, t0)
		if len(rejected) > 0 {
			collCh <- event{items: rejected}
		}
		if len(ok) > 0 {
			out <- ok
		}
	}
}

// tokenizeDoc sets it.tokens (or it.reject) and the task's engine inputs.
func (r *runner) tokenizeDoc(it *item) {
	job := r.cfg.Job
	text := it.doc.Text
	it.textLen = len(text)
	cut := false
	if limit := job.MaxTokens * MaxBytesPerToken; len(text) > limit {
		text, cut = cutUTF8(text, limit), true
	}
	ids := r.cfg.Tokenizer.Encode(text)
	switch {
	case len(ids) == 0:
		it.reject = "empty text (no tokens)"
		return
	case len(ids) > job.MaxTokens-1 || cut:
		if job.Truncate == jobs.TruncateReject {
			it.reject = fmt.Sprintf("document longer than max_tokens=%d (truncate: reject)", job.MaxTokens)
			return
		}
		if len(ids) > job.MaxTokens-1 {
			ids = ids[:job.MaxTokens-1]
		}
		it.truncated = true
	}
	it.tokens = append(append(make([]int32, 0, len(ids)+1), BOS), ids...)
	if job.Task == jobs.TaskScore {
		it.scoredBytes = len(it.doc.Text)
		if it.truncated {
			it.scoredBytes = coveredBytes(r.cfg.Tokenizer, text, ids)
		}
	}
	if err := r.task.prepare(it, r.cfg.Tokenizer); err != nil {
		it.reject = err.Error()
	}
}

// coveredBytes is how many leading bytes of text the tokens ids (a prefix
// of text's encoding) stand for, so that bits per byte of a truncated
// document divide the kept tokens' information by the text they cover, not
// by the whole document. Decoding gives it directly when it reproduces a
// prefix of the text (byte-level BPE); otherwise (normalizers, decoders
// that drop spaces) it is found by bisection over prefixes of whole
// characters whose encoding starts with ids: exact to within a character
// or so, which is noise for a per-document rate.
func coveredBytes(tok Tokenizer, text string, ids []int32) int {
	if d := tok.Decode(ids); d != "" && strings.HasPrefix(text, d) {
		return len(d)
	}
	lo, hi := 0, len(text) // Encode(text[:hi]) starts with ids
	for hi-lo > 1 {
		mid := len(cutUTF8(text, (lo+hi)/2))
		if mid <= lo {
			// no character boundary strictly between lo and hi
			break
		}
		if enc := tok.Encode(text[:mid]); len(enc) >= len(ids) && slices.Equal(enc[:len(ids)], ids) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// pack groups documents into packs of about PackTok tokens (several
// 256-token blocks, so the engine's GEMMs have M ≥ 256).
func (r *runner) pack(in <-chan []*item, out chan<- []*item) {
	var cur []*item
	n := 0
	for batch := range in {
		t0 := time.Now()
		for _, it := range batch {
			cur = append(cur, it)
			n += it.cost()
			if n >= r.cfg.PackTok {
				r.st.addBusy(stPack, t0)
				out <- cur
				cur, n = nil, 0
				t0 = time.Now()
			}
		}
		r.st.addBusy(stPack, t0)
	}
	if len(cur) > 0 {
		out <- cur
	}
}

// engine is one worker: an engine instance on its own locked, pinned thread.
func (r *runner) engine(i int, in <-chan []*item, collCh chan<- event, ready chan<- error, fail func(error)) {
	if r.cfg.Pin {
		// The i-th CPU this process may use, so each worker keeps its own
		// core. The goroutine stays locked to its thread until it exits,
		// so the pinned thread ends with it: unlocked, it would go back to
		// the runtime's pool still pinned and later run any goroutine
		// (another run's worker, the tokenizer) on this one core.
		cpus := engine.AllowedCPUs()
		if err := engine.PinThread(cpus[i%len(cpus)]); err != nil {
			r.cfg.Log.Warn("could not pin engine worker", "worker", i, "err", err)
		}
	} else {
		// Locked all the same: ThreadCPU differences need one thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	w, err := r.cfg.Model.NewWorker()
	ready <- err
	if err != nil {
		for range in { // drain so upstream never blocks
		}
		return
	}
	defer w.Close()
	broken := false
	for pack := range in {
		if broken {
			continue
		}
		t0, c0 := time.Now(), engine.ThreadCPU()
		err := r.task.run(w, r.cfg.Tokenizer, pack)
		r.st.engineCPU.Add(int64(engine.ThreadCPU() - c0))
		r.st.addBusy(stEngine, t0)
		crashPoint("engine")
		if err != nil {
			fail(fmt.Errorf("engine worker %d: %w", i, err))
			broken = true
			continue
		}
		for _, it := range pack {
			it.seqs = nil
		}
		collCh <- event{items: pack}
	}
}
