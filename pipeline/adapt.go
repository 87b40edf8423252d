package pipeline

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/onecore-dev/onecore/amx"
	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/engine/tokenizer"
	"github.com/onecore-dev/onecore/jobs"
	"github.com/onecore-dev/onecore/readers"
	"github.com/onecore-dev/onecore/writers"
)

// This file connects the pipeline to onecore's readers, tokenizer, engine
// and writers.

// ExpandInputs lists the shards of inputs (files, directories, globs),
// sorted. A shard's key is its path relative to the input it came from,
// so output part names do not depend on where the corpus is mounted. Two
// inputs may hold the same relative path: Run gives all but one of them
// their full path as key (see resolveKeys), so adding such a file never
// changes the keys, and parts, of the others. What the listing skips
// (dangling links, link cycles, pipes and other non-regular files) is
// warned about on log (slog.Default() when nil); see readers.ExpandLog.
func ExpandInputs(inputs []string, log *slog.Logger) ([]Shard, error) {
	shs, err := readers.ExpandLog(inputs, log)
	if err != nil {
		return nil, err
	}
	out := make([]Shard, len(shs))
	for i, s := range shs {
		key := s.Rel
		if key == "" {
			key = filepath.Base(s.Path)
		}
		out[i] = Shard{Key: key, Path: s.Path, Size: s.Size, ModNS: s.ModNS, Ref: s}
	}
	return out, nil
}

// ReaderSource opens shards with package readers.
type ReaderSource struct{}

// Open implements Source.
func (ReaderSource) Open(s Shard, o ReadOptions) (DocReader, error) {
	sh, ok := s.Ref.(readers.Shard)
	if !ok {
		sh = readers.Shard{Path: s.Path, Size: s.Size, Format: readers.FormatOf(s.Path)}
	}
	r, err := readers.OpenShard(sh, readers.Options{TextField: o.TextField, IDField: o.IDField, Keep: o.Keep, MaxDocBytes: o.MaxDocBytes})
	if err != nil {
		return nil, convertReadErr(err, s.Path)
	}
	return &readerAdapter{r: r}, nil
}

type readerAdapter struct{ r *readers.Reader }

// Fraction implements Fractioner.
func (a *readerAdapter) Fraction() float64 { return a.r.Fraction() }

// RowCount implements RowCounter.
func (a *readerAdapter) RowCount() (int64, bool) { return a.r.RowCount() }

func (a *readerAdapter) Next() (Doc, error) {
	d, err := a.r.Next()
	if err != nil {
		return Doc{}, convertReadErr(err, a.r.Shard().Path)
	}
	keep := make([]Value, len(d.Keep))
	for i, v := range d.Keep {
		keep[i] = Value{S: v.S, Valid: v.Valid}
	}
	return Doc{ID: d.ID, Text: d.Text, File: d.Source.File, Row: d.Source.Row, Keep: keep}, nil
}

func (a *readerAdapter) Close() error { return a.r.Close() }

func convertReadErr(err error, path string) error {
	switch e := err.(type) {
	case *readers.Reject:
		return &RowError{File: e.File, Row: e.Row, ID: e.ID, Reason: e.Reason}
	case *readers.FileError:
		return &FileError{File: e.File, Row: e.Row, Err: e.Err}
	}
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return &FileError{File: path, Err: err}
}

// CreateWriter creates parts and merged outputs with package writers.
func CreateWriter(path, format string, schema *arrow.Schema) (PartWriter, error) {
	f, err := writers.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	// Ids and answers are mostly unique: no dictionary for them.
	return writers.Create(path, f, schema, writers.Options{Plain: []string{jobs.ColID, jobs.ColAnswer, jobs.ColFile}})
}

// Tok adapts a tokenizer.Tokenizer. Special tokens written literally in a
// document ("<bos>" as text) are encoded as ordinary text, so no document
// can fake a document boundary and no text is lost.
type Tok struct{ T *tokenizer.Tokenizer }

// Encode implements Tokenizer.
func (t Tok) Encode(s string) []int32 { return t.T.EncodeOrdinary(s) }

// Decode implements Tokenizer.
func (t Tok) Decode(ids []int32) string { return t.T.Decode(ids, true) }

// VocabSize is the number of token ids (extractive decoding lists them).
func (t Tok) VocabSize() int { return t.T.VocabSize() }

// EngineModel is a loaded checkpoint for the pipeline.
type EngineModel struct {
	M   *engine.Model
	Gen *engine.Generation
}

// LoadModel loads a checkpoint directory: weights (packed once, shared by
// every worker), generation settings and tokenizer.json.
func LoadModel(dir string) (*EngineModel, Tokenizer, error) {
	return LoadModelWith(dir, engine.ModelOptions{})
}

// LoadModelWith is LoadModel with the weights packed as opts says (int8).
func LoadModelWith(dir string, opts engine.ModelOptions) (*EngineModel, Tokenizer, error) {
	ck, err := engine.LoadCheckpoint(dir)
	if err != nil {
		return nil, nil, err
	}
	tk, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("model %s: %w", dir, err)
	}
	if tk.VocabSize() > ck.Config.VocabSize {
		return nil, nil, fmt.Errorf("model %s: tokenizer.json has %d tokens but config.json vocab_size is %d", dir, tk.VocabSize(), ck.Config.VocabSize)
	}
	m, err := engine.NewModelWith(ck, amx.Selected(), opts)
	if err != nil {
		return nil, nil, err
	}
	gen := ck.Generation
	if gen == nil {
		gen = &engine.Generation{}
	}
	return &EngineModel{M: m, Gen: gen}, Tok{tk}, nil
}

// NewWorker implements Model.
func (e *EngineModel) NewWorker() (Worker, error) {
	return &engineWorker{m: e, in: engine.NewInstance(e.M)}, nil
}

// Labels implements Model.
func (e *EngineModel) Labels() []string {
	if e.M.NumLabels() == 0 {
		return nil
	}
	if len(e.Gen.Labels) == e.M.NumLabels() {
		return e.Gen.Labels
	}
	l := make([]string, e.M.NumLabels())
	for i := range l {
		l[i] = fmt.Sprintf("label_%d", i)
	}
	return l
}

// ClassHead implements Model. The kind strings of generation.json are the
// jobs package's head kinds.
func (e *EngineModel) ClassHead() (string, []float32) {
	return e.Gen.HeadKind(), e.Gen.Thresholds
}

// Template implements Model.
func (e *EngineModel) Template(task string) string { return e.Gen.Templates[task] }

// SpanHead implements Model.
func (e *EngineModel) SpanHead() (bool, SpanOptions) {
	if !e.M.HasSpanHead() {
		return false, SpanOptions{}
	}
	return true, SpanOptions{Threshold: e.Gen.SpanThreshold, WholeWords: e.Gen.SpanWholeWords, OneLine: e.Gen.SpanOneLine, EndNext: e.Gen.SpanEndNext}
}

// StopIDs implements Model.
func (e *EngineModel) StopIDs() []int32 {
	if len(e.Gen.StopIDs) > 0 {
		return e.Gen.StopIDs
	}
	return []int32{engine.EosID}
}

type engineWorker struct {
	m  *EngineModel
	in *engine.Instance
}

func (w *engineWorker) Forward(docs [][]int32, want Want) ([]Output, error) {
	res, err := w.in.Prefill(docs, engine.Want{LogProbs: want.LogProbs, Mean: want.Mean, Classify: want.ClassLogits, Span: want.Span})
	if err != nil {
		return nil, err
	}
	out := make([]Output, len(res))
	for i, r := range res {
		out[i] = Output{LogProbs: r.LogProbs, Mean: r.Mean, ClassLogits: r.Class, Span: r.Span}
	}
	return out, nil
}

// Generate decodes greedily with the engine's batched decoder: one packed
// prefill of the prompts, then one incremental step per generated token,
// constrained by opt.Allow when set (the decoder applies it after the
// vocabulary mask). answer_logprob is the model's log-prob of the answer
// (plus the stop token that ended it) under the vocabulary mask alone, in
// every mode: the decoder reports it per token (LogProbsBeforeAllow), so
// no rescoring prefill is needed.
func (w *engineWorker) Generate(prompts [][]int32, opt GenOptions) ([]Generation, error) {
	stops := map[int32]bool{}
	for _, s := range w.m.StopIDs() {
		stops[s] = true
	}
	reqs := make([]engine.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = engine.Request{Prompt: p, MaxNew: opt.MaxNew, StopIDs: w.m.StopIDs(), LogProbs: true, LogProbsBeforeAllow: true}
		if opt.Allow != nil {
			reqs[i].Allow = func(gen []int32) []int32 { return opt.Allow(i, gen) }
		}
	}
	dec := w.in.NewDecoder()
	ids, err := dec.AddMany(reqs)
	if err != nil {
		return nil, err
	}
	index := make(map[int]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	gens := make([]Generation, len(prompts))
	for dec.Active() > 0 {
		for _, t := range dec.Step() {
			i := index[t.Seq]
			switch {
			case t.Token < 0: // nothing allowed: ends without a token
			case stops[t.Token]:
				gens[i].Stopped = true
				gens[i].LogProb += t.LogProb
			default:
				gens[i].Tokens = append(gens[i].Tokens, t.Token)
				gens[i].LogProb += t.LogProb
			}
		}
	}
	return gens, nil
}

func (w *engineWorker) Close() error { return nil }
