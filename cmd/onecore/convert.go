package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/readers"
	"github.com/onecore-dev/onecore/writers"
)

var convertFlags struct {
	in          []string
	out         string
	format      string
	textField   string
	idField     string
	keep        []string
	json        bool
	rejects     string
	maxDocBytes int64
	utf8        string
	rowGroupMB  int64
	jobs        int
}

var convertCmd = &cobra.Command{
	Use:   "convert --in PATH... --out PATH",
	Short: "Convert corpus shards between Parquet, JSONL(.gz/.zst) and Arrow IPC",
	Long: `convert reads corpus shards (Parquet, JSONL, JSONL.gz, JSONL.zst; files,
directories searched recursively, or globs) and writes their documents as
Parquet (zstd), Arrow IPC or JSONL(.zst), streaming with bounded memory.

Output schema (stable, whatever the input): id (string, never null: the
--id-field value, or "file:row" when missing), text (string, never null: the
--text-field value), then one nullable string column per --keep field, in
--keep order. Passthrough strings are copied; numbers and booleans become
their JSON text; nested values (objects, arrays, Parquet groups/lists/maps)
become compact JSON.

--out DIR/ (an existing directory or a path ending in /) writes one file per
input shard, mirroring the input tree, named after the shard with the
output extension (default format parquet). --out FILE merges all shards into
one file whose format comes from --format or the extension (.parquet,
.arrow, .jsonl, .jsonl.zst). Files appear atomically (temp name + rename).

Bad input never stops the run: a bad row (malformed JSON, missing/null/
non-string text, text over --max-doc-bytes, invalid UTF-8 unless
--utf8=repair) is skipped and recorded in --rejects; a file that cannot be
read (bad footer, truncated gzip/zstd) is reported and counted, keeping the
rows read before the damage. rows_in = rows_out + rejected always holds. The
exit code is 3 when anything was rejected, 0 otherwise.`,
	Example: `  # JSONL.zst shards to one Parquet file, keeping two fields
  onecore convert --in crawl/ --out corpus.parquet --keep url,lang

  # one Parquet part per input shard, rejects recorded, summary as JSON
  onecore convert --in 'shards/*.jsonl.gz' --out parts/ --rejects rejects.jsonl --json

  # Parquet with a "content" column to JSONL.zst
  onecore convert --in data.parquet --text-field content --out data.jsonl.zst`,
	Args: cobra.ArbitraryArgs,
	RunE: runConvert,
}

func init() {
	f := convertCmd.Flags()
	f.StringArrayVar(&convertFlags.in, "in", nil, "input file, directory or glob (repeatable; positional arguments count too)")
	f.StringVar(&convertFlags.out, "out", "", "output file, or directory (existing or ending in /) for one file per shard")
	f.StringVar(&convertFlags.format, "format", "", "output format: "+writers.Formats+" (default: from --out's extension; parquet for a directory)")
	f.StringVar(&convertFlags.textField, "text-field", "text", "input field holding the document text")
	f.StringVar(&convertFlags.idField, "id-field", "id", `input field holding the document id (missing → "file:row")`)
	f.StringSliceVar(&convertFlags.keep, "keep", nil, "passthrough fields copied to the output, comma-separated")
	f.BoolVar(&convertFlags.json, "json", false, "print the summary as JSON on the last line of stdout")
	f.StringVar(&convertFlags.rejects, "rejects", "", "write rejected rows and unreadable files to this JSONL file")
	f.Int64Var(&convertFlags.maxDocBytes, "max-doc-bytes", readers.DefaultMaxDocBytes, "reject rows (JSONL lines, Parquet texts) longer than this; -1: no limit")
	f.StringVar(&convertFlags.utf8, "utf8", "reject", "text that is not valid UTF-8: reject the row, or repair (invalid bytes → U+FFFD)")
	f.Int64Var(&convertFlags.rowGroupMB, "row-group-mb", writers.DefaultRowGroupBytes>>20, "Parquet row-group size in MiB of uncompressed data")
	f.IntVar(&convertFlags.jobs, "jobs", 1, "with --out DIR/: convert this many shards at once (each takes ~200 MB of memory)")
	rootCmd.AddCommand(convertCmd)
}

// convertBatchBytes and convertBatchRows bound one record batch: small
// enough that a few in flight stay far below the memory budget.
const (
	convertBatchBytes = 6 << 20
	convertBatchRows  = 8192
	convertMemLimit   = 200 << 20
)

func runConvert(cmd *cobra.Command, args []string) error {
	fl := &convertFlags
	inputs := append(append([]string{}, fl.in...), args...)
	if len(inputs) == 0 {
		return usageError{errors.New("no input: give --in PATH (file, directory or glob)")}
	}
	if fl.out == "" {
		return usageError{errors.New("no output: give --out FILE or --out DIR/")}
	}
	inputs, err := normLocs("--in", inputs)
	if err != nil {
		return err
	}
	if fl.out, err = normLoc("--out", fl.out); err != nil {
		return err
	}
	opts := readers.Options{TextField: fl.textField, IDField: fl.idField, Keep: fl.keep, MaxDocBytes: fl.maxDocBytes, Borrow: true}
	switch fl.utf8 {
	case "reject":
		opts.UTF8 = readers.UTF8Reject
	case "repair":
		opts.UTF8 = readers.UTF8Repair
	default:
		return usageError{fmt.Errorf("--utf8 %q: want reject or repair", fl.utf8)}
	}
	if fl.jobs < 1 {
		return usageError{fmt.Errorf("--jobs %d: want at least 1", fl.jobs)}
	}
	if _, err := writers.DocSchema(fl.keep); err != nil {
		return usageError{fmt.Errorf("--keep: %w", err)}
	}
	format := writers.FormatUnknown
	if fl.format != "" {
		var err error
		if format, err = writers.ParseFormat(fl.format); err != nil {
			return usageError{err}
		}
	}
	shards, err := readers.Expand(inputs)
	if err != nil {
		for _, in := range inputs {
			if blobstore.Remote(in) {
				// a listing can fail for reasons the command line did not
				// cause (credentials, network): not a usage error
				return err
			}
		}
		return usageError{err}
	}
	dirMode := strings.HasSuffix(fl.out, "/") || strings.HasSuffix(fl.out, string(filepath.Separator))
	if st, err := os.Stat(fl.out); err == nil && st.IsDir() {
		dirMode = true
	}
	plan := convertPlan{opts: opts, wopts: writers.Options{Plain: writers.DocPlainColumns, RowGroupBytes: fl.rowGroupMB << 20}}
	if dirMode {
		if format == writers.FormatUnknown {
			format = writers.Parquet
		}
		seen := map[string]string{}
		for _, sh := range shards {
			p := filepath.Join(fl.out, stripShardExt(sh.Rel)+format.Ext())
			if blobstore.Remote(fl.out) {
				// filepath.Join would clean s3://b into s3:/b
				p = blobstore.Join(fl.out, stripShardExt(sh.Rel)+format.Ext())
			}
			if prev, dup := seen[p]; dup {
				return usageError{fmt.Errorf("inputs %s and %s would both be written to %s", prev, sh.Path, p)}
			}
			if filepath.Clean(p) == sh.Path {
				return usageError{fmt.Errorf("output %s would replace its own input", p)}
			}
			seen[p] = sh.Path
			plan.outs = append(plan.outs, p)
		}
		if !blobstore.Remote(fl.out) { // object stores have no folders to create
			if err := os.MkdirAll(fl.out, 0o755); err != nil {
				return err
			}
		}
	} else {
		if format == writers.FormatUnknown {
			if format = writers.FormatOf(fl.out); format == writers.FormatUnknown {
				return usageError{fmt.Errorf("--out %s: cannot tell the format from the extension (want %s, set --format, or end a directory with /)", fl.out, writers.Formats)}
			}
		}
	}
	plan.shards, plan.format, plan.merged = shards, format, fl.out

	var rej *writers.Rejects
	if fl.rejects != "" {
		if rej, err = writers.CreateRejects(fl.rejects); err != nil {
			return err
		}
	}
	plan.rejects = rej
	if os.Getenv("GOMEMLIMIT") == "" {
		// A soft limit keeps the heap (a row group being compressed plus a
		// few batches) from doubling before the collector runs.
		debug.SetMemoryLimit(convertMemLimit * int64(fl.jobs))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var sum writers.Summary
	if dirMode && fl.jobs > 1 {
		sum, err = plan.runShards(ctx, cmd.ErrOrStderr(), fl.jobs)
	} else {
		sum, err = plan.run(ctx, cmd.ErrOrStderr())
	}
	if cerr := rej.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("rejects file: %w", cerr)
	}
	if fl.json {
		fmt.Fprintln(cmd.OutOrStdout(), sum.JSON())
	} else {
		fmt.Fprintln(cmd.ErrOrStderr(), "convert:", sum)
	}
	switch {
	case ctx.Err() != nil:
		return withExitCode(exitInterrupted, errors.New("interrupted; no partial output was left behind"))
	case err != nil:
		return err
	case sum.Partial():
		where := ""
		if fl.rejects != "" {
			where = " (see " + fl.rejects + ")"
		}
		return withExitCode(exitPartial, fmt.Errorf("%d rows rejected, %d bad files%s", sum.Rejected, sum.BadFiles, where))
	}
	return nil
}

// stripShardExt removes a shard's format extension: a/b.jsonl.zst → a/b.
func stripShardExt(rel string) string {
	lower := strings.ToLower(rel)
	for _, ext := range []string{".gz", ".gzip", ".zst", ".zstd"} {
		if strings.HasSuffix(lower, ext) {
			rel, lower = rel[:len(rel)-len(ext)], lower[:len(lower)-len(ext)]
			break
		}
	}
	for _, ext := range []string{".parquet", ".jsonl", ".ndjson", ".json"} {
		if strings.HasSuffix(lower, ext) {
			return rel[:len(rel)-len(ext)]
		}
	}
	return rel
}

// convertPlan is one conversion: shards in, one output per shard (outs) or
// one merged output.
type convertPlan struct {
	shards  []readers.Shard
	outs    []string // per shard; nil when merging
	merged  string
	format  writers.Format
	opts    readers.Options
	wopts   writers.Options
	rejects *writers.Rejects
}

// convertItem flows from the reading goroutine to the writing one: a
// record batch, the end of a shard, or (done) the end of the input. An
// output is committed only after its shard's end (per-shard parts) or after
// done (merged file), so an interrupted or failed run leaves nothing half
// written.
type convertItem struct {
	rec      arrow.RecordBatch
	shardEnd bool
	done     bool
	shard    int
}

// run reads on one goroutine and encodes/writes on another, connected by a
// small channel: decoding and encoding overlap, and backpressure keeps at
// most a few batches in memory. The Parquet writer compresses its pages on
// GOMAXPROCS more goroutines, so one shard uses every core (the output
// bytes do not depend on how many).
func (p *convertPlan) run(ctx context.Context, log io.Writer) (writers.Summary, error) {
	var sum writers.Summary
	items := make(chan convertItem, 2)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	readErr := make(chan error, 1)
	go func() {
		defer close(items)
		readErr <- p.read(ctx, items, &sum, log)
	}()

	werr := p.write(items)
	if werr != nil {
		cancel()
		for it := range items { // let the reader finish
			if it.rec != nil {
				it.rec.Release()
			}
		}
	}
	rerr := <-readErr
	sum.RowsOut = sum.RowsIn - sum.Rejected
	if werr == nil && rerr == nil {
		if err := sum.Check(); err != nil {
			return sum, err
		}
	}
	if werr != nil {
		return sum, werr
	}
	return sum, rerr
}

// runShards converts per-shard outputs with jobs shards in flight, each
// through its own reader/writer pair. Rejects of different shards may
// interleave in the rejects file; outputs and the summary do not depend on
// jobs.
func (p *convertPlan) runShards(ctx context.Context, log io.Writer, jobs int) (writers.Summary, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		total writers.Summary
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sub := *p
				sub.shards, sub.outs = p.shards[i:i+1], p.outs[i:i+1]
				s, err := sub.run(ctx, log)
				mu.Lock()
				total.Add(s)
				if err != nil && first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range p.shards {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return total, first
}

// write consumes items, creating and closing output files.
func (p *convertPlan) write(items <-chan convertItem) error {
	b, _ := writers.NewDocBuilder(p.opts.Keep)
	defer b.Release()
	schema := b.Schema()
	var w *writers.Writer
	defer func() {
		if w != nil {
			w.Abort()
		}
	}()
	open := func(path string) (err error) {
		if dir := filepath.Dir(path); dir != "." && !blobstore.Remote(path) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		w, err = writers.Create(path, p.format, schema, p.wopts)
		return err
	}
	if p.outs == nil {
		if err := open(p.merged); err != nil {
			return err
		}
	}
	done := false
	for it := range items {
		if it.done {
			done = true
			continue
		}
		if p.outs != nil && w == nil {
			if err := open(p.outs[it.shard]); err != nil {
				return err
			}
		}
		if it.rec != nil {
			err := w.Write(it.rec)
			it.rec.Release()
			if err != nil {
				return err
			}
		}
		if it.shardEnd && p.outs != nil {
			err := w.Close()
			w = nil
			if err != nil {
				return err
			}
		}
	}
	if done && w != nil && p.outs == nil {
		err := w.Close()
		w = nil
		return err
	}
	return nil // anything still open is aborted by the deferred Abort
}

// read streams every shard into record batches.
func (p *convertPlan) read(ctx context.Context, items chan<- convertItem, sum *writers.Summary, log io.Writer) error {
	b, _ := writers.NewDocBuilder(p.opts.Keep)
	defer b.Release()
	send := func(it convertItem) bool {
		select {
		case items <- it:
			return true
		case <-ctx.Done():
			if it.rec != nil {
				it.rec.Release()
			}
			return false
		}
	}
	for i, sh := range p.shards {
		sum.Files++
		r, err := readers.OpenShard(sh, p.opts)
		if err != nil {
			if err := p.badFile(err, sum, log); err != nil {
				return err
			}
		} else {
			for {
				doc, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					var rej *readers.Reject
					if errors.As(err, &rej) {
						sum.RowsIn++
						sum.Rejected++
						if err := p.rejects.Row(rej); err != nil {
							r.Close()
							return err
						}
						continue
					}
					if err := p.badFile(err, sum, log); err != nil {
						r.Close()
						return err
					}
					break
				}
				sum.RowsIn++
				if b.Len() == 0 {
					// 8 MiB - 64 KiB: one power-of-two buffer of the pooled
					// allocator, with room for the last document of a batch
					b.Reserve(1024, 8<<20-64<<10)
				}
				b.Append(&doc)
				if b.Bytes() >= convertBatchBytes || b.Len() >= convertBatchRows {
					if !send(convertItem{rec: b.NewRecord(), shard: i}) {
						r.Close()
						return ctx.Err()
					}
				}
			}
			r.Close()
		}
		// An empty or unreadable shard still gets its (possibly empty)
		// part file, so every shard has an output.
		it := convertItem{shardEnd: true, shard: i}
		if b.Len() > 0 {
			it.rec = b.NewRecord()
		}
		if !send(it) {
			return ctx.Err()
		}
	}
	if !send(convertItem{done: true}) {
		return ctx.Err()
	}
	return nil
}

func (p *convertPlan) badFile(err error, sum *writers.Summary, log io.Writer) error {
	var fe *readers.FileError
	if !errors.As(err, &fe) {
		return err
	}
	sum.BadFiles++
	fmt.Fprintf(log, "onecore: warning: skipping the rest of %v\n", fe)
	return p.rejects.File(fe)
}
