package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/train"
)

func newTrainClassifyCmd() *cobra.Command {
	var (
		from, out string
		data      []string
		o         train.ClassifyOptions
	)
	cmd := &cobra.Command{
		Use:   "classify",
		Short: "Train a classifier head (and optionally the body) on labeled documents",
		Long: `Classify trains head.cls on labeled JSONL documents and writes a checkpoint
that ` + "`onecore classify`/`extract`" + ` use directly.

The head reads the mean over all of a document's positions (<bos> included)
of the final-RMSNorm output: logits = mean · head.cls.w + head.cls.b.
Documents are fed as the pipeline feeds them: <bos> plus their first
--max-tokens − 1 tokens. Labels are the distinct values of --label-field
(strings; numbers and booleans as their JSON text), sorted, and stored in
generation.json in head column order.

--head multilabel reads a JSON array of labels per record (a plain string
is a set of one, [] none) and trains a sigmoid per label; each label's
threshold is tuned for F1 on the held-out split and stored in
generation.json; classify then writes labels (those at or above their
thresholds) and probs. --head regression reads a number per record, trains
on the standardized target and saves a head that outputs target units;
classify then writes value.

--layers N keeps only the source's first N layers (the embedding, those
layers and the final norm): a shallower body, about N/6 of the bundled
base's cost per token, for more documents per second at some accuracy;
classify reads the depth from the checkpoint's config.

First the head is fitted on frozen features (a linear probe); then (unless
--finetune=false) the body and head are trained together, for --epochs
passes over the training documents: by default as many as it takes to see
about 3 M training tokens, at least 1 and at most 6 (a 0.5 M-token set gets
6, a 3 M-token one 1). A held-out split (--val-permille, chosen by a hash of
the text) reports accuracy, macro-F1 and per-label F1 after the probe, after
every epoch and at the end.

The output directory gets a checkpoint plus train_state/ (master weights,
optimizer moments, document order) once the head is fitted, every
--ckpt-every fine-tuning steps, at the end and on SIGINT/SIGTERM; after any
stop, even SIGKILL, the same command with --resume continues bit for bit
(an interruption before the head is fitted saves nothing: rerun).
` + workersHelp,
		Example: `  onecore train classify --from base --data spam.jsonl --label-field label --out runs/spam
  onecore train classify --from runs/base --data reviews.jsonl.zst --text-field body --label-field stars --out runs/stars --epochs 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := normTrainData(data)
			if err != nil {
				return err
			}
			data = d
			if from == "" || len(data) == 0 || out == "" || o.LabelField == "" {
				return usageError{errors.New("--from, --data, --label-field and --out are required")}
			}
			if o.Epochs < 0 {
				return usageError{fmt.Errorf("--epochs %g: want a positive number, or 0 for epochs scaled to the data", o.Epochs)}
			}
			if o.Layers < 0 {
				return usageError{fmt.Errorf("--layers %d: want a number of layers (0: all)", o.Layers)}
			}
			switch o.Head {
			case engine.HeadMulticlass, engine.HeadMultilabel, engine.HeadRegression:
			default:
				return usageError{fmt.Errorf("--head %q: want multiclass, multilabel or regression", o.Head)}
			}
			switch o.Pooling {
			case engine.PoolMean, engine.PoolLast:
			case engine.PoolAttention:
				if !o.Finetune {
					return usageError{errors.New("--pooling attention learns its query in fine-tuning: drop --finetune=false")}
				}
			default:
				return usageError{fmt.Errorf("--pooling %q: want mean, last or attention", o.Pooling)}
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
			rep, err := train.Classify(ctx, o)
			if errors.Is(err, train.ErrInterrupted) || errors.Is(err, train.ErrInterruptedEarly) {
				return withExitCode(exitInterrupted, err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "source checkpoint directory (with tokenizer.json), or a bundled model: "+bundledNames)
	f.StringArrayVar(&data, "data", nil, "JSONL file(s) of labeled documents (.gz/.zst allowed; repeatable)")
	f.StringVar(&out, "out", "", "output checkpoint directory")
	f.StringVar(&o.TextField, "text-field", "text", "record field holding the document text")
	f.StringVar(&o.LabelField, "label-field", "", "record field holding the label (multilabel: a JSON array of labels; regression: a number)")
	f.StringVar(&o.Pooling, "pooling", "mean", "how the head sees a document: mean (of every position), last (position) or attention (a learned query; needs --finetune)")
	f.StringVar(&o.Head, "head", "multiclass", "head kind: multiclass (one label, softmax), multilabel (any labels, a sigmoid and threshold per label) or regression (a number)")
	f.IntVar(&o.MaxTokens, "max-tokens", 512, "tokens per document, <bos> included (longer ones are truncated)")
	f.IntVar(&o.ValPermille, "val-permille", 100, "held-out documents per thousand")
	f.IntVar(&o.HeadEpochs, "head-steps", 300, "full-batch steps fitting the head on frozen features")
	f.Float64Var(&o.HeadLR, "head-lr", 0.05, "learning rate of the head fit")
	f.BoolVar(&o.Finetune, "finetune", true, "then fine-tune body and head together (--finetune=false: the linear probe only)")
	f.Float64Var(&o.Epochs, "epochs", 0, "fine-tuning epochs (0: scaled to the data, enough to see ~3 M training tokens, 1 to 6 epochs)")
	f.Float64Var(&o.LR, "lr", 3e-4, "fine-tuning learning rate")
	f.IntVar(&o.BatchTokens, "batch-tokens", 4096, "fine-tuning tokens per step")
	f.Float64Var(&o.WeightDecay, "weight-decay", 0.0, "AdamW weight decay")
	f.IntVar(&o.Layers, "layers", 0, "keep only the source's first N layers: a shallower, faster classifier (0: all)")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed")
	f.Int64Var(&o.CkptEvery, "ckpt-every", 200, "checkpoint the fine-tuning every N steps (0: only at the end and on SIGINT/SIGTERM)")
	f.BoolVar(&o.Resume, "resume", false, "continue the run in --out from its last checkpoint")
	addWorkersFlag(cmd, &o.Workers)
	return cmd
}

func init() { trainCmd.AddCommand(newTrainClassifyCmd()) }
