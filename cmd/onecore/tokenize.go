package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/onecore-dev/onecore/engine/tokenizer"
	"github.com/spf13/cobra"
)

var tokenizeFlags struct {
	tokenizer  string
	in         string
	format     string
	workers    int
	textField  string
	addSpecial bool
	bench      bool
}

var tokenizeCmd = &cobra.Command{
	Use:   "tokenize",
	Short: "Encode text with a Hugging Face tokenizer.json (pure Go, same ids)",
	Long: `tokenize encodes documents with a Hugging Face tokenizer.json and prints one
line per document: a JSON array of ids (--format ids), a JSON array of token
strings (--format tokens) or the number of tokens (--format count).

Input is one document per line (--in FILE, or - for stdin). With --text-field,
each line is a JSON object and the document is that field. No special tokens
are added unless --add-special-tokens (like Hugging Face's
encode(text, add_special_tokens=False)); special tokens written in the text
are always recognized. Output keeps input order whatever --workers is.

--bench reads the whole input first, then times encoding alone and prints
{"mb_per_s":..., "docs":..., "tokens":..., "seconds":..., "workers":...}.`,
	Example: `  onecore tokenize --tokenizer tokenizer.json --in docs.txt
  onecore tokenize --tokenizer tokenizer.json --in docs.jsonl --text-field text --format count
  echo "Hello world" | onecore tokenize --tokenizer tokenizer.json --format tokens
  taskset -c 0 onecore tokenize --tokenizer tokenizer.json --in docs.jsonl --text-field text --bench --workers 1`,
	Args: cobra.NoArgs,
	RunE: runTokenize,
}

func init() {
	f := tokenizeCmd.Flags()
	f.StringVar(&tokenizeFlags.tokenizer, "tokenizer", "", "tokenizer.json file (required)")
	f.StringVar(&tokenizeFlags.in, "in", "-", "input file, one document per line (- = stdin)")
	f.StringVar(&tokenizeFlags.format, "format", "ids", "output: ids, tokens or count")
	f.IntVar(&tokenizeFlags.workers, "workers", runtime.GOMAXPROCS(0), "encoding goroutines")
	f.StringVar(&tokenizeFlags.textField, "text-field", "", "read JSONL and encode this string field")
	f.BoolVar(&tokenizeFlags.addSpecial, "add-special-tokens", false, "apply the post-processor (e.g. <bos>, [CLS] … [SEP])")
	f.BoolVar(&tokenizeFlags.bench, "bench", false, "time encoding and print one JSON line of throughput")
	_ = tokenizeCmd.MarkFlagRequired("tokenizer")
	rootCmd.AddCommand(tokenizeCmd)
}

func runTokenize(cmd *cobra.Command, _ []string) error {
	fl := tokenizeFlags
	switch fl.format {
	case "ids", "tokens", "count":
	default:
		return usageError{fmt.Errorf("--format %q: want ids, tokens or count", fl.format)}
	}
	if fl.workers < 1 {
		return usageError{fmt.Errorf("--workers %d: want at least 1", fl.workers)}
	}
	tok, err := tokenizer.Load(fl.tokenizer)
	if err != nil {
		return err
	}
	var in io.Reader = os.Stdin
	name := "stdin"
	if fl.in != "-" {
		f, err := os.Open(fl.in)
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, fl.in
	}
	docs := readDocs(in, name, fl.textField)
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<20)
	if fl.bench {
		err = benchTokenize(tok, docs, fl.workers, fl.addSpecial, out)
	} else {
		err = streamTokenize(tok, docs, fl.workers, fl.addSpecial, fl.format, out)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// docBatch is a run of consecutive input documents, encoded by one worker.
type docBatch struct {
	texts []string
	ids   [][]int32
	err   error // read error after the last document
	done  chan struct{}
}

// readDocs reads documents in batches of about 1 MB; the channel closes at
// EOF, a read error travels in the last batch.
func readDocs(r io.Reader, name, field string) <-chan *docBatch {
	ch := make(chan *docBatch, 4)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 1<<20)
		b := &docBatch{done: make(chan struct{})}
		size := 0
		for line := 1; ; line++ {
			s, err := br.ReadString('\n')
			if len(s) > 0 {
				s = trimEOL(s)
				if field != "" {
					s, err = jsonField(s, field)
					if err != nil {
						b.err = fmt.Errorf("%s:%d: %v", name, line, err)
						ch <- b
						return
					}
				}
				b.texts = append(b.texts, s)
				size += len(s)
			}
			if err != nil {
				if err != io.EOF {
					b.err = fmt.Errorf("%s: %v", name, err)
				}
				ch <- b
				return
			}
			if size >= 1<<20 || len(b.texts) >= 4096 {
				ch <- b
				b, size = &docBatch{done: make(chan struct{})}, 0
			}
		}
	}()
	return ch
}

// cpuSeconds returns the user+system CPU time of this process.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func trimEOL(s string) string {
	if n := len(s); n > 0 && s[n-1] == '\n' {
		s = s[:n-1]
		if n := len(s); n > 0 && s[n-1] == '\r' {
			s = s[:n-1]
		}
	}
	return s
}

func jsonField(line, field string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		return "", fmt.Errorf("not a JSON object: %v", err)
	}
	raw, ok := obj[field]
	if !ok {
		return "", fmt.Errorf("field %q missing", field)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("field %q is not a string", field)
	}
	return s, nil
}

// streamTokenize encodes batches on workers goroutines and writes results
// in input order; memory stays bounded by the channel capacities.
func streamTokenize(tok *tokenizer.Tokenizer, docs <-chan *docBatch, workers int, addSpecial bool, format string, w *bufio.Writer) error {
	work := make(chan *docBatch, workers)
	order := make(chan *docBatch, 2*workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				b.ids = make([][]int32, len(b.texts))
				for j, s := range b.texts {
					b.ids[j] = tok.Encode(s, addSpecial)
				}
				close(b.done)
			}
		}()
	}
	go func() {
		for b := range docs {
			order <- b
			work <- b
		}
		close(work)
		close(order)
	}()
	var firstErr error
	var buf []byte
	for b := range order {
		<-b.done
		if firstErr != nil {
			continue // drain
		}
		for _, ids := range b.ids {
			buf = appendResult(buf[:0], tok, ids, format)
			if _, err := w.Write(buf); err != nil {
				firstErr = err
				break
			}
		}
		if b.err != nil && firstErr == nil {
			firstErr = b.err
		}
	}
	wg.Wait()
	return firstErr
}

func appendResult(buf []byte, tok *tokenizer.Tokenizer, ids []int32, format string) []byte {
	switch format {
	case "count":
		buf = strconv.AppendInt(buf, int64(len(ids)), 10)
	case "tokens":
		buf = append(buf, '[')
		for i, id := range ids {
			if i > 0 {
				buf = append(buf, ',')
			}
			enc, _ := json.Marshal(tok.IDToken(id))
			buf = append(buf, enc...)
		}
		buf = append(buf, ']')
	default:
		buf = append(buf, '[')
		for i, id := range ids {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(id), 10)
		}
		buf = append(buf, ']')
	}
	return append(buf, '\n')
}

// benchTokenize encodes all documents (read beforehand) on workers
// goroutines and reports throughput.
func benchTokenize(tok *tokenizer.Tokenizer, docs <-chan *docBatch, workers int, addSpecial bool, w io.Writer) error {
	var texts []string
	bytes := 0
	for b := range docs {
		if b.err != nil {
			return b.err
		}
		for _, s := range b.texts {
			texts = append(texts, s)
			bytes += len(s)
		}
	}
	cpu0 := cpuSeconds()
	start := time.Now()
	res := tok.EncodeBatch(texts, addSpecial, workers)
	sec := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	tokens := 0
	for _, ids := range res {
		tokens += len(ids)
	}
	out, _ := json.Marshal(map[string]any{
		"mb_per_s": float64(bytes) / 1e6 / sec,
		"docs":     len(texts),
		"tokens":   tokens,
		"seconds":  sec,
		"workers":  workers,
		"bytes":    bytes,
		// CPU time of the whole process while encoding (GC included): robust
		// on a loaded machine where wall time is not.
		"cpu_seconds":  cpu,
		"mb_per_cpu_s": float64(bytes) / 1e6 / cpu,
	})
	_, err := fmt.Fprintf(w, "%s\n", out)
	return err
}
