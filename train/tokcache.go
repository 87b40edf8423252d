package train

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onecore-dev/onecore/internal/atomicfile"
	"github.com/onecore-dev/onecore/internal/blobstore"
	"github.com/onecore-dev/onecore/readers"
)

// tokCacheVersion changes whenever the cache layout or the tokenization
// rules change, so an old cache is never read with new rules.
const tokCacheVersion = 2 // 2: a small corpus holds out one document (LoadCorpus's rule)

// TokenCacheOptions says what to tokenize and where to keep the result.
type TokenCacheOptions struct {
	// Dir holds caches, one subdirectory per fingerprint of the inputs, so
	// runs over the same data share one and a changed input gets a new one.
	Dir       string
	Paths     []string // as PretrainOptions.Data
	TextField string
	Tokenizer Tokenizer
	// TokenizerPath is hashed into the fingerprint; empty (tests with an
	// in-process tokenizer) fingerprints the tokenizer's Go type instead.
	TokenizerPath string
	Vocab         int // ids must be below it; ≤ 65536 stores 2 bytes a token
	ValPermille   int
	// Workers tokenize in parallel (0: GOMAXPROCS). The result does not
	// depend on it: documents are written in reading order.
	Workers int
	Log     *slog.Logger
	// LogEvery is the interval between progress lines while building
	// (0: 10 s).
	LogEvery time.Duration
}

// TokenCache is an opened, complete token cache: the train and val splits
// read from files on demand, and the unigram counts of the train split.
type TokenCache struct {
	Dir        string // the fingerprinted cache directory
	Train, Val *Corpus
	Counts     []int64 // per id, train split
	Rejects    int     // malformed rows skipped while reading the inputs
	Built      bool    // built by this call (false: reused)
}

// Close releases the token files.
func (c *TokenCache) Close() error {
	return errors.Join(c.Train.file.close(), c.Val.file.close())
}

// cacheMeta is meta.json, written last: its presence with matching sizes
// is what makes a cache directory complete.
type cacheMeta struct {
	Version     int     `json:"version"`
	Fingerprint string  `json:"fingerprint"`
	Width       int     `json:"width"` // bytes per token
	Vocab       int     `json:"vocab"`
	TrainDocs   int64   `json:"train_docs"`
	TrainTokens int64   `json:"train_tokens"`
	ValDocs     int64   `json:"val_docs"`
	ValTokens   int64   `json:"val_tokens"`
	Rejects     int     `json:"rejects"`
	InputBytes  int64   `json:"input_bytes"`
	TextBytes   int64   `json:"text_bytes"`
	BuildSecs   float64 `json:"build_secs"`
}

func (o *TokenCacheOptions) width() int {
	if o.Vocab <= 1<<16 {
		return 2
	}
	return 4
}

// fingerprint identifies the cache's content: the input files (path, size,
// modification time), the text field, the tokenizer file's hash, the
// vocabulary size (which sets the token width) and the val split.
func (o *TokenCacheOptions) fingerprint(files []inputFile) (string, error) {
	tok := fmt.Sprintf("%T", o.Tokenizer)
	if o.TokenizerPath != "" {
		b, err := os.ReadFile(o.TokenizerPath)
		if err != nil {
			return "", err
		}
		h := sha256.Sum256(b)
		tok = hex.EncodeToString(h[:])
	}
	abs := make([]inputFile, len(files))
	for i, f := range files {
		abs[i] = f
		if blobstore.Remote(f.Path) {
			continue // already absolute; size and modification time from the store
		}
		if p, err := filepath.Abs(f.Path); err == nil {
			abs[i].Path = p
		}
	}
	b, _ := json.Marshal([]any{tokCacheVersion, abs, o.TextField, tok, o.Vocab, o.width(), o.ValPermille})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12]), nil
}

// OpenTokenCache returns the token cache of the inputs, building it first
// when there is none (or only an incomplete or damaged one). A build reads
// the inputs as a stream, tokenizes on o.Workers goroutines, logs progress,
// and becomes visible only by an atomic rename when complete, so a killed
// build is never used: the next call starts it again.
func OpenTokenCache(ctx context.Context, o TokenCacheOptions) (*TokenCache, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	files, err := listInputs(o.Paths)
	if err != nil {
		return nil, err
	}
	fp, err := o.fingerprint(files)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.Dir, fp)
	if c, err := openCacheDir(dir, fp, o.Vocab); err == nil {
		o.Log.Info("token cache reused", "dir", dir, "train_docs", c.Train.Docs(), "train_tokens", c.Train.Len())
		return c, nil
	} else {
		if !errors.Is(err, errNoCache) {
			o.Log.Warn("token cache unusable: rebuilding", "dir", dir, "err", err)
		}
		// a directory without meta.json cannot come from a finished build
		// (meta.json is written before the rename); clear whatever is there
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	removeStaleBuilds(o.Dir, fp)
	tmp := filepath.Join(o.Dir, fmt.Sprintf(".%s.building-%d", fp, os.Getpid()))
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, err
	}
	meta, err := buildCache(ctx, &o, files, tmp)
	if err == nil {
		meta.Fingerprint = fp
		err = atomicfile.WriteFile(filepath.Join(tmp, "meta.json"), mustJSON(meta))
	}
	if err == nil {
		atomicfile.SyncDir(tmp)
		if err = os.Rename(tmp, dir); err != nil {
			if _, e := os.Stat(filepath.Join(dir, "meta.json")); e == nil {
				err = nil // another process finished the same cache first
			}
		}
		atomicfile.SyncDir(o.Dir)
	}
	os.RemoveAll(tmp)
	if err != nil {
		return nil, err
	}
	c, err := openCacheDir(dir, fp, o.Vocab)
	if err != nil {
		return nil, err
	}
	c.Built = true
	return c, nil
}

// errNoCache marks "no cache yet" (no meta.json) apart from a damaged one.
var errNoCache = errors.New("no token cache")

// removeStaleBuilds deletes build directories of fp left by processes that
// no longer run (killed builds); one of a live process is left alone.
func removeStaleBuilds(root, fp string) {
	m, _ := filepath.Glob(filepath.Join(root, "."+fp+".building-*"))
	for _, d := range m {
		pid, err := strconv.Atoi(d[strings.LastIndexByte(d, '-')+1:])
		if err == nil && pid != os.Getpid() && processAlive(pid) {
			continue
		}
		os.RemoveAll(d)
	}
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// openCacheDir opens a complete cache, checking every file's size against
// meta.json; errNoCache when there is no meta.json.
func openCacheDir(dir, fp string, vocab int) (_ *TokenCache, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoCache
	}
	if err != nil {
		return nil, err
	}
	var m cacheMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("meta.json: %w", err)
	}
	if m.Version != tokCacheVersion || m.Fingerprint != fp || m.Vocab != vocab {
		return nil, fmt.Errorf("meta.json: version %d fingerprint %s vocab %d, want %d %s %d", m.Version, m.Fingerprint, m.Vocab, tokCacheVersion, fp, vocab)
	}
	c := &TokenCache{Dir: dir, Rejects: m.Rejects}
	defer func() {
		if err != nil {
			if c.Train != nil {
				c.Train.file.close()
			}
			if c.Val != nil {
				c.Val.file.close()
			}
		}
	}()
	if c.Train, err = openSplit(dir, "train", m.Width, m.TrainDocs, m.TrainTokens); err != nil {
		return nil, err
	}
	if c.Val, err = openSplit(dir, "val", m.Width, m.ValDocs, m.ValTokens); err != nil {
		return nil, err
	}
	cb, err := os.ReadFile(filepath.Join(dir, "counts.bin"))
	if err != nil {
		return nil, err
	}
	if len(cb) != 8*vocab {
		return nil, fmt.Errorf("counts.bin: %d bytes, want %d", len(cb), 8*vocab)
	}
	c.Counts = make([]int64, vocab)
	for i := range c.Counts {
		c.Counts[i] = int64(binary.LittleEndian.Uint64(cb[8*i:]))
	}
	return c, nil
}

// openSplit opens name.tok (tokens, width bytes each, little-endian) and
// reads name.off (docs+1 int64 token offsets) into memory: the offsets are
// all an epoch shuffle needs, and 8 bytes a document stays small beside
// the tokens, which are read on demand.
func openSplit(dir, name string, width int, docs, tokens int64) (*Corpus, error) {
	ob, err := os.ReadFile(filepath.Join(dir, name+".off"))
	if err != nil {
		return nil, err
	}
	if int64(len(ob)) != 8*(docs+1) {
		return nil, fmt.Errorf("%s.off: %d bytes, want %d", name, len(ob), 8*(docs+1))
	}
	offs := make([]int64, docs+1)
	for i := range offs {
		offs[i] = int64(binary.LittleEndian.Uint64(ob[8*i:]))
		if i > 0 && offs[i] < offs[i-1] {
			return nil, fmt.Errorf("%s.off: offsets decrease at document %d", name, i)
		}
	}
	if offs[0] != 0 || offs[docs] != tokens {
		return nil, fmt.Errorf("%s.off: offsets span %d..%d, want 0..%d", name, offs[0], offs[docs], tokens)
	}
	f, err := os.Open(filepath.Join(dir, name+".tok"))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() != tokens*int64(width) {
		err = fmt.Errorf("%s.tok: %d bytes, want %d", name, st.Size(), tokens*int64(width))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Corpus{Offs: offs, file: &tokenFile{f: f, width: width}}, nil
}

// tokenFile is a split's token file, read with positioned reads (safe for
// concurrent use; the page cache keeps hot parts in memory without the
// process's own memory growing with the corpus).
type tokenFile struct {
	f     *os.File
	width int
}

func (t *tokenFile) close() error {
	if t == nil {
		return nil
	}
	return t.f.Close()
}

// read fills dst with the tokens from position from on.
func (t *tokenFile) read(dst []int32, from int64, buf *[]byte) error {
	n := len(dst) * t.width
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := t.f.ReadAt(b, from*int64(t.width)); err != nil {
		return fmt.Errorf("%s: %w", t.f.Name(), err)
	}
	if t.width == 2 {
		for i := range dst {
			dst[i] = int32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	} else {
		for i := range dst {
			dst[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return nil
}

// docBatch is a run of consecutive documents, tokenized by one worker.
type docBatch struct {
	seq     int
	texts   []string
	ids     [][]int32
	val     []bool
	hash    []uint64
	inBytes int64 // estimated input bytes read up to the end of this batch
}

// splitWriter appends documents to one split's files.
type splitWriter struct {
	tok, off *os.File
	tw, ow   *bufioWriter
	width    int
	docs     int64
	tokens   int64
	scratch  []byte
}

func newSplitWriter(dir, name string, width int) (*splitWriter, error) {
	tf, err := os.Create(filepath.Join(dir, name+".tok"))
	if err != nil {
		return nil, err
	}
	of, err := os.Create(filepath.Join(dir, name+".off"))
	if err != nil {
		tf.Close()
		return nil, err
	}
	w := &splitWriter{tok: tf, off: of, tw: newBufioWriter(tf), ow: newBufioWriter(of), width: width}
	w.ow.putUint64(0)
	return w, nil
}

// add writes <bos> ids <eos>.
func (w *splitWriter) add(ids []int32) {
	w.put(bosID)
	for _, id := range ids {
		w.put(id)
	}
	w.put(eosID)
	w.tokens += int64(len(ids)) + 2
	w.docs++
	w.ow.putUint64(uint64(w.tokens))
}

func (w *splitWriter) put(id int32) {
	if w.width == 2 {
		w.tw.putUint16(uint16(id))
	} else {
		w.tw.putUint32(uint32(id))
	}
}

// finish flushes and syncs both files and closes them.
func (w *splitWriter) finish() error {
	var errs []error
	for _, x := range []struct {
		b *bufioWriter
		f *os.File
	}{{w.tw, w.tok}, {w.ow, w.off}} {
		errs = append(errs, x.b.flush(), x.f.Sync(), x.f.Close())
	}
	return errors.Join(errs...)
}

// abort closes both files after a failed build.
func (w *splitWriter) abort() {
	w.tok.Close()
	w.off.Close()
}

// bufioWriter is a buffered little-endian writer with a sticky error.
type bufioWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func newBufioWriter(w io.Writer) *bufioWriter {
	return &bufioWriter{w: w, buf: make([]byte, 0, 1<<20)}
}

func (b *bufioWriter) room(n int) {
	if len(b.buf)+n > cap(b.buf) {
		b.flush()
	}
}

func (b *bufioWriter) putUint16(v uint16) {
	b.room(2)
	b.buf = binary.LittleEndian.AppendUint16(b.buf, v)
}

func (b *bufioWriter) putUint32(v uint32) {
	b.room(4)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, v)
}

func (b *bufioWriter) putUint64(v uint64) {
	b.room(8)
	b.buf = binary.LittleEndian.AppendUint64(b.buf, v)
}

func (b *bufioWriter) flush() error {
	if b.err == nil && len(b.buf) > 0 {
		_, b.err = b.w.Write(b.buf)
	}
	b.buf = b.buf[:0]
	return b.err
}

// Batches are cut at this many documents or text bytes, whichever comes
// first: large enough to keep workers busy, small enough that the batches
// in flight (a few per worker) keep memory flat. Variables so a test can
// make many small batches.
var (
	batchDocs  = 256
	batchBytes = 4 << 20
)

// buildCache tokenizes files into dir: a reader goroutine cuts the
// document stream into numbered batches, workers tokenize them and decide
// each document's split, and this goroutine writes them back in number
// order, so the files do not depend on the number of workers. At most
// 2×workers+2 batches are in flight.
func buildCache(ctx context.Context, o *TokenCacheOptions, files []inputFile, dir string) (*cacheMeta, error) {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	width := o.width()
	var totalIn int64
	for _, f := range files {
		totalIn += f.Size
	}
	trainW, err := newSplitWriter(dir, "train", width)
	if err != nil {
		return nil, err
	}
	valW, err := newSplitWriter(dir, "val", width)
	if err != nil {
		trainW.abort()
		return nil, err
	}
	finished := false
	defer func() {
		if !finished {
			trainW.abort()
			valW.abort()
		}
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, 2*workers+2)
	todo := make(chan *docBatch)
	done := make(chan *docBatch)
	var rejects int
	var readErr error
	go func() { // reader
		defer close(todo)
		rejects, readErr = readBatches(ctx, files, o.TextField, slots, todo)
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range todo {
				b.ids = make([][]int32, len(b.texts))
				b.val = make([]bool, len(b.texts))
				b.hash = make([]uint64, len(b.texts))
				for i, t := range b.texts {
					b.ids[i] = o.Tokenizer.Encode(t)
					b.hash[i] = textHash(t) // the split rule of LoadCorpus
					b.val[i] = b.hash[i]%1000 < uint64(o.ValPermille)
				}
				done <- b
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	counts := make([]int64, o.Vocab)
	t0 := time.Now()
	every := o.LogEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	lastLog := t0
	var textBytes, inBytes int64
	var writeErr error
	pending := map[int]*docBatch{}
	next := 0
	best, bestHash, bestIDs := int64(-1), uint64(0), []int32(nil)
	progress := func(msg string) {
		secs := time.Since(t0).Seconds()
		docs := trainW.docs + valW.docs
		toks := trainW.tokens + valW.tokens
		attrs := []any{"docs", docs, "text_mb", fmt.Sprintf("%.1f", float64(textBytes)/1e6),
			"input", fmt.Sprintf("%.1f/%.1f MB", float64(inBytes)/1e6, float64(totalIn)/1e6),
			"tokens", toks, "tok/s", fmt.Sprintf("%.0f", float64(toks)/secs),
			"mb/s", fmt.Sprintf("%.2f", float64(inBytes)/1e6/secs)}
		if msg == "tokenizing" && inBytes > 0 {
			eta := time.Duration(float64(time.Since(t0)) * float64(totalIn-inBytes) / float64(inBytes))
			attrs = append(attrs, "eta", eta.Round(time.Second).String())
		} else {
			attrs = append(attrs, "secs", fmt.Sprintf("%.1f", secs))
		}
		o.Log.Info(msg, attrs...)
	}
	o.Log.Info("tokenizing into a cache", "dir", o.Dir, "files", len(files), "input_mb", fmt.Sprintf("%.1f", float64(totalIn)/1e6), "workers", workers)
	for b := range done {
		if writeErr != nil || ctx.Err() != nil {
			<-slots // draining after a failure
			continue
		}
		pending[b.seq] = b
		for pending[next] != nil {
			b := pending[next]
			delete(pending, next)
			next++
			for i, ids := range b.ids {
				for _, id := range ids {
					if id < 0 || int(id) >= o.Vocab {
						writeErr = errVocab(id, o.Vocab)
					}
				}
				if writeErr != nil {
					break
				}
				textBytes += int64(len(b.texts[i]))
				if b.val[i] {
					valW.add(ids)
				} else {
					// the training document held out if no other is (LoadCorpus's rule)
					if h := b.hash[i]; best < 0 || h%1000 < bestHash%1000 || (h%1000 == bestHash%1000 && h < bestHash) {
						best, bestHash, bestIDs = trainW.docs, h, append(bestIDs[:0], ids...)
					}
					trainW.add(ids)
					for _, id := range ids {
						counts[id]++
					}
					counts[bosID]++
					counts[eosID]++
				}
			}
			inBytes = b.inBytes
			<-slots
			if writeErr != nil {
				cancel()
				break
			}
		}
		if time.Since(lastLog) >= every {
			progress("tokenizing")
			lastLog = time.Now()
		}
	}
	if writeErr != nil {
		return nil, writeErr
	}
	if readErr != nil && !errors.Is(readErr, context.Canceled) {
		return nil, readErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tokenizing interrupted: %w", err)
	}
	if trainW.docs == 0 {
		return nil, fmt.Errorf("data: no training documents in %v", o.Paths)
	}
	// A small corpus may hold out nothing by the hash rule: hold out the
	// document LoadCorpus would, so val_flat always exists.
	moved := valW.docs == 0 && o.ValPermille > 0 && trainW.docs >= 2
	if moved {
		valW.add(bestIDs)
		for _, id := range bestIDs {
			counts[id]--
		}
		counts[bosID]--
		counts[eosID]--
	}
	finished = true
	if err := errors.Join(trainW.finish(), valW.finish()); err != nil {
		return nil, err
	}
	if moved {
		if err := dropDoc(dir, "train", width, best); err != nil {
			return nil, err
		}
		trainW.docs--
		trainW.tokens -= int64(len(bestIDs)) + 2
	}
	cb := make([]byte, 0, 8*len(counts))
	for _, n := range counts {
		cb = binary.LittleEndian.AppendUint64(cb, uint64(n))
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "counts.bin"), cb); err != nil {
		return nil, err
	}
	inBytes = totalIn
	progress("tokenized")
	return &cacheMeta{Version: tokCacheVersion, Width: width, Vocab: o.Vocab,
		TrainDocs: trainW.docs, TrainTokens: trainW.tokens, ValDocs: valW.docs, ValTokens: valW.tokens,
		Rejects: rejects, InputBytes: totalIn, TextBytes: textBytes, BuildSecs: time.Since(t0).Seconds()}, nil
}

// dropDoc rewrites a split's files without document i (only for the
// small-corpus hold-out above: the files are small then).
func dropDoc(dir, name string, width int, i int64) error {
	tokPath, offPath := filepath.Join(dir, name+".tok"), filepath.Join(dir, name+".off")
	toks, err := os.ReadFile(tokPath)
	if err != nil {
		return err
	}
	offb, err := os.ReadFile(offPath)
	if err != nil {
		return err
	}
	offs := make([]int64, len(offb)/8)
	for k := range offs {
		offs[k] = int64(binary.LittleEndian.Uint64(offb[8*k:]))
	}
	a, b := offs[i], offs[i+1]
	toks = append(toks[:a*int64(width)], toks[b*int64(width):]...)
	var nb []byte
	for k, o := range offs {
		switch {
		case int64(k) == i+1:
			continue
		case int64(k) > i+1:
			o -= b - a
		}
		nb = binary.LittleEndian.AppendUint64(nb, uint64(o))
	}
	if err := atomicfile.WriteFile(tokPath, toks); err != nil {
		return err
	}
	return atomicfile.WriteFile(offPath, nb)
}

// readBatches reads files in order and sends numbered batches of their
// documents to todo, taking a slot per batch (released once written). Each
// batch carries an estimate of the input bytes read so far for the ETA: a
// row-format file's position is estimated from its text so far, scaled by
// the input/text ratio of the row files finished before it.
func readBatches(ctx context.Context, files []inputFile, textField string, slots chan struct{}, todo chan<- *docBatch) (int, error) {
	var (
		b              = &docBatch{}
		nb             int // text bytes in b
		seq            int
		doneIn         int64 // input bytes of finished files
		rowIn, rowText int64 // finished row files: input and text bytes
		fileText       int64 // text bytes of the current file
		cur            inputFile
		rejects        int
	)
	estimate := func() int64 {
		if readers.FormatOf(cur.Path) == readers.FormatUnknown {
			return doneIn
		}
		ratio := 1.0
		if rowText > 0 {
			ratio = float64(rowIn) / float64(rowText)
		}
		return doneIn + min(int64(float64(fileText)*ratio), cur.Size)
	}
	send := func() error {
		if len(b.texts) == 0 {
			return nil
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		b.seq, b.inBytes = seq, estimate()
		seq++
		select {
		case todo <- b:
		case <-ctx.Done():
			<-slots
			return ctx.Err()
		}
		b, nb = &docBatch{}, 0
		return nil
	}
	for _, f := range files {
		cur, fileText = f, 0
		n, err := readFile(f.Path, textField, f.Explicit, func(text string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			b.texts = append(b.texts, text)
			nb += len(text)
			fileText += int64(len(text))
			if len(b.texts) >= batchDocs || nb >= batchBytes {
				return send()
			}
			return nil
		})
		rejects += n
		if err != nil {
			return rejects, err
		}
		doneIn += f.Size
		if readers.FormatOf(f.Path) != readers.FormatUnknown {
			rowIn += f.Size
			rowText += fileText
		}
	}
	return rejects, send()
}

// tokenCacheOptions is the token cache a pretraining run reads.
func (o *PretrainOptions) tokenCacheOptions(log *slog.Logger) TokenCacheOptions {
	dir := o.Cache
	if dir == "" {
		dir = filepath.Join(o.Out, "tokcache")
	}
	return TokenCacheOptions{Dir: dir, Paths: o.Data, TextField: o.TextField, Tokenizer: o.Tokenizer,
		TokenizerPath: o.TokenizerPath, Vocab: o.Config.VocabSize, ValPermille: o.ValPermille,
		Workers: o.TokenizeWorkers, Log: log}
}
