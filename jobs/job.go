// Package jobs describes what an extraction run computes and where it runs:
// the job spec (task, prompt template, labels, limits), the fixed output
// schema of each task, rank/world resolution for Slurm arrays and Kubernetes
// Indexed Jobs, deterministic shard assignment, and the output directory's
// bookkeeping (manifest, per-part locks, completion markers) that makes a
// rerun resume exactly once.
package jobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Task names the computation a job runs per document.
type Task string

// The built-in tasks.
const (
	TaskClassify Task = "classify" // label, score, per-label probabilities
	TaskScore    Task = "score"    // mean log-prob, perplexity, token count
	TaskExtract  Task = "extract"  // span head, or prompt → greedy decode: text, logprob, abstained, offsets
	TaskEmbed    Task = "embed"    // mean-pooled final hidden state
)

// Tasks lists the built-in tasks in documentation order.
var Tasks = []Task{TaskClassify, TaskScore, TaskExtract, TaskEmbed}

// Truncation policies for documents longer than MaxTokens.
const (
	// TruncateHead keeps the document's first MaxTokens tokens (the default);
	// the row's `truncated` column says it happened.
	TruncateHead = "head"
	// TruncateReject sends a document longer than MaxTokens to the rejects
	// file instead of computing on a part of it.
	TruncateReject = "reject"
)

// Classification methods.
const (
	ClassifyAuto   = "auto"   // head.cls when the checkpoint has one, else labels
	ClassifyHead   = "head"   // the checkpoint's classifier head (head.cls.w/b)
	ClassifyLabels = "labels" // score each label string after the prompt
)

// Defaults for a job's limits.
const (
	DefaultMaxTokens    = 1024
	DefaultMaxNewTokens = 32
	DefaultMaxSpan      = 64
	DefaultTextField    = "text"
	DefaultIDField      = "id"
)

// Job is one extraction job: what to compute for every document. It is read
// from a YAML file (--job) and/or built from flags; flags override the file.
type Job struct {
	// Task is classify, score, extract or embed.
	Task Task `yaml:"task" json:"task"`
	// In and Out are the input shards and the output; flags override them.
	// They are where, not what: they are not part of the fingerprint.
	In  string `yaml:"in,omitempty" json:"in,omitempty"`
	Out string `yaml:"out,omitempty" json:"out,omitempty"`
	// Model is the checkpoint directory (empty: --model, $ONECORE_MODEL, then
	// the bundled models/spam).
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// TextField and IDField name the input columns (JSON keys) holding the
	// document text and its id. A missing id falls back to file:row.
	TextField string `yaml:"text_field,omitempty" json:"text_field"`
	IDField   string `yaml:"id_field,omitempty" json:"id_field"`
	// Keep lists input fields copied unchanged to every output row, each
	// "field" (column named like the field) or "field:column" (renamed, so
	// an input's label can sit next to the predicted label as gold). The
	// spec is kept as written, so the fingerprint tells the two apart.
	Keep []string `yaml:"keep,omitempty" json:"keep,omitempty"`
	// MaxTokens bounds the tokens of one document (its <bos> included);
	// Truncate says what happens to longer ones (head | reject).
	MaxTokens int    `yaml:"max_tokens,omitempty" json:"max_tokens"`
	Truncate  string `yaml:"truncate,omitempty" json:"truncate"`
	// Template is the prompt for extract (and classify by labels): the
	// placeholders {text} and {question} are replaced by the document and
	// its question. Empty: the model's generation.json template.
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
	// Question is a fixed question for every document; QuestionField names an
	// input field holding a per-document question (it wins when present).
	Question      string `yaml:"question,omitempty" json:"question,omitempty"`
	QuestionField string `yaml:"question_field,omitempty" json:"question_field,omitempty"`
	// Labels are the classes for classify (empty: the model's labels).
	Labels []string `yaml:"labels,omitempty" json:"labels,omitempty"`
	// ClassifyBy is auto, head or labels.
	ClassifyBy string `yaml:"classify_by,omitempty" json:"classify_by,omitempty"`
	// MaxNewTokens bounds an extracted answer.
	MaxNewTokens int `yaml:"max_new_tokens,omitempty" json:"max_new_tokens,omitempty"`
	// Extractive constrains extract's answer to a span of the document.
	Extractive bool `yaml:"extractive,omitempty" json:"extractive,omitempty"`
	// Abstain lists answers (after trimming spaces) that mean "no answer";
	// an empty answer always abstains.
	Abstain []string `yaml:"abstain,omitempty" json:"abstain,omitempty"`
	// MaxSpan bounds an answer of the span head, in tokens (extract with a
	// checkpoint that has head.span).
	MaxSpan int `yaml:"max_span,omitempty" json:"max_span,omitempty"`
	// Window, when positive, splits documents longer than Window tokens
	// into windows of Window tokens, each overlapping the next by half, for
	// generative extraction: every window is prompted and decoded, and the
	// answer is the most probable one that does not abstain (the job
	// abstains when every window does). 0: every document is one prompt.
	// The span head reads the whole document and ignores it. Measured
	// (docs/notes/issue-14.md): the bundled models' attention window is
	// 256 tokens and a fine-tuned model copies an answer 89 % of the time
	// within ~128 tokens of the question, 11 % beyond ~384; windows of 192
	// raised exact match by 14–52 points where the answer sits far from the
	// end of long documents, and lowered it by 6–9 where the question is
	// about a position ("the latest entry") that other windows imitate.
	Window int `yaml:"window,omitempty" json:"window,omitempty"`
	// SpanThreshold is added to the span head's "not present" score before
	// it is compared with the best span's, on top of the threshold the
	// checkpoint was tuned with (generation.json span_threshold): above 0
	// abstains more often, below 0 answers more often.
	SpanThreshold float64 `yaml:"span_threshold,omitempty" json:"span_threshold,omitempty"`
	// MaxDocBytes makes readers reject bigger documents (0: readers' default).
	MaxDocBytes int64 `yaml:"max_doc_bytes,omitempty" json:"max_doc_bytes,omitempty"`
	// Limit, when positive, makes the job the first Limit input rows (rejected
	// rows included) in shard order: a trial run. It is part of the job's
	// fingerprint, so a limited output is never resumed by, or mixed with, a
	// full run (that needs another --out or --force).
	Limit int64 `yaml:"limit,omitempty" json:"limit,omitempty"`
	// Int8 runs the model with its weight matrices quantized to int8
	// (engine.ModelOptions.Int8): faster where the CPU has AVX-512 VNNI,
	// outputs slightly different from the exact model's, so it is part of
	// the fingerprint.
	Int8 bool `yaml:"int8,omitempty" json:"int8,omitempty"`
}

// LoadFile reads a YAML job file. Unknown fields are errors naming the field,
// so a typo never silently changes what a night's run computes.
func LoadFile(path string) (*Job, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("job file: %w", err)
	}
	j, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("job file %s: %w", path, err)
	}
	return j, nil
}

// Parse decodes a YAML job spec (strict: unknown fields are errors).
func Parse(b []byte) (*Job, error) {
	var j Job
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&j); err != nil && !errors.Is(err, io.EOF) { // empty file: empty job
		return nil, err
	}
	return &j, nil
}

// Normalize fills defaults (in place) and validates the job.
func (j *Job) Normalize() error {
	if j.Task == "" {
		j.Task = TaskClassify
	}
	switch j.Task {
	case TaskClassify, TaskScore, TaskExtract, TaskEmbed:
	default:
		return fmt.Errorf("task %q: want one of classify, score, extract, embed", j.Task)
	}
	if j.TextField == "" {
		j.TextField = DefaultTextField
	}
	if j.IDField == "" {
		j.IDField = DefaultIDField
	}
	if j.MaxTokens == 0 {
		j.MaxTokens = DefaultMaxTokens
	}
	if j.MaxTokens < 2 {
		return fmt.Errorf("max_tokens %d: need at least 2 (<bos> and one token)", j.MaxTokens)
	}
	if j.Truncate == "" {
		j.Truncate = TruncateHead
	}
	if j.Limit < 0 {
		return fmt.Errorf("limit %d: must be positive (0: no limit)", j.Limit)
	}
	if j.Truncate != TruncateHead && j.Truncate != TruncateReject {
		return fmt.Errorf("truncate %q: want head or reject", j.Truncate)
	}
	if j.Task == TaskClassify {
		if j.ClassifyBy == "" {
			j.ClassifyBy = ClassifyAuto
		}
		switch j.ClassifyBy {
		case ClassifyAuto, ClassifyHead, ClassifyLabels:
		default:
			return fmt.Errorf("classify_by %q: want auto, head or labels", j.ClassifyBy)
		}
	} else if j.ClassifyBy != "" || len(j.Labels) > 0 {
		return fmt.Errorf("labels/classify_by apply to task classify, not %s", j.Task)
	}
	if j.Task == TaskExtract {
		if j.MaxNewTokens == 0 {
			j.MaxNewTokens = DefaultMaxNewTokens
		}
		if j.MaxNewTokens < 1 {
			return fmt.Errorf("max_new_tokens %d: must be positive", j.MaxNewTokens)
		}
		if j.MaxSpan == 0 {
			j.MaxSpan = DefaultMaxSpan
		}
		if j.Window != 0 && j.Window < 8 {
			return fmt.Errorf("window %d: must be at least 8 tokens, or 0 for whole documents", j.Window)
		}
		if j.MaxSpan < 1 {
			return fmt.Errorf("max_span %d: must be positive", j.MaxSpan)
		}
		if math.IsNaN(j.SpanThreshold) || math.IsInf(j.SpanThreshold, 0) {
			return fmt.Errorf("span_threshold %v: must be a finite number", j.SpanThreshold)
		}
	} else {
		if j.MaxSpan != 0 || j.SpanThreshold != 0 || j.Window != 0 {
			return fmt.Errorf("max_span/span_threshold/window apply to task extract, not %s", j.Task)
		}
		if j.Extractive {
			return fmt.Errorf("extractive applies to task extract, not %s", j.Task)
		}
		if j.Question != "" || j.QuestionField != "" {
			return fmt.Errorf("question/question_field apply to task extract, not %s", j.Task)
		}
	}
	seen := map[string]bool{}
	for _, l := range j.Labels {
		if l == "" {
			return errors.New("labels: empty label")
		}
		if seen[l] {
			return fmt.Errorf("labels: %q listed twice", l)
		}
		seen[l] = true
	}
	seen = map[string]bool{}
	reserved := map[string]bool{}
	for _, head := range []string{HeadMulticlass, HeadMultilabel, HeadRegression} {
		for _, f := range OutputSchema(j.Task, head, nil).Fields() {
			reserved[f.Name] = true
		}
	}
	for _, k := range j.Keep {
		field, col := SplitKeep(k)
		if field == "" || col == "" {
			return fmt.Errorf("keep: %q: empty field or column name (want field or field:column)", k)
		}
		if seen[col] {
			return fmt.Errorf("keep: column %q listed twice", col)
		}
		if reserved[col] {
			return fmt.Errorf("keep: column %q collides with an output column of task %s (rename it: --keep %s:%s_in)", col, j.Task, field, col)
		}
		seen[col] = true
	}
	if j.Template != "" && j.Task != TaskExtract && j.Task != TaskClassify {
		return fmt.Errorf("template applies to extract and classify, not %s", j.Task)
	}
	return nil
}

// SplitKeep splits a keep spec into the input field read and the output
// column written: "label:gold" reads label into gold, "label" reads label
// into label. It splits at the last colon, so a field whose name has a
// colon can still be kept by naming its column ("a:b:a_b").
func SplitKeep(spec string) (field, column string) {
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		return spec[:i], spec[i+1:]
	}
	return spec, spec
}

// KeepFields are the input fields of the keep specs, in Keep order (what the
// readers are asked for; a field may appear twice under two columns).
func (j *Job) KeepFields() []string {
	out := make([]string, len(j.Keep))
	for i, k := range j.Keep {
		out[i], _ = SplitKeep(k)
	}
	return out
}

// KeepColumns are the output columns of the keep specs, in Keep order.
func (j *Job) KeepColumns() []string {
	out := make([]string, len(j.Keep))
	for i, k := range j.Keep {
		_, out[i] = SplitKeep(k)
	}
	return out
}

// Fingerprint is a stable hash of everything in the job that changes the
// output rows (not where the model lives, only what it computes), used to
// refuse mixing two different jobs in one output directory.
func (j *Job) Fingerprint() string {
	c := *j
	c.Model = "" // the model is identified by its content hash, not its path
	c.In, c.Out = "", ""
	b, _ := json.Marshal(c)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// SplitTemplate fills {question} and splits the template around {text}
// so the document can be tokenized (and truncated) on its own: the prompt's
// tokens are tokens(before) + tokens(document) + tokens(after). A template
// without {text} puts the document first.
func SplitTemplate(template, question string) (before, after string, err error) {
	if strings.Count(template, "{text}") > 1 {
		return "", "", errors.New("template: {text} appears more than once")
	}
	// Split before filling the question, so a question containing "{text}"
	// stays literal text.
	q := func(s string) string { return strings.ReplaceAll(s, "{question}", question) }
	i := strings.Index(template, "{text}")
	if i < 0 {
		return "", q(template), nil
	}
	return q(template[:i]), q(template[i+len("{text}"):]), nil
}
