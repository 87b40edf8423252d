package jobs

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column names shared by every task's output.
const (
	ColID        = "id"        // the document's id field, or file:row when it has none
	ColFile      = "file"      // input file the document came from
	ColRow       = "row"       // 0-based row (line) in that file
	ColTokens    = "tokens"    // tokens the model saw for the document (<bos> included)
	ColTruncated = "truncated" // the document was cut to max_tokens
)

// Task columns.
const (
	ColLabel        = "label"          // classify: most probable label
	ColScore        = "score"          // classify: its probability
	ColProbs        = "probs"          // classify: probabilities in label order (schema metadata onecore.labels)
	ColLabels       = "labels"         // classify, multilabel head: every label whose probability reaches its threshold
	ColValue        = "value"          // classify, regression head: the predicted value
	ColMeanLogprob  = "mean_logprob"   // score: mean natural-log probability per predicted token
	ColPerplexity   = "perplexity"     // score: exp(−mean_logprob)
	ColBitsPerByte  = "bits_per_byte"  // score: −Σ log2 p(token) / UTF-8 bytes of the text the scored tokens cover
	ColAnswer       = "answer"         // extract: the decoded answer text
	ColAnswerLogp   = "answer_logprob" // extract: summed log-prob of the answer tokens
	ColAbstained    = "abstained"      // extract: no answer (empty, or an abstain string; span head: "not present" won)
	ColAnswerStart  = "answer_start"   // extract: character offset of the answer in the document (null: abstained or generated)
	ColAnswerEnd    = "answer_end"     // extract: character offset just past the answer (answer = text[start:end])
	ColEmbedding    = "embedding"      // embed: mean-pooled final hidden state
	MetaLabels      = "onecore.labels"
	MetaHead        = "onecore.head"
	MetaTask        = "onecore.task"
	MetaFingerprint = "onecore.job"
)

// Classifier head kinds, as generation.json's "head" names them: they decide
// the classify columns.
const (
	HeadMulticlass = "multiclass" // label, score, probs (softmax)
	HeadMultilabel = "multilabel" // labels, probs (a sigmoid per label)
	HeadRegression = "regression" // value
)

// OutputSchema is the fixed Arrow schema of a task's output rows: the common
// columns, the task's columns (for classify, those of the head kind; ""
// means HeadMulticlass), then one nullable utf8 column per name in keep
// (the --keep output columns: see Job.KeepColumns; strings are copied as
// they are, other JSON values as their JSON text).
func OutputSchema(task Task, head string, keep []string) *arrow.Schema {
	fields := []arrow.Field{
		{Name: ColID, Type: arrow.BinaryTypes.String},
		{Name: ColFile, Type: arrow.BinaryTypes.String},
		{Name: ColRow, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColTokens, Type: arrow.PrimitiveTypes.Int32},
		{Name: ColTruncated, Type: arrow.FixedWidthTypes.Boolean},
	}
	switch task {
	case TaskClassify:
		switch head {
		case HeadMultilabel:
			fields = append(fields,
				arrow.Field{Name: ColLabels, Type: arrow.ListOf(arrow.BinaryTypes.String)},
				arrow.Field{Name: ColProbs, Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
			)
		case HeadRegression:
			fields = append(fields, arrow.Field{Name: ColValue, Type: arrow.PrimitiveTypes.Float32})
		default:
			fields = append(fields,
				arrow.Field{Name: ColLabel, Type: arrow.BinaryTypes.String},
				arrow.Field{Name: ColScore, Type: arrow.PrimitiveTypes.Float32},
				arrow.Field{Name: ColProbs, Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
			)
		}
	case TaskScore:
		fields = append(fields,
			arrow.Field{Name: ColMeanLogprob, Type: arrow.PrimitiveTypes.Float64},
			arrow.Field{Name: ColPerplexity, Type: arrow.PrimitiveTypes.Float64},
			arrow.Field{Name: ColBitsPerByte, Type: arrow.PrimitiveTypes.Float64},
		)
	case TaskExtract:
		fields = append(fields,
			arrow.Field{Name: ColAnswer, Type: arrow.BinaryTypes.String},
			arrow.Field{Name: ColAnswerLogp, Type: arrow.PrimitiveTypes.Float32},
			arrow.Field{Name: ColAbstained, Type: arrow.FixedWidthTypes.Boolean},
			arrow.Field{Name: ColAnswerStart, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: ColAnswerEnd, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		)
	case TaskEmbed:
		fields = append(fields,
			arrow.Field{Name: ColEmbedding, Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
		)
	}
	for _, k := range keep {
		fields = append(fields, arrow.Field{Name: k, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

// SchemaFor is OutputSchema with the job's metadata attached (task, job
// fingerprint and, for classify, the head kind and the label order of the
// probs column; a regression head's one label is its target's name).
func SchemaFor(j *Job, labels []string, head string) *arrow.Schema {
	if head == "" {
		head = HeadMulticlass
	}
	s := OutputSchema(j.Task, head, j.KeepColumns())
	keys := []string{MetaTask, MetaFingerprint}
	vals := []string{string(j.Task), j.Fingerprint()}
	if j.Task == TaskClassify {
		keys = append(keys, MetaLabels, MetaHead)
		vals = append(vals, encodeLabels(labels), head)
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(s.Fields(), &md)
}

func encodeLabels(labels []string) string {
	b, _ := json.Marshal(labels)
	return string(b)
}
