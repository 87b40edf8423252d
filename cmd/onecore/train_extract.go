package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/train"
)

func newTrainExtractCmd() *cobra.Command {
	var (
		from, out string
		data      []string
		o         train.ExtractOptions
	)
	cmd := &cobra.Command{
		Use:   "extract",
		Short: "Train a span-extraction head (and the body) on question/answer records",
		Long: `Extract trains head.span on JSON Lines records {text, question?, answer} and
writes a checkpoint with which ` + "`onecore extract --task extract`" + ` answers with
spans of the document: every answer is a substring of the document by
construction, with its character offsets.

The model reads <bos> "Question: {question}\n" followed by the document's
first --max-tokens − 1 tokens: the question comes first so that, in a causal
model, every document token has seen it. From the final RMSNorm output the
head scores each document token's start at its own position and its end at
the next one (an <eos> follows the document), which has seen the token that
closes the field (head.span.w [d_model, 2]; generation.json span_end_next);
"not present" is scored by the same head at the prompt's last token. The loss
is cross-entropy over {not present} ∪ document tokens, for the start and for
the end; decoding takes the best start ≤ end within --max-span tokens, or
abstains when "not present" scores at least as high.

Records: text (a string); question (a string; null or absent: --question);
answer: a string (its first occurrence in text; it must occur), character
offsets {"start":s,"end":e} or [s,e] (Unicode code points, end exclusive), or
null/absent when the document does not contain it. A malformed record stops
the run naming its file and line. Answers beyond --max-tokens train as "not
present" and are counted in the log.

--layers N keeps only the source's first N layers (the embedding, those
layers and the final norm) and trains the head on that shallower body: about
N/6 of the bundled base's cost per token, so more documents per second for
some accuracy (measured in the README, "Extract fields from your corpus";
extract needs nothing else, the checkpoint's config says how deep it is).

The body is fine-tuned with the head (learning rate --lr, the fresh head
--head-lr) unless --freeze. A held-out split (--val-permille, by a hash of
question and text) reports exact match, token F1 and abstention
precision/recall at the start, every --eval-every steps and at the end, with
--samples decoded examples (question, gold, predicted).

At the end the "not present" decision is tuned on that split: the threshold
added to the "not present" score that maximises held-out exact match (0, the
head's own decision, unless another value does strictly better) is saved as
generation.json's span_threshold, which extract applies (--span-threshold
shifts it further). The log shows the exact match before and after.

When every answer in the data starts and ends at a word boundary (no letter
or digit on both sides of either edge), generation.json also gets
span_whole_words: extract then widens an answer whose edge falls inside a
word to the whole word (a head one token off answers "aniel" for "Daniel"
otherwise). One answer inside a word ("42" of "v42") leaves it off; the
"extract data" log line says which (whole_words).

Likewise, when no answer in the data holds a line break (white space at its
ends aside), generation.json gets span_one_line: extract, and the held-out
evaluation here, then choose among spans that stay on one line of the
document (the start and end are scored apart, and a head can otherwise join
"Regards" at the end of one line to the name on the next). One answer over
two lines leaves it off (one_line in the same log line).

The output directory gets a checkpoint plus train_state/ (master weights,
optimizer moments, record order) at the start, every --ckpt-every steps, at
the end and on SIGINT/SIGTERM; after any stop, even SIGKILL, the same command
with --resume continues bit for bit.
` + workersHelp,
		Example: `  onecore train extract --from base --data qa.jsonl --out runs/qa
  onecore train extract --from base --data invoices.jsonl.zst --question 'What is the invoice number?' --out runs/inv --epochs 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := normTrainData(data)
			if err != nil {
				return err
			}
			data = d
			if from == "" || len(data) == 0 || out == "" {
				return usageError{errors.New("--from, --data and --out are required")}
			}
			if o.LR <= 0 || o.HeadLR <= 0 || o.Epochs <= 0 || o.BatchTokens < 1 {
				return usageError{errors.New("--lr, --head-lr, --epochs and --batch-tokens must be positive")}
			}
			if o.Layers < 0 {
				return usageError{fmt.Errorf("--layers %d: want a number of layers (0: all)", o.Layers)}
			}
			from, tok, tokPath, err := loadFrom(from)
			if err != nil {
				return err
			}
			o.From, o.Out, o.Data = from, out, data
			o.Tokenizer, o.TokenizerPath = tok, tokPath
			o.Log = trainLogger()
			o.Progress = progressFunc()
			ctx, stop := signalContext()
			defer stop()
			rep, err := train.Extract(ctx, o)
			if errors.Is(err, train.ErrInterrupted) || errors.Is(err, train.ErrInterruptedEarly) {
				return withExitCode(exitInterrupted, err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "held-out: exact match %.4f  F1 %.4f  abstention precision %.4f recall %.4f  (%d records)\n",
				rep.ExactMatch, rep.F1, rep.AbstainPrecision, rep.AbstainRecall, rep.N)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "source checkpoint directory (with tokenizer.json), or a bundled model: base, base-small, base-tiny")
	f.StringArrayVar(&data, "data", nil, "JSON Lines file(s) of {text, question?, answer} records (.gz/.zst allowed; repeatable)")
	f.StringVar(&out, "out", "", "output checkpoint directory")
	f.StringVar(&o.TextField, "text-field", "text", "record field holding the document text")
	f.StringVar(&o.QuestionField, "question-field", "question", "record field holding the question")
	f.StringVar(&o.AnswerField, "answer-field", "answer", "record field holding the answer")
	f.StringVar(&o.Question, "question", "", "question of records without one")
	f.IntVar(&o.MaxTokens, "max-tokens", 512, "document tokens, <bos> included (longer documents are truncated; the question is extra)")
	f.IntVar(&o.ValPermille, "val-permille", 100, "held-out records per thousand")
	f.Float64Var(&o.Epochs, "epochs", 3, "training epochs")
	f.Float64Var(&o.LR, "lr", 3e-4, "peak learning rate of the body (warmup, then cosine to a tenth)")
	f.Float64Var(&o.HeadLR, "head-lr", 3e-3, "peak learning rate of the span head")
	f.BoolVar(&o.Freeze, "freeze", false, "train the head only; the body's weights stay as they are")
	f.IntVar(&o.BatchTokens, "batch-tokens", 2048, "tokens per step")
	f.Float64Var(&o.WeightDecay, "weight-decay", 0.0, "AdamW weight decay")
	f.IntVar(&o.MaxSpan, "max-span", 64, "longest answer, in tokens, when decoding held-out records")
	f.Int64Var(&o.EvalEvery, "eval-every", 100, "evaluate on the held-out split every N steps (0: at the start and the end only)")
	f.IntVar(&o.Samples, "samples", 5, "held-out examples printed at each evaluation")
	f.IntVar(&o.Layers, "layers", 0, "keep only the source's first N layers: a shallower, faster extractor (0: all)")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed")
	f.Int64Var(&o.CkptEvery, "ckpt-every", 200, "checkpoint every N steps (0: only at the end and on SIGINT/SIGTERM)")
	f.BoolVar(&o.Resume, "resume", false, "continue the run in --out from its last checkpoint")
	addWorkersFlag(cmd, &o.Workers)
	return cmd
}

func init() { trainCmd.AddCommand(newTrainExtractCmd()) }
