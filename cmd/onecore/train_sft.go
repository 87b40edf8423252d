package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/train"
)

func newTrainSFTCmd() *cobra.Command {
	var (
		from, out string
		data      []string
		o         train.SFTOptions
	)
	cmd := &cobra.Command{
		Use:   "sft",
		Short: "Supervised fine-tuning on prompt/answer records",
		Long: `SFT fine-tunes a checkpoint on JSONL records holding a prompt and an answer.

Each record becomes <bos> prompt answer <eos>; the loss (full-vocabulary
cross-entropy) covers the answer tokens and the closing <eos> only, so the
model learns both the answer and where to stop. Prompt and answer are
tokenized separately, as at inference time (the prompt is encoded, the answer
generated). Records are packed into rows of --seq-len tokens.

Stages chain: the output is a checkpoint that --from accepts again (e.g.
stopping → extraction skill → abstention → vocabulary hygiene). The
vocabulary mask in generation.json keeps the source's masked ids except
those the SFT data uses; a classifier head of the source is dropped.
A held-out split (--val-permille) reports answer loss, exact-match and
stop rates of greedy generations before and after training.

The output directory gets a checkpoint plus train_state/ (master weights,
optimizer moments, data cursor) every --ckpt-every steps, at the end and on
SIGINT/SIGTERM; after any stop, even SIGKILL, the same command with
--resume continues bit for bit where the last checkpoint left off.
` + workersHelp,
		Example: `  onecore train sft --from base --data stage1.jsonl --out runs/sft1
  onecore train sft --from runs/sft1 --data extract.jsonl --out runs/sft2 --prompt-field input --answer-field output --epochs 3`,
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
			err = train.SFT(ctx, o)
			if errors.Is(err, train.ErrInterrupted) || errors.Is(err, train.ErrInterruptedEarly) {
				return withExitCode(exitInterrupted, err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "source checkpoint directory (with tokenizer.json), or a bundled model: "+bundledNames)
	f.StringArrayVar(&data, "data", nil, "JSONL file(s) of prompt/answer records (.gz/.zst allowed; repeatable)")
	f.StringVar(&out, "out", "", "output checkpoint directory")
	f.StringVar(&o.PromptField, "prompt-field", "prompt", "record field holding the prompt")
	f.StringVar(&o.AnswerField, "answer-field", "answer", "record field holding the answer")
	f.Float64Var(&o.Epochs, "epochs", 2, "passes over the training records")
	f.IntVar(&o.SeqLen, "seq-len", 256, "tokens per training row")
	f.IntVar(&o.Batch, "batch", 8, "rows per step")
	f.Float64Var(&o.LR, "lr", 5e-4, "peak learning rate")
	f.Float64Var(&o.MinLR, "min-lr", 5e-5, "final learning rate")
	f.Int64Var(&o.Warmup, "warmup", 20, "warmup steps")
	f.Float64Var(&o.WeightDecay, "weight-decay", 0.0, "AdamW weight decay")
	f.Float64Var(&o.Clip, "clip", 1.0, "gradient-norm clip (0: off)")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed (record order)")
	f.IntVar(&o.ValPermille, "val-permille", 50, "held-out records per thousand")
	f.IntVar(&o.LogEvery, "log-every", 10, "log a line every N steps")
	f.IntVar(&o.Samples, "samples", 20, "held-out prompts answered greedily at each eval")
	f.Int64Var(&o.CkptEvery, "ckpt-every", 200, "checkpoint every N steps (0: only at the end and on SIGINT/SIGTERM)")
	f.BoolVar(&o.Resume, "resume", false, "continue the run in --out from its last checkpoint")
	addWorkersFlag(cmd, &o.Workers)
	addMicroBatchFlag(cmd, &o.MicroBatch)
	return cmd
}

func init() { trainCmd.AddCommand(newTrainSFTCmd()) }
