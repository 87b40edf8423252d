package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/train"
)

func newTrainProbeCmd() *cobra.Command {
	var (
		o      train.ProbeOptions
		from   string
		data   []string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "probe --model CKPT --data CORPUS",
		Short: "Measure a checkpoint's copy (induction) probes over many draws",
		Long: `probe runs the copy probes a pretraining run prints at each eval — induct:
[bos] x1..x16 x1..x16, the accuracy of greedy predictions on the repeat;
shift: the repeat rotated by 8 — for --seeds draws of their tokens, each
drawn from --data's token frequencies as a run over that corpus draws them
(seed k is what a run with --seed k prints; 1 is the default run's).

One eval's probe is 240 items from one draw: the tokens drawn move its
score by more than its binomial noise, so a single eval cannot tell 0.45
from 0.55. probe reports the mean over the draws, its standard error, and
each draw. The corpus is tokenized into a token cache (--cache, shared with
pretraining runs over the same data) unless it is there already.`,
		Example: `  onecore train probe --model base --data corpus/ --cache runs/tokcache
  onecore train probe --model runs/m1 --data corpus/ --seeds 40 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := normTrainData(data)
			if err != nil {
				return err
			}
			if from == "" || len(d) == 0 {
				return usageError{errors.New("--model and --data are required")}
			}
			if o.Rows < 1 || o.Seeds < 1 {
				return usageError{fmt.Errorf("--rows %d and --seeds %d must be positive", o.Rows, o.Seeds)}
			}
			dir, tok, tokPath, err := loadFrom(from)
			if err != nil {
				return err
			}
			o.Checkpoint, o.Data, o.Tokenizer, o.TokenizerPath = dir, d, tok, tokPath
			if o.Cache == "" {
				o.Cache = filepath.Join(os.TempDir(), "onecore-probe-tokcache")
			}
			ctx, stop := signalContext()
			defer stop()
			r, err := train.Probe(ctx, o, trainLogger())
			if err != nil {
				return err
			}
			if asJSON {
				b, _ := json.MarshalIndent(r, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: %d draws × %d rows (%d items per probe)\n", r.Checkpoint, r.Seeds, r.Rows, r.Items)
			for _, p := range []struct {
				name string
				s    train.ProbeStat
			}{{"induct", r.Induct}, {"shift", r.Shift}} {
				fmt.Fprintf(w, "  %-6s mean %.3f ± %.3f (standard error), draws %.3f … %.3f\n", p.name, p.s.Mean, p.s.StdErr, p.s.Min, p.s.Max)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "model", "", "checkpoint directory, or a bundled model: "+bundledNames)
	f.StringArrayVar(&data, "data", nil, "the corpus the probes draw token frequencies from: directory, .jsonl[.gz|.zst], text file or glob (repeatable)")
	f.StringVar(&o.TextField, "text-field", "text", "JSONL field holding the document text")
	f.StringVar(&o.Cache, "cache", "", "token cache directory (default: onecore-probe-tokcache in the temporary directory)")
	f.IntVar(&o.ValPermille, "val-permille", 10, "held-out documents per thousand left out of the frequencies (as the run had: train pretrain's --val-permille)")
	f.IntVar(&o.TokenizeWorkers, "tokenize-workers", 0, "goroutines tokenizing into the cache (0: all cores)")
	f.IntVar(&o.Rows, "rows", 16, "rows per probe and draw (a run's evals use 16)")
	f.IntVar(&o.Seeds, "seeds", 20, "draws: seeds 1…N")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON (per-draw scores included)")
	return cmd
}

func init() { trainCmd.AddCommand(newTrainProbeCmd()) }
