// Package pipeline runs a job over corpus shards on every core: readers →
// tokenizer pool → packer → one engine worker per core → collector →
// writers, connected by bounded channels so memory stays flat whatever the
// corpus size. Per-document results keep their input order within a shard,
// each shard becomes one part written atomically and then marked complete,
// so a rerun after any kill (SIGKILL included) resumes exactly once.
//
// The stages talk to the outside through the small interfaces in this file;
// the adapters to the real readers, tokenizer, engine and writers live in
// adapt.go, and the tests drive the same pipeline with fakes.
package pipeline

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Shard is one input unit: one part in the output, one completion marker.
type Shard struct {
	Key  string // stable name (path relative to the input), used for the part name
	Path string // what Source.Open opens
	Size int64  // bytes on disk, for progress and ETA
	// ModNS is the modification time (Unix ns; 0 when unknown), kept in
	// the shard's completion marker with Size (jobs.InputStat).
	ModNS int64
	Ref   any // the Source's own handle
}

// Value is a nullable passthrough value (strings as they are, other JSON
// values as their JSON text).
type Value struct {
	S     string
	Valid bool
}

// Doc is one input document.
type Doc struct {
	ID   string
	Text string
	File string
	Row  int64
	Keep []Value // Options.Keep order: the job's keep fields, then the question field
}

// RowError is a row that cannot be used; it goes to the rejects file and
// reading continues.
type RowError struct {
	File   string
	Row    int64
	ID     string // the row's id when it could be read, else ""
	Reason string
}

func (e *RowError) Error() string { return fmt.Sprintf("%s: row %d: %s", e.File, e.Row, e.Reason) }

// FileError is a file that cannot be read (any further); rows already
// delivered stand, the file is counted as bad.
type FileError struct {
	File string
	Row  int64
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: row %d: %v", e.File, e.Row, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// ReadOptions select the fields a reader extracts.
type ReadOptions struct {
	TextField, IDField string
	Keep               []string
	MaxDocBytes        int64
}

// Source opens shards.
type Source interface {
	Open(s Shard, opts ReadOptions) (DocReader, error) // a *FileError when the file is unusable
}

// DocReader streams one shard: Next returns io.EOF at the end, a *RowError
// for a skipped row (call again), a *FileError when the rest is unreadable.
type DocReader interface {
	Next() (Doc, error)
	Close() error
}

// Fractioner is a DocReader that knows how much of its shard it has read
// (0 to 1), for progress and ETA by what is really consumed: Parquet rows
// of the row count, JSON Lines bytes on disk. It must be safe to call while
// Next runs.
type Fractioner interface {
	Fraction() float64
}

// RowCounter is a DocReader that can tell its shard's row count before
// reading it (Parquet metadata), for --dry-run's plan.
type RowCounter interface {
	RowCount() (int64, bool)
}

// Tokenizer turns text into token ids without special tokens (the pipeline
// adds <bos>) and back. It must be safe for concurrent use.
type Tokenizer interface {
	Encode(text string) []int32
	Decode(ids []int32) string
}

// Want says what a forward pass must return per document.
type Want struct {
	LogProbs    bool // next-token log-probs: LogProbs[t] = log p(doc[t+1] | doc[≤t])
	Mean        bool // mean over positions of the final-norm hidden state
	ClassLogits bool // classifier head logits (head.cls over the mean)
	Span        bool // span head [start, end] logits at every position (head.span)
}

// Output is one document's forward results.
type Output struct {
	LogProbs    []float32
	Mean        []float32
	ClassLogits []float32
	Span        []float32 // [n × 2]: start, end logits per position
}

// GenOptions control batched greedy decoding.
type GenOptions struct {
	MaxNew int
	// Allow, when set, restricts sequence i's next token after generated to
	// the returned ids (nil result: stop now). The model's vocabulary mask
	// and stop ids still apply.
	Allow func(i int, generated []int32) []int32
}

// Generation is one decoded continuation (without its stop token).
type Generation struct {
	Tokens  []int32
	LogProb float32 // summed log-prob of Tokens (and of the stop token, if one ended it)
	Stopped bool    // ended by a stop id (not by MaxNew)
}

// Worker is one engine instance, used by one goroutine locked to one core.
// Its results for a document must not depend on what it is batched with.
type Worker interface {
	Forward(docs [][]int32, want Want) ([]Output, error)
	Generate(prompts [][]int32, opt GenOptions) ([]Generation, error)
	Close() error
}

// Model is a loaded checkpoint, shared read-only by the workers.
type Model interface {
	NewWorker() (Worker, error)
	// Labels are the classifier's labels in head column order (nil: no head).
	Labels() []string
	// ClassHead is how the classifier head is read: jobs.HeadMulticlass,
	// HeadMultilabel (with one threshold per label) or HeadRegression.
	ClassHead() (kind string, thresholds []float32)
	// Template is the checkpoint's prompt template for a task ("" if none).
	Template(task string) string
	// StopIDs end a generated answer.
	StopIDs() []int32
	// SpanHead reports a span-extraction head (head.span): task extract
	// then answers with spans of the document, decoded as o says.
	SpanHead() (ok bool, o SpanOptions)
}

// SpanOptions is how a checkpoint's span head is decoded (its
// generation.json, as train extract wrote it).
type SpanOptions struct {
	// Threshold is the one its training tuned, added to the "not present"
	// score (a job's span_threshold shifts it).
	Threshold float64
	// WholeWords widens answers to whole words (span_whole_words,
	// engine.SpanText).
	WholeWords bool
	// OneLine keeps answers on one line of the document (span_one_line,
	// engine.SpanLines).
	OneLine bool
	// EndNext scores a span's end at the row after it, over the document
	// and an appended <eos> (span_end_next, engine.SpanLogitRows).
	EndNext bool
}

// PartWriter writes one output file atomically: nothing is visible at its
// path until Close renames it into place; Abort removes the temporary.
type PartWriter interface {
	Write(rec arrow.Record) error
	Close() error
	Abort() error
}

// CreateFunc creates a PartWriter for path in format (parquet, arrow, jsonl).
type CreateFunc func(path, format string, schema *arrow.Schema) (PartWriter, error)

// BOS and EOS are the special ids every onecore tokenizer shares.
const (
	BOS int32 = 1
	EOS int32 = 2
)
