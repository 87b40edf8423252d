package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/engine/tokenizer"
	"github.com/onecore-dev/onecore/internal/atomicfile"
)

var trainTokFlags struct {
	in           []string
	out          string
	vocabSize    int
	specials     []string
	minFrequency int
	maxTokBytes  int
	textField    string
	workers      int
}

var trainTokenizerCmd = &cobra.Command{
	Use:   "tokenizer [FILES...]",
	Short: "Train a byte-level BPE tokenizer.json from text",
	Long: `tokenizer trains a byte-level BPE tokenizer (Llama-3 style pre-tokenization:
letters, digit groups of up to three, punctuation, whitespace; GPT-2 byte
alphabet, so any input is encodable) and writes a Hugging Face tokenizer.json.

Special tokens get the first ids: <pad>=0, <bos>=1, <eos>=2, then any --special
given (repeat the flag). Encoding with special tokens puts <bos> first.

Inputs (--in, repeatable, or positional) are plain text, or JSONL with
--text-field (any file ending in .jsonl also needs it); .gz and .zst are
decompressed. The output is written atomically (temporary file + rename).`,
	Example: `  onecore train tokenizer --in corpus.txt --vocab-size 16384 --out tokenizer.json
  onecore train tokenizer --in shards/*.jsonl.zst --text-field text --out tok.json
  onecore train tokenizer --in chat.txt --special '<|user|>' --special '<|assistant|>' --out tok.json`,
	RunE: runTrainTokenizer,
}

func init() {
	f := trainTokenizerCmd.Flags()
	f.StringArrayVar(&trainTokFlags.in, "in", nil, "input file (repeatable; more may follow as arguments)")
	f.StringVar(&trainTokFlags.out, "out", "tokenizer.json", "output tokenizer.json")
	f.IntVar(&trainTokFlags.vocabSize, "vocab-size", 16384, "total vocabulary size (specials + 256 bytes + merges)")
	f.StringArrayVar(&trainTokFlags.specials, "special", nil, "extra special token after <pad>, <bos>, <eos> (repeatable)")
	f.IntVar(&trainTokFlags.minFrequency, "min-frequency", 2, "stop when the best pair occurs fewer times")
	f.IntVar(&trainTokFlags.maxTokBytes, "max-token-bytes", 0, "longest learned token in bytes (0 = no limit)")
	f.StringVar(&trainTokFlags.textField, "text-field", "", "read JSONL and train on this string field")
	f.IntVar(&trainTokFlags.workers, "workers", runtime.GOMAXPROCS(0), "pre-tokenizing goroutines")
	trainCmd.AddCommand(trainTokenizerCmd)
}

func runTrainTokenizer(cmd *cobra.Command, args []string) error {
	fl := trainTokFlags
	files := append(append([]string{}, fl.in...), args...)
	if len(files) == 0 {
		return usageError{fmt.Errorf("no input: give --in FILE")}
	}
	for _, f := range files {
		if fl.textField == "" && (strings.HasSuffix(f, ".jsonl") || strings.Contains(f, ".jsonl.")) {
			return usageError{fmt.Errorf("%s: JSONL input needs --text-field", f)}
		}
		if _, err := os.Stat(f); err != nil {
			return err
		}
	}
	if fl.workers < 1 {
		return usageError{fmt.Errorf("--workers %d: want at least 1", fl.workers)}
	}
	specials := append(append([]string{}, tokenizer.DefaultSpecials...), fl.specials...)
	start := time.Now()
	var readErr error
	var nbytes int64
	texts := func(yield func(string) bool) {
		for _, f := range files {
			for s, err := range readTrainingText(f, fl.textField) {
				if err != nil {
					readErr = err
					return
				}
				nbytes += int64(len(s))
				if !yield(s) {
					return
				}
			}
		}
	}
	stderr := cmd.ErrOrStderr()
	lastLog := time.Now()
	data, err := tokenizer.TrainBPE(texts, tokenizer.TrainOptions{
		VocabSize:     fl.vocabSize,
		Specials:      specials,
		MinFrequency:  fl.minFrequency,
		MaxTokenBytes: fl.maxTokBytes,
		Workers:       fl.workers,
		Progress: func(done, target int) {
			if time.Since(lastLog) > 5*time.Second || done == target {
				fmt.Fprintf(stderr, "train tokenizer: %d/%d merges (%.0fs)\n", done, target, time.Since(start).Seconds())
				lastLog = time.Now()
			}
		},
	})
	if readErr != nil {
		return readErr
	}
	if err != nil {
		return err
	}
	tok, err := tokenizer.Parse(data)
	if err != nil {
		return fmt.Errorf("trained tokenizer does not load (bug): %v", err)
	}
	if err := atomicfile.WriteFile(fl.out, data); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "train tokenizer: %s: vocab %d from %.1f MB of text in %.1fs\n",
		fl.out, tok.VocabSize(), float64(nbytes)/1e6, time.Since(start).Seconds())
	return nil
}

// readTrainingText yields a file's text: JSONL field values, or plain text
// in chunks of about 1 MB cut after a newline.
func readTrainingText(path, field string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield("", err)
			return
		}
		defer f.Close()
		var r io.Reader = f
		switch {
		case strings.HasSuffix(path, ".gz"):
			gz, err := gzip.NewReader(f)
			if err != nil {
				yield("", fmt.Errorf("%s: %v", path, err))
				return
			}
			defer gz.Close()
			r = gz
		case strings.HasSuffix(path, ".zst"):
			zr, err := zstd.NewReader(f)
			if err != nil {
				yield("", fmt.Errorf("%s: %v", path, err))
				return
			}
			defer zr.Close()
			r = zr
		}
		br := bufio.NewReaderSize(r, 1<<20)
		var chunk strings.Builder
		for line := 1; ; line++ {
			s, err := br.ReadString('\n')
			if field != "" && len(s) > 0 {
				text, ferr := jsonField(trimEOL(s), field)
				if ferr != nil {
					yield("", fmt.Errorf("%s:%d: %v", path, line, ferr))
					return
				}
				if !yield(text, nil) {
					return
				}
			} else {
				chunk.WriteString(s)
				if chunk.Len() >= 1<<20 || (err != nil && chunk.Len() > 0) {
					if !yield(chunk.String(), nil) {
						return
					}
					chunk.Reset()
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				yield("", fmt.Errorf("%s: %v", path, err))
				return
			}
		}
	}
}
