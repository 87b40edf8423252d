package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/onecore-dev/onecore/engine/tokenizer"
	"github.com/onecore-dev/onecore/models"
	"github.com/onecore-dev/onecore/train"
)

// hfTokenizer adapts the tokenizer package to train.Tokenizer.
type hfTokenizer struct{ t *tokenizer.Tokenizer }

// Corpus text is encoded as ordinary text, exactly as the pipeline
// encodes documents at inference time: "<bos>" written in a document is
// text, not a document boundary.
func (h hfTokenizer) Encode(s string) []int32 { return h.t.EncodeOrdinary(s) }
func (h hfTokenizer) EncodeBatch(texts []string) [][]int32 {
	return h.t.EncodeBatchOrdinary(texts, 0)
}
func (h hfTokenizer) Decode(ids []int32) string { return h.t.Decode(ids, true) }

// loadTokenizer loads tokenizer.json and checks it against the model's
// vocabulary and special ids.
func loadTokenizer(path string, vocab int) (hfTokenizer, error) {
	t, err := tokenizer.Load(path)
	if err != nil {
		return hfTokenizer{}, err
	}
	if t.VocabSize() > vocab {
		return hfTokenizer{}, usageError{fmt.Errorf("%s has %d tokens but the model's vocab_size is %d", path, t.VocabSize(), vocab)}
	}
	return hfTokenizer{t}, nil
}

// trainTerm couples the train commands' log lines with their progress
// bar on a terminal: a log line clears the bar, is written, and the bar is
// drawn again below it, so both stay readable.
type trainTerm struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

var term0 = &trainTerm{}

func (t *trainTerm) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar != nil {
		t.bar.Clear()
	}
	n, err := os.Stderr.Write(p)
	if t.bar != nil {
		t.bar.RenderBlank()
	}
	return n, err
}

// progressFunc returns a progress-bar factory when stderr is a terminal
// (off a terminal the periodic log lines say the same): steps done of the
// total, the ETA, and the loss, learning rate and tokens/s.
func progressFunc() func(total int64) func(int64, string) {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	return func(total int64) func(int64, string) {
		bar := progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription("steps"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(250e6),
			progressbar.OptionClearOnFinish())
		term0.mu.Lock()
		term0.bar = bar
		term0.mu.Unlock()
		return func(done int64, desc string) {
			term0.mu.Lock()
			defer term0.mu.Unlock()
			if desc != "" {
				bar.Describe(desc)
			}
			bar.Set64(done)
			if done >= total {
				term0.bar = nil
			}
		}
	}
}

// workersHelp explains --workers and --micro-batch in the train commands' help.
const workersHelp = `
--workers N runs N training threads, each pinned to its own core (default:
every core this process may use). Each step's batch is cut into
micro-batches (--micro-batch rows each, by default as few as make at
most 16 micro-batches: 1 row up to --batch 16; classify: documents up to
--max-tokens), each with its own gradient buffer; the buffers are summed in
micro-batch order and one AdamW step follows. Results do not depend on
--workers: 1, 2 or 16 workers give bit-identical weights, and a run may be
resumed with a different --workers. They do depend on --micro-batch (and on
the batch), which therefore must stay the same on --resume. More workers
than micro-batches per step are not used; every micro-batch holds a
gradient buffer the size of the model.`

// addWorkersFlag registers --workers.
func addWorkersFlag(cmd *cobra.Command, n *int) {
	cmd.Flags().IntVar(n, "workers", 0, "training threads, one pinned per core (default: usable cores); results do not depend on it")
}

// addMicroBatchFlag registers --micro-batch.
func addMicroBatchFlag(cmd *cobra.Command, n *int) {
	cmd.Flags().IntVar(n, "micro-batch", 0, "rows per micro-batch, the unit of work of one worker (default: batch/16 rounded up; results depend on it)")
}

// signalContext is cancelled by SIGINT/SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// trainLogger writes the train commands' log lines to stderr (above the
// progress bar on a terminal).
func trainLogger() *slog.Logger { return slog.New(slog.NewTextHandler(term0, nil)) }

func newTrainPretrainCmd() *cobra.Command {
	var (
		configPath, tokPath, out, textField string
		data                                []string
		o                                   train.PretrainOptions
	)
	cmd := &cobra.Command{
		Use:   "pretrain",
		Short: "Pretrain a model from scratch on text (sampled softmax, AdamW)",
		Long: `Pretrain trains the hybrid model of docs/design.md §2 from scratch on the CPU cores.

Documents (<bos> text <eos>) are packed whole into rows of --seq-len tokens;
each step trains --batch rows with the sampled-softmax objective
(1 + --negatives)-way discrimination against negatives drawn from the
training data's unigram distribution, with the log-q correction), AdamW with
fp32 master weights and bf16 GEMMs, linear warmup then cosine decay, and
gradient clipping. A held-out split (--val-permille of the documents, chosen
by a hash of their text) gives the full-vocabulary validation loss val_flat;
every eval also runs the induct/shift/add probes and prints greedy samples.

--data takes directories (every text file below them is a document),
.jsonl/.ndjson files (optionally .gz/.zst; one document per line, field
--text-field) or plain text files (one document each), and globs.

The data is tokenized once, as a stream on --tokenize-workers goroutines
with progress lines (docs, MB, tok/s, ETA), into a token cache (--cache,
default OUT/tokcache): 2-byte tokens (4 above 65536 ids) plus document
offsets and unigram counts. Training reads tokens from it on demand, so
memory stays flat however large the corpus. The cache is keyed by the
input files' paths, sizes and mtimes, --text-field, the tokenizer and
--val-permille: a rerun or --resume reuses it, a changed input builds a new
one, and an interrupted build is never used (it is redone).

The output directory is a checkpoint (config.json, model.safetensors,
generation.json with the vocabulary mask, tokenizer.json) plus train_state/
(master weights, optimizer moments, data cursor) and metrics.jsonl. It is
rewritten every --ckpt-every tokens, at the end, and on SIGINT/SIGTERM;
after any stop, even SIGKILL, the same command with --resume continues from
the last checkpoint with the same data order and random draws.
` + workersHelp,
		Example: `  onecore train pretrain --config dense-3m --data corpus/ --tokenizer tok/tokenizer.json --out runs/m1 --tokens 50000000
  onecore train pretrain --config my.json --data 'shards/*.jsonl.zst' --tokenizer tokenizer.json --out runs/m2 --batch 8 --seq-len 256
  onecore train pretrain --config dense-3m --data corpus/ --tokenizer tokenizer.json --out runs/m1 --tokens 50000000 --resume
  onecore train pretrain --config runs/m1/config.json --init-from runs/m1 --data more/ --tokenizer runs/m1/tokenizer.json --out runs/m1b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := normTrainData(data)
			if err != nil {
				return err
			}
			data = d
			if len(data) == 0 || tokPath == "" || out == "" {
				return usageError{errors.New("--data, --tokenizer and --out are required")}
			}
			cfg, err := train.LoadConfig(configPath)
			if err != nil {
				return usageError{err}
			}
			tok, err := loadTokenizer(tokPath, cfg.VocabSize)
			if err != nil {
				return err
			}
			if n := tok.t.VocabSize(); n < cfg.VocabSize {
				// A preset's vocab_size is only a default: size the
				// embedding to the tokenizer instead of training rows for
				// ids that never occur. A config file's value is the user's.
				if _, statErr := os.Stat(configPath); statErr != nil {
					trainLogger().Info("vocab_size set to the tokenizer's", "preset", configPath, "preset_vocab_size", cfg.VocabSize, "vocab_size", n, "tokenizer", tokPath)
					cfg.VocabSize = n
				} else {
					trainLogger().Warn("the config's vocab_size is larger than the tokenizer's: ids from the tokenizer's size up are never used", "config", configPath, "vocab_size", cfg.VocabSize, "tokenizer_ids", n)
				}
			}
			o.Config, o.Tokenizer, o.TokenizerPath = cfg, tok, tokPath
			o.Data, o.TextField, o.Out = data, textField, out
			o.Log = trainLogger()
			o.Progress = progressFunc()
			ctx, stop := signalContext()
			defer stop()
			err = train.Pretrain(ctx, o)
			if errors.Is(err, train.ErrInterrupted) || errors.Is(err, train.ErrInterruptedEarly) {
				return withExitCode(exitInterrupted, err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "dense-3m", "model config: a JSON/YAML file or a preset (dense-3m, moe-3m)")
	f.StringArrayVar(&data, "data", nil, "training data: directory, .jsonl[.gz|.zst], text file or glob (repeatable)")
	f.StringVar(&textField, "text-field", "text", "JSONL field holding the document text")
	f.StringVar(&o.Cache, "cache", "", "token cache directory (default: OUT/tokcache; runs over the same data may share one)")
	f.IntVar(&o.TokenizeWorkers, "tokenize-workers", 0, "goroutines tokenizing the data into the cache (0: all cores; the cache does not depend on it)")
	f.StringVar(&tokPath, "tokenizer", "", "tokenizer.json (copied into the checkpoint)")
	f.StringVar(&out, "out", "", "output checkpoint directory")
	f.BoolVar(&o.Resume, "resume", false, "continue the run in --out from its last checkpoint")
	f.StringVar(&o.InitFrom, "init-from", "", "start from this checkpoint's weights (same config) instead of random ones")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed (initialisation, data order, negatives)")
	f.Int64Var(&o.Tokens, "tokens", 20_000_000, "training tokens in total")
	f.IntVar(&o.SeqLen, "seq-len", 256, "tokens per training row")
	f.IntVar(&o.Batch, "batch", 16, "rows per step")
	f.Float64Var(&o.LR, "lr", 3e-3, "peak learning rate")
	f.Float64Var(&o.MinLR, "min-lr", 3e-4, "final learning rate of the cosine decay")
	f.Int64Var(&o.Warmup, "warmup", 200, "linear warmup steps")
	f.Float64Var(&o.WeightDecay, "weight-decay", 0.1, "AdamW weight decay (matrices only)")
	f.Float64Var(&o.Clip, "clip", 1.0, "clip the global gradient norm to this (0: off)")
	f.IntVar(&o.Negatives, "negatives", 512, "sampled-softmax negatives per step")
	f.Float64Var(&o.AuxCoef, "aux-coef", 0.01, "MoE load-balancing loss weight")
	f.IntVar(&o.ValPermille, "val-permille", 10, "held-out documents per thousand")
	f.IntVar(&o.ValTokens, "val-tokens", 65536, "tokens of the held-out split used per eval")
	f.Int64Var(&o.EvalEvery, "eval-every", 2_000_000, "evaluate every N training tokens (0: only at the end)")
	f.Int64Var(&o.CkptEvery, "ckpt-every", 5_000_000, "checkpoint every N training tokens (0: only at the end)")
	f.IntVar(&o.LogEvery, "log-every", 10, "log a line every N steps")
	f.IntVar(&o.Generations, "generations", 2, "greedy samples printed per eval")
	addWorkersFlag(cmd, &o.Workers)
	addMicroBatchFlag(cmd, &o.MicroBatch)
	return cmd
}

func init() { trainCmd.AddCommand(newTrainPretrainCmd()) }

// loadFrom resolves a checkpoint given as --from (or --model) and loads its
// tokenizer, checked against its config's vocabulary: the directory, the
// tokenizer and the tokenizer's path.
func loadFrom(from string) (string, hfTokenizer, string, error) {
	dir, err := resolveFrom(from)
	if err != nil {
		return "", hfTokenizer{}, "", err
	}
	cfg, err := train.LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return "", hfTokenizer{}, "", err
	}
	tokPath := filepath.Join(dir, "tokenizer.json")
	tok, err := loadTokenizer(tokPath, cfg.VocabSize)
	if err != nil {
		return "", hfTokenizer{}, "", err
	}
	return dir, tok, tokPath, nil
}

// bundledNames lists the bundled models' names for flag help texts.
var bundledNames = strings.Join(models.Bundled, ", ")

// resolveFrom is --from's checkpoint directory: a directory as given, or
// the name of a bundled model (models.Bundled) when no such directory exists.
func resolveFrom(from string) (string, error) {
	if from == "" {
		return "", usageError{errors.New("--from is required (a checkpoint directory, or the bundled base model: --from base)")}
	}
	if _, err := os.Stat(from); err == nil || !slices.Contains(models.Bundled, from) {
		return from, nil
	}
	return models.BundledDir(from)
}
