package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/onecore-dev/onecore/amx"
	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/internal/atomicfile"
	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/jobs"
	"github.com/onecore-dev/onecore/models"
	"github.com/onecore-dev/onecore/pipeline"
)

// extractFlags are the flags of extract (and of its task-named aliases).
type extractFlags struct {
	jobFile     string
	in          []string
	out, format string
	claim       string // --claim: auto, lease, flock
	model       string
	task        string
	keep        []string
	textField   string
	idField     string
	maxTokens   int
	truncate    string
	template    string
	question    string
	questionFld string
	labels      []string
	classifyBy  string
	maxNew      int
	extractive  bool
	window      int
	abstain     []string
	maxSpan     int
	spanThresh  float64
	maxDocBytes int64
	int8        bool

	workers, tokWorkers, packTokens int
	rank, world                     int
	force, noPin, skipBad           bool
	progress                        string
	logEvery                        time.Duration
	summary                         string
	limit                           int64
	dryRun                          bool
}

// extractHead is the opening of extract's help: what it does and its tasks.
const extractHead = `extract runs a job over every document of the input shards (Parquet and JSON
Lines, plain, .gz or .zst; files, directories or globs) on every CPU core and
writes one result row per document.

Tasks (--task, or task: in a --job YAML file; flags override the file):
  classify  label, score, probs (per-label probabilities), from the model's
            classifier head, or by scoring each --labels string after the prompt
            (the default task; without --task, a model without a classifier
            head and no --labels, the task is score)
  score     mean_logprob, perplexity (a perplexity filter, as CCNet does),
            bits_per_byte (tokenizer-independent: see 'onecore score --help')
  extract   answer, answer_logprob, abstained, answer_start, answer_end: with a
            checkpoint that has a span head ('onecore train extract'), the
            best span of the document for --question / --question-field (at
            most --max-span tokens; abstains when "not present" scores higher,
            shifted by the threshold train extract tuned on its held-out
            split and then by --span-threshold; widened to whole words when
            the checkpoint's span_whole_words says so, kept on one line when
            its span_one_line does), its character offsets
            in the document (answer = text[answer_start:answer_end], null when
            abstained); otherwise the --template prompt with the document
            decoded greedily (--extractive keeps the answer a substring of
            the document's text or an --abstain string; offsets null); with
            --window N a document longer than N tokens is read as half-
            overlapping windows and the most probable answer that does not
            abstain wins (answer_logprob is that window's). A classifier
            checkpoint without a span head or extract template is refused.
  embed     embedding: the mean-pooled final hidden state (list<float32>)
Every row also has id, file, row, tokens, truncated and the --keep columns.

`

// taskHelp is the opening of the help of each task-named command: the same
// run as extract --task T, described with only what applies to T.
var taskHelp = map[jobs.Task]struct{ head, example string }{
	jobs.TaskClassify: {`classify runs extract --task classify: it labels every document of the input
shards (Parquet and JSON Lines, plain, .gz or .zst; files, directories or
globs) on every CPU core, one result row per document.

Columns: label (the most probable label), score (its probability) and probs
(one probability per label, in label order), plus id, file, row, tokens,
truncated and the --keep columns (--keep label:gold copies the input's label
into a column gold, for 'onecore eval'). The labels come from the model's
classifier head, or, with --labels a,b,..., by scoring each label string
after the --template prompt (--classify-by auto, head or labels).

`, `  onecore classify --in testdata/sample --out labels.parquet --keep gold
  onecore classify --in labeled.parquet --out r.parquet --keep label:gold   # then: onecore eval --pred r.parquet --gold-column gold
  onecore classify --labels positive,negative --in reviews.parquet --out labels.parquet
  onecore classify --model my-model/ --in 'shards/*.jsonl.zst' --out labels/ --workers 8`},
	jobs.TaskScore: {`score runs extract --task score: it scores every document of the input
shards (Parquet and JSON Lines, plain, .gz or .zst; files, directories or
globs) with the language model on every CPU core, one result row per
document: a perplexity filter, as CCNet does.

Columns:
  mean_logprob   mean natural-log probability of the document's tokens after
                 <bos>: depends on the tokenizer (more, shorter tokens score
                 higher per token)
  perplexity     exp(-mean_logprob)
  bits_per_byte  -sum(log2 p(token)) / UTF-8 bytes of the text those tokens
                 cover (a truncated document counts only the bytes its kept
                 tokens cover): independent of the tokenizer, so a filter
                 threshold survives a change of tokenizer or model
plus id, file, row, tokens, truncated and the --keep columns.

`, `  onecore score --in testdata/sample --out scores.parquet
  onecore score --in 'corpus/*.jsonl.zst' --out scores/ --keep url --max-tokens 512
  onecore score --in docs.jsonl --out - | head`},
	jobs.TaskEmbed: {`embed runs extract --task embed: it embeds every document of the input shards
(Parquet and JSON Lines, plain, .gz or .zst; files, directories or globs)
on every CPU core, one result row per document.

Columns: embedding (list<float32>, the mean-pooled final hidden state of the
document's tokens), plus id, file, row, tokens, truncated and the --keep
columns.

`, `  onecore embed --in testdata/sample --out embeddings.parquet
  onecore embed --in 'corpus/*.parquet' --out emb/ --keep url --max-tokens 256`},
}

// taskFlags lists, per task-named command, the flags of extract that do
// not apply to it: hidden from its help (still accepted, as a job file may
// set the same fields for another task).
var taskFlags = map[jobs.Task][]string{
	jobs.TaskClassify: {"question", "question-field", "max-new-tokens", "extractive", "abstain", "max-span", "span-threshold", "window"},
	jobs.TaskScore:    {"template", "question", "question-field", "labels", "classify-by", "max-new-tokens", "extractive", "abstain", "max-span", "span-threshold", "window"},
	jobs.TaskEmbed:    {"template", "question", "question-field", "labels", "classify-by", "max-new-tokens", "extractive", "abstain", "max-span", "span-threshold", "window"},
}

// extractTail is the part of the help every job command shares: output,
// resume, scale-out, model, bad inputs and exit codes.
const extractTail = `Output: --out DIR/ writes one part per input shard (DIR/part-*.parquet) plus
bookkeeping (_onecore.json, _done/, _rejects/); --out FILE.parquet (or .arrow,
.jsonl, .jsonl.zst) assembles the parts into one file at the end, recording
the job and model in FILE.onecore.json: an existing FILE is replaced only by
the same job and model (a rerun of the same command recomputes it), any other
file there needs --force. Both work in object storage (s3://b/out/,
s3://b/results.parquet; see the README). --out - (or /dev/stdout) writes JSON Lines (or
--format jsonl.zst) to stdout at the end of the run, the summary then going to
stderr, and rejected rows to the log. Rejected rows go to the rejects files
with file, row, id (when it was readable) and reason.

Resume: rerunning the same command skips finished shards and redoes the rest,
so a run killed at any point (SIGKILL too) ends with every row written
exactly once. SIGINT/SIGTERM stop reading, finish the documents in flight,
mark finished shards and exit 130; a second signal exits at once. A signal
before the run starts (listing inputs, loading the model) exits 130 at once.

Scale-out: --rank/--world, else SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT,
SLURM_PROCID/SLURM_NTASKS, or JOB_COMPLETION_INDEX with --world. Rank r takes
shards i with i mod world == r. A lock per part keeps overlapping runs (cron)
from writing the same part. See 'onecore jobs render'.

Model: --model DIR (or the name of a bundled model: base, base-small, base-tiny, spam), else
$ONECORE_MODEL, else a bundled model: spam (the spam/ham classifier) to
classify by a head, base (the pretrained language model) for score, embed,
extract and classify --labels.

Unreadable input files (open or read errors: a file moved away, a truncated
stream, an I/O error, a corrupt Parquet footer) leave their shard unmarked: the
run exits 4 naming them, and the next run retries them (a single output file is
assembled only once all shards are done). --skip-bad-files accepts such a file
instead: its shard is marked done with the rows read before the error and a
rejects line, and the run exits 3.

Exit codes: 0 done, 1 error, 2 usage, 3 done but rows or files were rejected,
4 some shards failed and were left for a rerun, 130 interrupted (rerun to
resume). A JSON summary is printed to stdout.`

// extractLong is extract's full help.
const extractLong = extractHead + extractTail

const extractExample = `  onecore extract --in testdata/sample --out results.parquet
  onecore extract --task score --in 'corpus/*.jsonl.zst' --out scores/ --keep url
  onecore extract --job spam.yaml --in shards/ --out spam/ --workers 8
  onecore classify --labels positive,negative --in reviews.parquet --out labels.parquet
  onecore extract --task extract --question 'Who is the author?' --extractive --in docs/ --out authors.jsonl
  onecore extract --task extract --model runs/qa --question 'What is the invoice number?' --in docs/ --out numbers.parquet`

func init() {
	rootCmd.AddCommand(newExtractCmd("extract", "", "Run a job (classify, score, extract, embed) over corpus shards on every core"))
	rootCmd.AddCommand(newExtractCmd("classify", jobs.TaskClassify, "extract --task classify: label every document"))
	rootCmd.AddCommand(newExtractCmd("score", jobs.TaskScore, "extract --task score: per-document mean log-prob and perplexity"))
	rootCmd.AddCommand(newExtractCmd("embed", jobs.TaskEmbed, "extract --task embed: per-document embedding"))
}

func newExtractCmd(use string, task jobs.Task, short string) *cobra.Command {
	var fl extractFlags
	long, example := extractLong, extractExample
	if h, ok := taskHelp[task]; ok {
		long, example = h.head+extractTail, h.example
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if task != "" {
				if cmd.Flags().Changed("task") && fl.task != string(task) {
					return usageError{fmt.Errorf("%s runs task %s; --task %s contradicts it", use, task, fl.task)}
				}
				fl.task = string(task)
			}
			return runExtract(cmd, &fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.jobFile, "job", "", "job YAML file (flags override its fields)")
	f.StringSliceVar(&fl.in, "in", nil, "input shards: files, directories or globs (repeatable, comma-separated)")
	f.StringVar(&fl.claim, "claim", "auto", "how workers claim shards: lease (lease objects with an expiry, renewed while working, taken over when a worker dies; the default for object-storage output) or flock (local directories); auto picks by --out")
	f.StringVar(&fl.out, "out", "", "output directory (one part per shard), file (.parquet, .arrow, .jsonl, .jsonl.zst), or - for stdout (JSON Lines)")
	f.StringVar(&fl.format, "format", "", "parts format in directory mode: parquet (default), arrow, jsonl, jsonl.zst")
	f.StringVar(&fl.model, "model", "", "checkpoint directory (default $"+models.EnvVar+", then the bundled model)")
	if task == "" {
		f.StringVar(&fl.task, "task", "", "classify, score, extract or embed (default classify)")
	}
	f.StringSliceVar(&fl.keep, "keep", nil, "input fields copied to every output row; field:column renames (--keep label:gold)")
	f.StringVar(&fl.textField, "text-field", "", "field holding the document text (default text)")
	f.StringVar(&fl.idField, "id-field", "", "field holding the document id (default id; missing: file:row)")
	f.IntVar(&fl.maxTokens, "max-tokens", 0, fmt.Sprintf("tokens per document, <bos> included (default %d)", jobs.DefaultMaxTokens))
	f.StringVar(&fl.truncate, "truncate", "", "longer documents: head (keep the first max-tokens, default) or reject")
	f.Int64Var(&fl.maxDocBytes, "max-doc-bytes", 0, "reject input rows larger than this (default 64 MiB)")
	f.StringVar(&fl.template, "template", "", "prompt template with {text} and {question} (extract, classify by labels)")
	f.StringVar(&fl.question, "question", "", "extract: question asked of every document")
	f.StringVar(&fl.questionFld, "question-field", "", "extract: input field with a per-document question")
	f.StringSliceVar(&fl.labels, "labels", nil, "classify: label set (default: the model's classifier head)")
	f.StringVar(&fl.classifyBy, "classify-by", "", "classify: auto, head or labels")
	f.IntVar(&fl.maxNew, "max-new-tokens", 0, fmt.Sprintf("extract: answer length bound (default %d)", jobs.DefaultMaxNewTokens))
	f.BoolVar(&fl.extractive, "extractive", false, "extract: the answer must be a substring of the document's text or one of --abstain (or empty)")
	f.StringSliceVar(&fl.abstain, "abstain", nil, "extract: answers that mean no answer (an empty answer always does)")
	f.IntVar(&fl.maxSpan, "max-span", 0, fmt.Sprintf("extract with a span head: longest answer in tokens (default %d)", jobs.DefaultMaxSpan))
	f.IntVar(&fl.window, "window", 0, "extract, generative decoding: read documents longer than this many tokens as windows of it, half overlapping, and answer with the most probable window that does not abstain (0: whole documents; 192 suits the bundled models' 256-token attention when answers lie far from the end of long documents)")
	f.Float64Var(&fl.spanThresh, "span-threshold", 0, "extract with a span head: added to the \"not present\" score on top of the threshold the model was tuned with (> 0 abstains more, < 0 less)")
	f.BoolVar(&fl.int8, "int8", false, "quantize the model's weight matrices to int8: ~1.3x the documents/s on CPUs with AVX-512 VNNI (slower without), outputs slightly different from the exact model's (README: \"int8\")")
	f.IntVar(&fl.workers, "workers", 0, "engine workers, one per core (default: usable cores)")
	f.IntVar(&fl.tokWorkers, "tokenizer-workers", 0, "tokenizer goroutines (default max(2, workers/2))")
	f.IntVar(&fl.packTokens, "pack-tokens", 0, "tokens per engine pack (default 1024)")
	f.IntVar(&fl.rank, "rank", -1, "this process's rank (default from Slurm/Kubernetes, else 0)")
	f.IntVar(&fl.world, "world", 0, "number of ranks (default from Slurm, else 1)")
	f.BoolVar(&fl.force, "force", false, "recompute into an output written by another job or model, or replace a file onecore did not write")
	f.BoolVar(&fl.skipBad, "skip-bad-files", false, "mark unreadable input files done (rows before the error kept) instead of retrying them next run")
	f.BoolVar(&fl.noPin, "no-pin", false, "do not pin engine workers to cores")
	f.StringVar(&fl.progress, "progress", "auto", "auto (bar on a terminal, else log lines), bar, log or none")
	f.DurationVar(&fl.logEvery, "log-every", 10*time.Second, "period of the progress log lines (--progress log)")
	f.StringVar(&fl.summary, "summary", "", "also write the JSON summary to this file")
	f.Int64Var(&fl.limit, "limit", 0, "only the first N input rows, in shard order: a trial run (part of the job: its output is never resumed by a full run)")
	f.BoolVar(&fl.dryRun, "dry-run", false, "print the plan (shards, rows where known, estimated time from a short calibration in a temporary folder) and write nothing to --out")
	for _, name := range taskFlags[task] {
		f.MarkHidden(name)
	}
	return cmd
}

// buildJob merges the job file and the flags that were set.
func buildJob(cmd *cobra.Command, fl *extractFlags) (*jobs.Job, error) {
	j := &jobs.Job{}
	if fl.jobFile != "" {
		var err error
		if j, err = jobs.LoadFile(fl.jobFile); err != nil {
			return nil, err
		}
	}
	set := cmd.Flags().Changed
	if fl.task != "" {
		j.Task = jobs.Task(fl.task)
	}
	str := func(name string, dst *string, v string) {
		if set(name) {
			*dst = v
		}
	}
	str("model", &j.Model, fl.model)
	str("text-field", &j.TextField, fl.textField)
	str("id-field", &j.IDField, fl.idField)
	str("truncate", &j.Truncate, fl.truncate)
	str("template", &j.Template, fl.template)
	str("question", &j.Question, fl.question)
	str("question-field", &j.QuestionField, fl.questionFld)
	str("classify-by", &j.ClassifyBy, fl.classifyBy)
	str("out", &j.Out, fl.out)
	if set("in") {
		j.In = strings.Join(fl.in, ",")
	}
	if set("keep") {
		j.Keep = fl.keep
	}
	if set("labels") {
		j.Labels = fl.labels
	}
	if set("abstain") {
		j.Abstain = fl.abstain
	}
	if set("max-tokens") {
		j.MaxTokens = fl.maxTokens
	}
	if set("max-new-tokens") {
		j.MaxNewTokens = fl.maxNew
	}
	if set("max-span") {
		j.MaxSpan = fl.maxSpan
	}
	if set("span-threshold") {
		j.SpanThreshold = fl.spanThresh
	}
	if set("int8") {
		j.Int8 = fl.int8
	}
	if set("window") {
		j.Window = fl.window
	}
	if set("max-doc-bytes") {
		j.MaxDocBytes = fl.maxDocBytes
	}
	if set("extractive") {
		j.Extractive = fl.extractive
	}
	if set("limit") {
		j.Limit = fl.limit
	}
	return j, nil
}

func runExtract(cmd *cobra.Command, fl *extractFlags) error {
	job, err := buildJob(cmd, fl)
	if err != nil {
		return usageError{err}
	}
	taskGiven := job.Task != ""
	if !taskGiven {
		job.Task = jobs.TaskClassify // validated as classify; decided once the model is known
	}
	if err := job.Normalize(); err != nil {
		return usageError{err}
	}
	if job.In == "" {
		return usageError{errors.New("no input: pass --in (files, directories or globs) or set in: in the job file")}
	}
	if job.Out == "" {
		return usageError{errors.New("no output: pass --out DIR/ or --out FILE.parquet")}
	}
	ins, err := normLocs("--in", splitInputs(job.In))
	if err != nil {
		return err
	}
	job.In = strings.Join(ins, ",")
	if job.Out, err = normLoc("--out", job.Out); err != nil {
		return err
	}
	switch remote := blobstore.Remote(job.Out); fl.claim {
	case "auto":
	case "lease":
		if !remote {
			return usageError{fmt.Errorf("--claim lease: only for object-storage output so far (a local --out directory uses flock, which the kernel releases when a process dies)")}
		}
	case "flock":
		if remote {
			return usageError{fmt.Errorf("--claim flock: %s is in object storage, where there are no file locks; use --claim lease (the default there)", job.Out)}
		}
	default:
		return usageError{fmt.Errorf("--claim %q: want auto, lease or flock", fl.claim)}
	}
	place, err := jobs.ResolvePlacement(fl.rank, fl.world, os.Getenv)
	if err != nil {
		return usageError{err}
	}
	if job.Limit > 0 && place.World > 1 {
		// Each rank would take the first N rows of its own shards: not
		// what "the first N documents" means to whoever tries a job.
		return usageError{fmt.Errorf("--limit %d with rank %d of %d: a trial run is one process (pass --world 1)", job.Limit, place.Rank, place.World)}
	}
	// Every flag is checked before anything slow (listing the inputs,
	// loading the model): a typo is a usage error (exit 2) at once.
	if err := pipeline.CheckOutput(job.Out, fl.format, place); err != nil {
		return usageError{err}
	}
	switch fl.progress {
	case "auto", "bar", "log", "none":
	default:
		return usageError{fmt.Errorf("--progress %q: want auto, bar, log or none", fl.progress)}
	}
	stderr := cmd.ErrOrStderr()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// Signals are handled from here on, before anything slow (listing the
	// inputs, loading the model): see handleSignals.
	ctx, started, stopSignals := handleSignals(stderr)
	defer stopSignals()

	shards, err := pipeline.ExpandInputs(splitInputs(job.In), log)
	if err != nil {
		return err
	}
	// Without --model: the bundled classifier for classifying by a head (and
	// for a plain `extract`, which classifies with it), the bundled base
	// language model for everything that reads the language model itself
	// (score, embed, extract, classify --labels).
	fallback := models.Base
	if (!taskGiven || job.Task == jobs.TaskClassify) && len(job.Labels) == 0 {
		fallback = models.Spam
	}
	dir, source, err := models.Resolve(job.Model, fallback)
	if err != nil {
		return fmt.Errorf("no model available: %w", err)
	}
	log.Info("loading model", "model", dir, "from", source)
	if job.Int8 && !amx.Q8Native() {
		log.Warn("--int8 on a CPU without AVX-512 VNNI runs a pure-Go int8 product, far slower than the default bf16 kernels")
	}
	model, tok, err := pipeline.LoadModelWith(dir, engine.ModelOptions{Int8: job.Int8})
	if err != nil {
		return err
	}
	modelID, err := jobs.ModelID(dir)
	if err != nil {
		return err
	}
	if !taskGiven && len(job.Labels) == 0 && model.Labels() == nil {
		// No task named and nothing to classify with: score instead, so the
		// plain `onecore extract --in … --out …` works with any model.
		job.Task, job.ClassifyBy = jobs.TaskScore, ""
		if err := job.Normalize(); err != nil {
			return usageError{err}
		}
		log.Info("no --task and the model has no classifier head: scoring (mean log-prob, perplexity)")
	}

	cfg := pipeline.Config{
		Job: job, Shards: shards, Source: pipeline.ReaderSource{}, Tokenizer: tok, Model: model,
		ModelPath: dir, ModelID: modelID, Create: pipeline.CreateWriter,
		Out: job.Out, Format: fl.format, Placement: place,
		Workers: fl.workers, TokWorkers: fl.tokWorkers, PackTok: fl.packTokens,
		Pin: !fl.noPin, Force: fl.force, SkipBadFiles: fl.skipBad, Log: log, LogEvery: fl.logEvery,
	}
	switch fl.progress {
	case "auto":
		if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			cfg.Progress = stderr
		}
	case "bar":
		cfg.Progress = stderr
	case "log":
	case "none":
		cfg.LogEvery = 1 << 62
	}
	// With the results on stdout, the summary goes to stderr (and to
	// --summary FILE when given) so the two never interleave.
	sumOut := cmd.OutOrStdout()
	if pipeline.IsStdout(job.Out) {
		sumOut = stderr
		cfg.Stdout = cmd.OutOrStdout()
	}
	log.Info("extract", "task", job.Task, "model", dir, "model_from", source, "shards", len(shards),
		"rank", place.Rank, "world", place.World, "placement", place.From, "out", job.Out)

	if fl.dryRun {
		started()
		// a few packs per worker: long enough to see the steady rate
		workers := fl.workers
		if workers <= 0 {
			workers = len(engine.AllowedCPUs())
		}
		plan, err := pipeline.DryRun(ctx, cfg, 64*max(1, workers))
		if err != nil {
			return err
		}
		return printPlan(sumOut, fl.summary, plan)
	}
	if job.Limit > 0 {
		log.Warn("--limit: a trial run; the output holds the first rows only, and a full run needs another --out (or --force)", "limit", job.Limit)
	}
	started()
	sum, runErr := pipeline.Run(ctx, cfg)
	if sum != nil {
		if err := printSummary(sumOut, fl.summary, sum); err != nil && runErr == nil {
			runErr = err
		}
	}
	switch {
	case runErr != nil:
		return runErr
	case sum.Interrupted:
		return withExitCode(exitInterrupted, fmt.Errorf("interrupted: %d shard(s) finished and marked; rerun the same command to resume the rest", sum.ShardsDone))
	case sum.ShardsFailed > 0:
		var files []string
		for _, f := range sum.Failed {
			files = append(files, f.File+": "+f.Error)
		}
		what := "rerun the same command to retry them"
		if pipeline.FormatOf(cfg.Out) != "" && !strings.HasSuffix(cfg.Out, "/") {
			what = cfg.Out + " was not assembled; rerun the same command to retry them"
		}
		return withExitCode(exitFailed, fmt.Errorf("%d shard(s) could not be read and were not marked done (%s), or pass --skip-bad-files to accept the loss:\n  %s", sum.ShardsFailed, what, strings.Join(files, "\n  ")))
	case sum.Partial():
		return withExitCode(exitPartial, fmt.Errorf("finished with %d rejected row(s) and %d bad file(s): see %s", sum.Rejected, sum.BadFiles, rejectsWhere(cfg, sum)))
	}
	if sum.ShardsLocked > 0 {
		log.Warn("some shards are being written by another running onecore and were skipped", "shards_locked", sum.ShardsLocked)
	}
	log.Info("done", "summary", sum.String())
	return nil
}

// handleSignals installs the SIGINT/SIGTERM handling of extract and
// returns the run's context, started (to call once the run begins writing)
// and stop (to call when the command returns).
//
// Every signal lands on one channel, registered once for the whole
// command, so none is lost: re-registering after the first one (as this
// code once did) left a window of ~10 ms in which a second SIGINT fell to
// the default action or was dropped. Before started, nothing has been
// written yet (the inputs are being listed or the model loaded, neither of
// which can be cancelled midway), so the first signal exits 130 at once
// with a message; a summary would report nothing. After started, the
// first signal cancels the context (the run finishes the documents in
// flight, marks finished shards and exits 130) and the second exits 130
// at once: outputs are atomic and a rerun resumes.
func handleSignals(stderr io.Writer) (ctx context.Context, started, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var running atomic.Bool
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				n++
				switch {
				case !running.Load():
					fmt.Fprintf(stderr, "onecore: %v before the run started (while listing the inputs or loading the model): exiting; nothing was written\n", sig)
					os.Exit(exitInterrupted)
				case n == 1:
					// Said at once: finishing the documents in flight can take
					// a while, and the user should know a second signal stops
					// it without that wait.
					fmt.Fprintf(stderr, "onecore: %v: finishing the documents in flight, then exiting (signal again to exit now)\n", sig)
					cancel()
				default:
					fmt.Fprintln(stderr, "onecore: second signal, exiting now; rerun the same command to resume")
					os.Exit(exitInterrupted)
				}
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel()
		})
	}
	return ctx, func() { running.Store(true) }, stop
}

func rejectsWhere(cfg pipeline.Config, sum *pipeline.Summary) string {
	if sum.Rejects != "" {
		return sum.Rejects
	}
	return strings.TrimSuffix(cfg.Out, "/") + "/" + jobs.RejectsDir + "/"
}

func splitInputs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func printSummary(w io.Writer, path string, sum *pipeline.Summary) error {
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return err
	}
	if path != "" {
		return atomicfile.WriteFile(path, b)
	}
	return nil
}

// printPlan prints --dry-run's plan for a person (and as JSON to path, when
// given).
func printPlan(w io.Writer, path string, p *pipeline.Plan) error {
	fmt.Fprintf(w, "dry run: nothing was written to %s\n", p.Out)
	fmt.Fprintf(w, "  task %s, model %s, rank %d of %d, %d engine workers\n", p.Task, p.Model, p.Rank, p.World, p.Workers)
	if p.Limit > 0 {
		fmt.Fprintf(w, "  --limit %d: a trial run over the first %d input rows\n", p.Limit, p.Limit)
	}
	fmt.Fprintf(w, "  shards: %d assigned, %d already done, %d to do (%s on disk)\n",
		p.ShardsAssigned, p.ShardsAlreadyDone, p.ShardsToDo, humanBytes(p.BytesToDo))
	if p.ShardsRowsKnown > 0 {
		fmt.Fprintf(w, "  rows: %d in the %d shard(s) whose files record it\n", p.RowsKnown, p.ShardsRowsKnown)
	}
	if c := p.Calibration; c != nil {
		fmt.Fprintf(w, "  calibration: %d documents, %d tokens in %.1fs: %.0f docs/s, %.0f tok/s\n", c.Docs, c.Tokens, c.WallS, c.DocsPerS, c.TokPerS)
		if p.RowsEstimated > p.RowsKnown {
			fmt.Fprintf(w, "  rows (estimated from %.0f bytes on disk per row): ~%d\n", c.BytesPerRow, p.RowsEstimated)
		}
	}
	if p.EstimatedS > 0 {
		fmt.Fprintf(w, "  estimated time: %s (from the calibration's rate; startup included, so short runs look slower)\n",
			time.Duration(p.EstimatedS*float64(time.Second)).Round(time.Second))
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if path != "" {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(path, append(b, '\n'))
	}
	return nil
}

// humanBytes is n in B, KB, MB or GB (decimal units, one decimal).
func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
