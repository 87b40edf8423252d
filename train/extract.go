package train

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/onecore-dev/onecore/engine"
)

// ExtractOptions configures span-head training (onecore train extract).
type ExtractOptions struct {
	From, Out string
	// Data are JSON Lines files (optionally .gz/.zst) of records
	// {text, question?, answer}; see ParseExtractRecord.
	Data                                  []string
	TextField, QuestionField, AnswerField string
	// Question is the question of records that have none.
	Question      string
	Tokenizer     Tokenizer
	TokenizerPath string

	// MaxTokens bounds a document as the pipeline's max_tokens does:
	// <bos> plus its first MaxTokens−1 tokens (the question prompt comes
	// on top). Answers beyond the kept tokens become "not present", and
	// are counted.
	MaxTokens   int
	ValPermille int
	Epochs      float64
	LR          float64 // body learning rate (peak; warmup, cosine to LR/10)
	HeadLR      float64 // the freshly initialised head's learning rate
	Freeze      bool    // train the head only; the body stays bit for bit
	BatchTokens int     // tokens per step
	WeightDecay float64
	MaxSpan     int // longest answer, in tokens, at evaluation
	// Layers keeps only the source's first Layers layers (KeepLayers):
	// a shallower, faster extractor (≤ 0: every layer).
	Layers int
	Seed   uint64
	// Workers is the number of training threads, each pinned to its own
	// core (≤ 0: the usable CPUs). Results do not depend on it.
	Workers int
	// EvalEvery evaluates on the held-out split every this many steps
	// (0: at the start and the end only).
	EvalEvery int64
	// Samples is how many held-out examples are printed at each eval.
	Samples int
	// CkptEvery checkpoints every this many steps (0: only at the start,
	// on interruption and at the end).
	CkptEvery int64
	// Resume continues the run in Out from its train_state/.
	Resume bool
	// StopAfterSteps ends training early (as if killed) after this many
	// steps of this invocation, without a checkpoint: for tests.
	StopAfterSteps int64

	Log *slog.Logger
	// Progress, when set, makes a progress bar of total steps.
	Progress func(total int64) func(done int64, desc string)
}

// fingerprint covers the options a resumed run must share with the original.
func (o *ExtractOptions) fingerprint() string {
	b, _ := json.Marshal([]any{"extract", o.From, o.Data, o.TextField, o.QuestionField, o.AnswerField, o.Question, o.MaxTokens, o.ValPermille,
		o.Epochs, o.LR, o.HeadLR, o.Freeze, o.BatchTokens, o.WeightDecay, o.Seed, o.Layers})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// ExtractReport is the held-out evaluation of a span head.
type ExtractReport struct {
	// ExactMatch: the predicted answer equals the gold one (or both say
	// "not present"); F1: SQuAD-style token F1 over whitespace-separated
	// words (1 for a correct abstention, 0 for a wrong one).
	ExactMatch, F1 float64
	// AbstainPrecision and AbstainRecall treat "not present" as the
	// positive class (NaN when nothing was predicted resp. gold absent).
	AbstainPrecision, AbstainRecall float64
	N                               int
	// Threshold is the null-score threshold tuned on these documents
	// (engine.CalibrateSpanThreshold; saved as generation.json's
	// span_threshold), and the Calibrated scores are those at it: the
	// head's decisions as extract makes them.
	Threshold                                           float64
	CalibratedExactMatch, CalibratedF1                  float64
	CalibratedAbstainPrecision, CalibratedAbstainRecall float64
}

// spanDoc is one training or held-out example.
type spanDoc struct {
	ids       []int32 // <bos> + prompt + document tokens (+ <eos> when endNext)
	promptLen int     // tokens before the document (<bos> included); the null logit is at promptLen−1
	endNext   bool    // ends scored at the next row (engine.SpanLogitRows)
	ts, te    int     // target document token positions, or SpanNull
	text      string  // the document (for decoding answers)
	offs      [][2]int
	question  string
	gold      string // the answer as the kept tokens allow it ("" when not present)
}

// ExtractRecord is one parsed training record.
type ExtractRecord struct {
	Text     string
	Question string
	HasQ     bool            // the record has a (non-null) question
	Answer   json.RawMessage // nil when absent
}

// ParseExtractRecord decodes one JSON Lines record: textField must be a
// string; questionField a string, null or absent; answerField anything
// ParseSpanAnswer accepts (kept raw so a string and offsets stay apart).
func ParseExtractRecord(line []byte, textField, questionField, answerField string) (ExtractRecord, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return ExtractRecord{}, fmt.Errorf("not a JSON object: %v", err)
	}
	var r ExtractRecord
	t, ok := m[textField]
	if !ok {
		return r, fmt.Errorf("field %q missing", textField)
	}
	if err := json.Unmarshal(t, &r.Text); err != nil || bytes.Equal(bytes.TrimSpace(t), []byte("null")) {
		return r, fmt.Errorf("field %q: want a string", textField)
	}
	if q, ok := m[questionField]; ok && !bytes.Equal(bytes.TrimSpace(q), []byte("null")) {
		if err := json.Unmarshal(q, &r.Question); err != nil {
			return r, fmt.Errorf("field %q: want a string or null", questionField)
		}
		r.HasQ = true
	}
	r.Answer = m[answerField]
	return r, nil
}

// readExtractRecords calls fn for every record of the JSON Lines files
// paths (plain, .gz or .zst) with its file and 1-based line; blank lines
// are skipped. Any malformed record is an error naming file and line.
func readExtractRecords(paths []string, o *ExtractOptions, fn func(file string, line int, r ExtractRecord) error) error {
	for _, path := range paths {
		if err := readExtractFile(path, o, fn); err != nil {
			return err
		}
	}
	return nil
}

func readExtractFile(path string, o *ExtractOptions, fn func(file string, line int, r ExtractRecord) error) error {
	f, err := openStream(path)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 256<<10)
	switch {
	case strings.HasSuffix(path, ".gz"), strings.HasSuffix(path, ".gzip"):
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("data %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	case strings.HasSuffix(path, ".zst"), strings.HasSuffix(path, ".zstd"):
		zr, err := zstd.NewReader(r)
		if err != nil {
			return fmt.Errorf("data %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	br := bufio.NewReaderSize(r, 1<<20)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			rec, perr := ParseExtractRecord(b, o.TextField, o.QuestionField, o.AnswerField)
			if perr != nil {
				return fmt.Errorf("data %s: line %d: %w", path, line, perr)
			}
			if err := fn(path, line, rec); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("data %s: line %d: %w", path, line, err)
		}
	}
}

// tokenByteLens returns the byte length each token of ids decodes to, and
// an error unless they concatenate to exactly the first bytes of text:
// the span head's offsets need a tokenizer that reproduces the text byte
// for byte (byte-level BPE without a normalizer, as onecore's are).
func tokenByteLens(tok Tokenizer, text string, ids []int32) ([]int, error) {
	lens := make([]int, len(ids))
	p := 0
	for i, id := range ids {
		s := tok.Decode([]int32{id})
		if !strings.HasPrefix(text[p:], s) {
			return nil, fmt.Errorf("token %d (id %d) decodes to %q, not the text's bytes at offset %d: the span head needs a tokenizer that reproduces the text byte for byte", i, id, s, p)
		}
		lens[i] = len(s)
		p += len(s)
	}
	return lens, nil
}

// ExtractParamSpecs lists the parameters of a model with a span head: the
// body's, then head.span.w [D,2]. No bias is trained: a bias adds the same
// constant to the start (or end) logit of every position, null included,
// so it cancels in both softmaxes and in SpanDecode's comparisons; its
// gradient is identically zero. (The engine still accepts a head.span.b
// from other trainers.)
func ExtractParamSpecs(c *Config) []TensorSpec {
	return append(ParamSpecs(c, 0), TensorSpec{engine.HeadSpanW, []int{c.DModel, 2}})
}

// Extract trains a span-extraction head (and, unless Freeze, the body) on
// {text, question?, answer} records and writes a checkpoint whose
// head.span makes `onecore extract --task extract` answer with spans of
// the document (engine.SpanDecode). See the package doc for the design.
func Extract(ctx context.Context, o ExtractOptions) (*ExtractReport, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.MaxTokens < 2 {
		return nil, fmt.Errorf("max tokens %d: need at least 2 (<bos> and one token)", o.MaxTokens)
	}
	if o.LR <= 0 || o.HeadLR <= 0 || o.Epochs <= 0 || o.BatchTokens < 1 {
		return nil, fmt.Errorf("learning rates, epochs and batch tokens must be positive (lr %g, head lr %g, epochs %g, batch tokens %d)", o.LR, o.HeadLR, o.Epochs, o.BatchTokens)
	}
	if o.MaxSpan < 1 {
		o.MaxSpan = 64
	}
	c, src, gen, err := LoadCheckpoint(o.From)
	if err != nil {
		return nil, err
	}
	ck, err := engine.LoadCheckpoint(o.From)
	if err != nil {
		return nil, err
	}
	if c, err = keepLayersLogged(c, o.Layers, log); err != nil {
		return nil, err
	}
	p := NewParams[float32](ExtractParamSpecs(c))
	for _, s := range ParamSpecs(c, 0) {
		copy(p.W(s.Name), src.W(s.Name))
	}
	// A source that already has a span head continues from it (more data,
	// another epoch); otherwise the head starts at zero: every span equally
	// likely, and the body's first gradients come once the head has moved.
	if w, ok := ck.Tensors[engine.HeadSpanW]; ok {
		copy(p.W(engine.HeadSpanW), w)
		log.Info("continuing the source checkpoint's span head")
	}
	gen.Labels = nil           // head.cls is not carried over
	gen.SpanWholeWords = false // decided from this run's data below
	gen.SpanOneLine = false
	// A new head scores ends at the row after the span (engine.SpanLogitRows);
	// a continued head keeps the rows it was trained on.
	if _, ok := ck.Tensors[engine.HeadSpanW]; !ok {
		gen.SpanEndNext = true
	}
	tail := engine.SpanSeqTail(gen.SpanEndNext)

	var docs []spanDoc
	var hs []uint64
	lost, absent, ambiguous := 0, 0, 0
	// answers widen to whole words at decoding (engine.SpanText) unless
	// some training answer starts or ends inside a word ("42" of "v42"):
	// the data says which kind of field this is
	wholeWords := true
	// likewise answers are kept on one line (engine.SpanLines) unless some
	// training answer spans lines (an address block, a paragraph)
	oneLine := true
	promptCache := map[string][]int32{}
	dg := newDataDigest()
	err = readExtractRecords(o.Data, &o, func(file string, line int, r ExtractRecord) error {
		q := o.Question
		if r.HasQ {
			q = r.Question
		}
		dg.add(r.Text, q, string(r.Answer))
		as, ae, present, err := ParseSpanAnswer(r.Text, r.Answer)
		if err != nil {
			return fmt.Errorf("data %s: line %d: %w", file, line, err)
		}
		pr, ok := promptCache[q]
		if !ok {
			pr = append([]int32{bosID}, o.Tokenizer.Encode(engine.SpanPrompt(q))...)
			promptCache[q] = pr
		}
		ids := o.Tokenizer.Encode(r.Text)
		if len(ids) == 0 {
			return fmt.Errorf("data %s: line %d: empty text (no tokens)", file, line)
		}
		if len(ids) > o.MaxTokens-1 {
			ids = ids[:o.MaxTokens-1]
		}
		lens, err := tokenByteLens(o.Tokenizer, r.Text, ids)
		if err != nil {
			return fmt.Errorf("data %s: line %d: %w", file, line, err)
		}
		d := spanDoc{ids: slices.Concat(pr, ids, tail), promptLen: len(pr), endNext: gen.SpanEndNext, ts: SpanNull, te: SpanNull,
			text: r.Text, offs: TokenByteOffsets(lens), question: q}
		if present && AmbiguousSpanAnswer(r.Text, r.Answer) {
			ambiguous++ // trained at its first occurrence, which may not be the one meant
		}
		if present {
			wholeWords = wholeWords && engine.AtWordBoundaries(r.Text, as, ae)
			oneLine = oneLine && !strings.Contains(strings.TrimSpace(r.Text[as:ae]), "\n")
			ts, te, ok := SpanTargets(d.offs, as, ae)
			if ok {
				d.ts, d.te, d.gold = ts, te, r.Text[as:ae]
			} else {
				lost++
			}
		} else {
			absent++
		}
		for _, id := range d.ids {
			if id < 0 || int(id) >= c.VocabSize {
				return fmt.Errorf("data %s: line %d: token id %d out of the model's vocabulary (%d)", file, line, id, c.VocabSize)
			}
		}
		docs = append(docs, d)
		hs = append(hs, textHash(q+"\x00"+r.Text))
		return nil
	})
	if err != nil {
		return nil, err
	}
	held := heldOutSplit(hs, o.ValPermille)
	var trainDocs, valDocs []spanDoc
	for i, d := range docs {
		if held[i] {
			valDocs = append(valDocs, d)
		} else {
			trainDocs = append(trainDocs, d)
		}
	}
	if len(docs) > 0 && absent == len(docs) {
		return nil, fmt.Errorf("data %v: every record says the answer is not present (null): there is nothing to learn to extract", o.Data)
	}
	if len(trainDocs) == 0 || len(valDocs) == 0 {
		return nil, fmt.Errorf("data: %d training and %d held-out records; need both (adjust --val-permille)", len(trainDocs), len(valDocs))
	}
	gen.SpanWholeWords = wholeWords && len(docs) > absent // some answer is present
	gen.SpanOneLine = oneLine && len(docs) > absent
	log.Info("extract data", "train_records", len(trainDocs), "val_records", len(valDocs), "not_present", absent, "lost_to_truncation", lost,
		"whole_words", gen.SpanWholeWords, "one_line", gen.SpanOneLine)
	if lost > 0 {
		log.Warn("answers beyond --max-tokens were trained as \"not present\"", "records", lost, "max_tokens", o.MaxTokens)
	}
	if absent == 0 {
		// The null is then never a target: the head learns to answer every
		// document, and extract will pick some span of documents that do
		// not hold the field.
		log.Warn("no record says the answer is not present (answer null): the head will not learn to abstain; " +
			"label some documents that lack the field with a null answer")
	}
	if ambiguous > 0 {
		log.Warn("answers given as strings that occur more than once in their text are trained at the first occurrence; "+
			"give character offsets ({\"start\":s,\"end\":e}) where another one is meant", "records", ambiguous)
	}

	statePath := filepath.Join(o.Out, "train_state", "state.json")
	_, statErr := os.Stat(statePath)
	if statErr == nil && !o.Resume {
		return nil, fmt.Errorf("%s holds a run (train_state/); pass --resume to continue it or choose another --out", o.Out)
	}
	if o.Resume && statErr != nil {
		log.Info("no train_state/ in the output directory: starting a new run", "dir", o.Out)
	}
	workers := resolveWorkers(o.Workers, 0, log)
	dp := newDataParallel(c, p, workers, 0, log)
	defer dp.close()
	bodyScale := 1.0
	if o.Freeze {
		bodyScale = 0
	}
	dp.setLRScale(p.Off[engine.HeadSpanW], bodyScale, o.HeadLR/o.LR)

	opt := NewAdamW(p, o.WeightDecay)
	st := &TrainState{Seed: o.Seed, Options: o.fingerprint(), Data: dg.String()}
	fresh := st
	if o.Resume && statErr == nil {
		if st, err = loadTrainState(o.Out, p, opt); err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if err := checkResume(statePath, st, fresh); err != nil {
			return nil, err
		}
		log.Info("resumed", "step", st.Step)
	}
	save := func() error {
		if err := SaveCheckpoint(o.Out, c, p, gen, o.TokenizerPath); err != nil {
			return err
		}
		return saveTrainState(o.Out, p, opt, st)
	}
	eval := func() (*ExtractReport, error) {
		rep, err := evalSpans(ctx, dp, valDocs, o.MaxSpan, o.Samples, gen.SpanWholeWords, gen.SpanOneLine, log)
		if err != nil {
			return nil, err
		}
		log.Info("extract eval", "step", st.Step, "exact_match", fmt.Sprintf("%.4f", rep.ExactMatch), "f1", fmt.Sprintf("%.4f", rep.F1),
			"abstain_precision", fmt.Sprintf("%.4f", rep.AbstainPrecision), "abstain_recall", fmt.Sprintf("%.4f", rep.AbstainRecall), "val_records", rep.N,
			"threshold", fmt.Sprintf("%.3f", rep.Threshold), "calibrated_exact_match", fmt.Sprintf("%.4f", rep.CalibratedExactMatch),
			"calibrated_abstain_precision", fmt.Sprintf("%.4f", rep.CalibratedAbstainPrecision), "calibrated_abstain_recall", fmt.Sprintf("%.4f", rep.CalibratedAbstainRecall))
		return rep, nil
	}

	total := 0
	for _, d := range trainDocs {
		total += len(d.ids)
	}
	steps := max(1, int64(o.Epochs*float64(total)/float64(o.BatchTokens)))
	sched := Schedule{LR: o.LR, MinLR: o.LR / 10, Warmup: steps / 10, Total: steps}
	// the document order: permutations drawn in turn from one stream; the
	// cursor counts those drawn after the first (Epoch) and the position
	// in the current one (Pos)
	docOrder := newShuffled(o.Seed, 0x737061, len(trainDocs), st.Cursor.Epoch)
	pos := st.Cursor.Pos
	if st.Step == 0 {
		if _, err := eval(); err != nil {
			return nil, err
		}
		if err := save(); err != nil {
			return nil, err
		}
	}
	mbTokens := o.MaxTokens
	var mbLoss []float64
	var runSteps int64
	pc := newPace(steps)
	var bar func(int64, string)
	if o.Progress != nil {
		bar = o.Progress(steps)
		bar(st.Step, "")
	}
	for st.Step < steps {
		if ctx.Err() != nil {
			if err := save(); err != nil {
				return nil, err
			}
			return nil, ErrInterrupted
		}
		batch, n := drawBatch(docOrder, trainDocs, func(d spanDoc) int { return len(d.ids) }, o.BatchTokens, &pos, &st.Cursor.Epoch)
		st.Cursor.Pos = pos
		// micro-batches: consecutive documents up to MaxTokens tokens
		// each, fixed by the batch alone (never by the worker count)
		lens := make([]int, len(batch))
		for i, d := range batch {
			lens[i] = len(d.ids)
		}
		mbs := microBatches(lens, mbTokens)
		mbLoss = append(mbLoss[:0], make([]float64, len(mbs))...)
		dp.micro(len(mbs), func(w *dpWorker, k int) {
			docs := batch[mbs[k][0]:mbs[k][1]]
			var ids []int32
			for _, d := range docs {
				ids = append(ids, d.ids...)
			}
			hf := w.m.Forward(ids, 0)
			l, dhf := spanHeadLoss(w.p, hf, docs, len(batch))
			if !o.Freeze {
				w.m.Backward(dhf)
				w.touch(ids)
			}
			mbLoss[k] = l
		})
		var loss float64
		for _, l := range mbLoss {
			loss += l
		}
		gn := dp.reduce(len(mbs))
		scale := 1.0
		if gn > 1 {
			scale = 1 / gn
		}
		lr := sched.At(st.Step)
		dp.update(opt, lr, scale)
		st.Step++
		st.Tokens += int64(n)
		runSteps++
		pc.step(int64(n))
		if st.Step%20 == 0 || st.Step == steps {
			tps, _ := pc.window()
			log.Info("extract train", "step", fmt.Sprintf("%d/%d", st.Step, steps), "tokens", st.Tokens, "tok/s", fmt.Sprintf("%.0f", tps), "eta", pc.eta(st.Step).String(),
				"lr", fmt.Sprintf("%.3g", lr), "loss", fmt.Sprintf("%.4f", loss), "grad_norm", fmt.Sprintf("%.3g", gn))
		}
		if bar != nil {
			bar(st.Step, pc.barText(loss, lr))
		}
		if o.StopAfterSteps > 0 && runSteps >= o.StopAfterSteps {
			return nil, nil
		}
		if o.EvalEvery > 0 && st.Step%o.EvalEvery == 0 && st.Step < steps {
			if _, err := eval(); err != nil {
				// interrupted while evaluating: keep the steps done
				if serr := save(); serr != nil {
					return nil, serr
				}
				return nil, ErrInterrupted
			}
		}
		if o.CkptEvery > 0 && st.Step%o.CkptEvery == 0 && st.Step < steps {
			if err := save(); err != nil {
				return nil, err
			}
			log.Info("checkpoint", "dir", o.Out, "step", st.Step)
		}
	}
	// saved before the final evaluation, so an interruption during it
	// loses nothing; saved again with the threshold it tunes
	if err := save(); err != nil {
		return nil, err
	}
	rep, err := eval()
	if err != nil {
		return nil, err
	}
	gen.SpanThreshold = rep.Threshold
	if err := SaveCheckpoint(o.Out, c, p, gen, o.TokenizerPath); err != nil {
		return nil, err
	}
	log.Info("span threshold tuned on the held-out split", "span_threshold", fmt.Sprintf("%.3f", rep.Threshold),
		"exact_match", fmt.Sprintf("%.4f -> %.4f", rep.ExactMatch, rep.CalibratedExactMatch))
	return rep, nil
}

// spanLen returns the length of d's [null, doc...] logit layout (the
// appended <eos> is no entry of its own; engine.SpanLogitRows gives each
// entry's rows).
func spanLen(d *spanDoc) int {
	return len(d.ids) - d.promptLen + 1 - len(engine.SpanSeqTail(d.endNext))
}

// spanLogitsOf writes the start and end logits of doc d (rows of hf from
// row off) laid out [null, doc...] into start and end, each from the row
// engine.SpanLogitRows names.
func spanLogitsOf[T Float](w, hf []T, D, off int, d *spanDoc, start, end []float64) {
	n := spanLen(d)
	for j := 0; j < n; j++ {
		rs, re := engine.SpanLogitRows(d.promptLen, j, d.endNext)
		start[j] = headDot(hf[(off+rs)*D:(off+rs+1)*D], w, 0)
		end[j] = headDot(hf[(off+re)*D:(off+re+1)*D], w, 1)
	}
}

// headDot is h · column col of the [D × 2] span head, in float64 and
// index order (the engine's float32 SIMD logits agree to ~1e-6).
func headDot[T Float](h, w []T, col int) float64 {
	var s float64
	for i, x := range h {
		s += float64(x) * float64(w[2*i+col])
	}
	return s
}

// spanHeadLoss is the mean span cross-entropy (SpanLoss) of a packed batch
// of documents and its gradient with respect to every position's
// final-norm output; head gradients go to p.Grad. With norm > 0 the mean
// is over norm documents (the batch is one micro-batch of a larger one).
func spanHeadLoss[T Float](p *Params[T], hf []T, batch []spanDoc, norm int) (float64, []T) {
	N := 0
	for _, d := range batch {
		N += len(d.ids)
	}
	D := len(hf) / N
	w, gw := p.W(engine.HeadSpanW), p.G(engine.HeadSpanW)
	dhf := make([]T, len(hf))
	inv := 1 / float64(len(batch))
	if norm > 0 {
		inv = 1 / float64(norm)
	}
	var loss float64
	off := 0
	for k := range batch {
		d := &batch[k]
		n := spanLen(d)
		start, end := make([]float64, n), make([]float64, n)
		gs, ge := make([]float64, n), make([]float64, n)
		spanLogitsOf(w, hf, D, off, d, start, end)
		loss += SpanLoss(start, end, d.ts, d.te, gs, ge) * inv
		// a row may score one entry's start and the previous entry's end
		// (endNext), so its gradient is accumulated from both
		for j := 0; j < n; j++ {
			rs, re := engine.SpanLogitRows(d.promptLen, j, d.endNext)
			headBackward(hf, gw, w, dhf, D, off+rs, 0, gs[j]*inv)
			headBackward(hf, gw, w, dhf, D, off+re, 1, ge[j]*inv)
		}
		off += len(d.ids)
	}
	return loss, dhf
}

// headBackward adds the gradient g of one logit (row r of hf, head column
// col) to the head's gradient gw and to the row's dhf.
func headBackward[T Float](hf, gw, w, dhf []T, D, r, col int, g float64) {
	h := hf[r*D : (r+1)*D]
	for i, x := range h {
		gw[2*i+col] += T(float64(x) * g)
		dhf[r*D+i] += T(g * float64(w[2*i+col]))
	}
}

// evalSpans decodes every held-out document (packs of documents spread
// over the workers, fixed by the documents alone) and scores the answers;
// samples of them are logged.
func evalSpans(ctx context.Context, dp *dataParallel, docs []spanDoc, maxSpan, samples int, wholeWords, oneLine bool, log *slog.Logger) (*ExtractReport, error) {
	preds := make([]engine.SpanResult, len(docs))
	var packs [][2]int
	for i := 0; i < len(docs); {
		j, n := i, 0
		for j < len(docs) && (j == i || n+len(docs[j].ids) <= 8192) {
			n += len(docs[j].ids)
			j++
		}
		packs = append(packs, [2]int{i, j})
		i = j
	}
	var next atomic.Int64
	dp.all(func(w *dpWorker) {
		w.m.reusePacks = false
		D := w.m.Cfg.DModel
		for ctx.Err() == nil {
			pk := int(next.Add(1) - 1)
			if pk >= len(packs) {
				return
			}
			i, j := packs[pk][0], packs[pk][1]
			var ids []int32
			for _, d := range docs[i:j] {
				ids = append(ids, d.ids...)
			}
			hf := w.m.Forward(ids, 0)
			w.m.reusePacks = true
			off := 0
			for k := i; k < j; k++ {
				d := &docs[k]
				n := spanLen(d)
				start, end := make([]float64, n), make([]float64, n)
				spanLogitsOf(w.p.W(engine.HeadSpanW), hf, D, off, d, start, end)
				var lines *engine.SpanLines
				if oneLine {
					lines = engine.NewSpanLines(d.text, d.offs)
				}
				preds[k] = engine.SpanDecode(start, end, maxSpan, math.Inf(-1), lines)
				off += len(d.ids)
			}
		}
	})
	if ctx.Err() != nil {
		return nil, ErrInterruptedEarly
	}
	// every document's best span, right or wrong, and its margin over the
	// null answer: the decision at any threshold follows from them
	answers := make([]string, len(docs))
	margin := make([]float64, len(docs))
	answerOK, abstainOK := make([]bool, len(docs)), make([]bool, len(docs))
	for k := range docs {
		d, r := &docs[k], preds[k]
		margin[k] = r.BestSpan - r.Null
		if r.S != engine.SpanNull {
			answers[k], _, _ = engine.SpanText(d.text, d.offs, r.S, r.E, wholeWords)
			answerOK[k] = d.ts != SpanNull && answers[k] == d.gold
		} else {
			margin[k] = math.Inf(-1)
		}
		abstainOK[k] = d.ts == SpanNull
	}
	rep := scoreSpans(docs, answers, margin, 0)
	rep.Threshold, _ = engine.CalibrateSpanThreshold(margin, answerOK, abstainOK)
	cal := scoreSpans(docs, answers, margin, rep.Threshold)
	rep.CalibratedExactMatch, rep.CalibratedF1 = cal.ExactMatch, cal.F1
	rep.CalibratedAbstainPrecision, rep.CalibratedAbstainRecall = cal.AbstainPrecision, cal.AbstainRecall
	for k := 0; k < min(samples, len(docs)); k++ {
		d := &docs[k]
		shown := answers[k]
		if spanAbstains(margin[k], rep.Threshold) {
			shown = "(not present)"
		}
		gold := d.gold
		if d.ts == SpanNull {
			gold = "(not present)"
		}
		log.Info("extract sample", "question", d.question, "gold", gold, "predicted", shown, "logprob", fmt.Sprintf("%.3f", preds[k].LogProb))
	}
	return rep, nil
}

// spanAbstains is SpanDecode's decision from a document's margin (best
// span − null score; −Inf when it has no span) at a threshold.
func spanAbstains(margin, threshold float64) bool {
	return math.IsInf(margin, -1) || threshold >= margin
}

// scoreSpans scores held-out decodes at a threshold: exact match and
// token F1 over every document, abstention precision and recall.
func scoreSpans(docs []spanDoc, answers []string, margin []float64, threshold float64) *ExtractReport {
	rep := &ExtractReport{N: len(docs)}
	var predAbs, goldAbs, bothAbs int
	for k := range docs {
		d := &docs[k]
		abstain := spanAbstains(margin[k], threshold)
		goldNull := d.ts == SpanNull
		switch {
		case goldNull && abstain:
			rep.ExactMatch++
			rep.F1++
			bothAbs++
		case !goldNull && !abstain:
			if answers[k] == d.gold {
				rep.ExactMatch++
			}
			rep.F1 += tokenF1(answers[k], d.gold)
		}
		if abstain {
			predAbs++
		}
		if goldNull {
			goldAbs++
		}
	}
	rep.ExactMatch /= float64(len(docs))
	rep.F1 /= float64(len(docs))
	rep.AbstainPrecision = float64(bothAbs) / float64(predAbs)
	rep.AbstainRecall = float64(bothAbs) / float64(goldAbs)
	return rep
}

// tokenF1 is SQuAD's token F1 between two answers: the harmonic mean of
// precision and recall of their whitespace-separated words (as multisets).
func tokenF1(pred, gold string) float64 {
	p, g := strings.Fields(pred), strings.Fields(gold)
	if len(p) == 0 || len(g) == 0 {
		if len(p) == len(g) {
			return 1
		}
		return 0
	}
	return OverlapF1(p, g)
}

// OverlapF1 is the F1 of the multiset overlap of predicted and gold tokens
// (SQuAD's token F1 after its tokenization): 0 when they share none.
func OverlapF1(pred, gold []string) float64 {
	count := map[string]int{}
	for _, w := range gold {
		count[w]++
	}
	common := 0
	for _, w := range pred {
		if count[w] > 0 {
			count[w]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	prec, rec := float64(common)/float64(len(pred)), float64(common)/float64(len(gold))
	return 2 * prec * rec / (prec + rec)
}
