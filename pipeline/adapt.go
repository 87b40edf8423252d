package pipeline

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
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
// so output part names do not depend on where the corpus is mounted; when
// two inputs hold the same relative path the full paths are used instead.
func ExpandInputs(inputs []string) ([]Shard, error) {
	shs, err := readers.Expand(inputs)
	if err != nil {
		return nil, err
	}
	out := make([]Shard, len(shs))
	seen := map[string]bool{}
	unique := true
	for i, s := range shs {
		key := s.Rel
		if key == "" {
			key = filepath.Base(s.Path)
		}
		if seen[key] {
			unique = false
		}
		seen[key] = true
		out[i] = Shard{Key: key, Path: s.Path, Size: s.Size, Ref: s}
	}
	if !unique {
		for i := range out {
			out[i].Key = out[i].Path
		}
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
		return &RowError{File: e.File, Row: e.Row, Reason: e.Reason}
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

// EngineModel is a loaded checkpoint for the pipeline.
type EngineModel struct {
	M   *engine.Model
	Gen *engine.Generation
}

// LoadModel loads a checkpoint directory: weights (packed once, shared by
// every worker), generation settings and tokenizer.json.
func LoadModel(dir string) (*EngineModel, Tokenizer, error) {
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
	m, err := engine.NewModel(ck)
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

// Template implements Model.
func (e *EngineModel) Template(task string) string { return e.Gen.Templates[task] }

// StopIDs implements Model.
func (e *EngineModel) StopIDs() []int32 {
	if len(e.Gen.StopIDs) > 0 {
		return e.Gen.StopIDs
	}
	return []int32{engine.EosID}
}

type engineWorker struct {
	m    *EngineModel
	in   *engine.Instance
	mask []bool // vocabulary mask (true: never generated)
}

func (w *engineWorker) Forward(docs [][]int32, want Want) ([]Output, error) {
	res, err := w.in.Prefill(docs, engine.Want{LogProbs: want.LogProbs, Mean: want.Mean, Classify: want.ClassLogits})
	if err != nil {
		return nil, err
	}
	out := make([]Output, len(res))
	for i, r := range res {
		out[i] = Output{LogProbs: r.LogProbs, Mean: r.Mean, ClassLogits: r.Class}
	}
	return out, nil
}

// Generate decodes greedily. Unconstrained, it uses the engine's batched
// decoder and then one prefill over prompt+answer for the answer's
// log-prob. Constrained (opt.Allow), each step is a prefill that reads the
// last position's logits and picks the best allowed id — slower, but exact.
func (w *engineWorker) Generate(prompts [][]int32, opt GenOptions) ([]Generation, error) {
	stops := map[int32]bool{}
	for _, s := range w.m.StopIDs() {
		stops[s] = true
	}
	gens := make([]Generation, len(prompts))
	if opt.Allow == nil {
		stopTok := make([]int32, len(prompts))
		dec := w.in.NewDecoder()
		ids := make(map[int]int, len(prompts))
		for i, p := range prompts {
			id, err := dec.Add(engine.Request{Prompt: p, MaxNew: opt.MaxNew, StopIDs: w.m.StopIDs()})
			if err != nil {
				return nil, err
			}
			ids[id] = i
		}
		for dec.Active() > 0 {
			for _, t := range dec.Step() {
				g := &gens[ids[t.Seq]]
				if stops[t.Token] {
					g.Stopped = true
					stopTok[ids[t.Seq]] = t.Token
				} else {
					g.Tokens = append(g.Tokens, t.Token)
				}
			}
		}
		return gens, w.answerLogProbs(prompts, gens, stopTok)
	}
	active := make([]int, len(prompts))
	for i := range active {
		active[i] = i
	}
	for step := 0; step < opt.MaxNew && len(active) > 0; step++ {
		seqs := make([][]int32, len(active))
		for k, i := range active {
			seqs[k] = concat(prompts[i], gens[i].Tokens)
		}
		res, err := w.in.Prefill(seqs, engine.Want{Logits: engine.LogitsLast})
		if err != nil {
			return nil, err
		}
		next := active[:0]
		for k, i := range active {
			allowed := opt.Allow(i, gens[i].Tokens)
			if len(allowed) == 0 {
				continue
			}
			logits := res[k].Logits
			w.applyMask(logits)
			lse := logSumExp(logits)
			best := int32(-1)
			for _, id := range allowed {
				if int(id) < len(logits) && !math.IsInf(float64(logits[id]), -1) && (best < 0 || logits[id] > logits[best] || logits[id] == logits[best] && id < best) {
					best = id
				}
			}
			if best < 0 {
				continue
			}
			gens[i].LogProb += logits[best] - lse
			if stops[best] {
				gens[i].Stopped = true
				continue
			}
			gens[i].Tokens = append(gens[i].Tokens, best)
			next = append(next, i)
		}
		active = next
	}
	return gens, nil
}

// answerLogProbs fills each generation's log-prob (answer tokens, plus the
// stop token when one ended it) with one batched prefill, under the
// vocabulary mask the decoder sampled with.
func (w *engineWorker) answerLogProbs(prompts [][]int32, gens []Generation, stop []int32) error {
	seqs := make([][]int32, len(prompts))
	for i, p := range prompts {
		seqs[i] = concat(p, gens[i].Tokens)
		if gens[i].Stopped {
			seqs[i] = append(seqs[i], stop[i])
		}
	}
	res, err := w.in.Prefill(seqs, engine.Want{LogProbs: true, MaskVocab: true})
	if err != nil {
		return err
	}
	for i, p := range prompts {
		var s float32
		for _, v := range res[i].LogProbs[len(p)-1:] {
			s += v
		}
		gens[i].LogProb = s
	}
	return nil
}

func (w *engineWorker) applyMask(logits []float32) {
	if w.mask == nil {
		w.mask = make([]bool, len(logits))
		for _, id := range w.m.Gen.VocabMask {
			if int(id) < len(w.mask) {
				w.mask[id] = true
			}
		}
	}
	for id, m := range w.mask {
		if m {
			logits[id] = float32(math.Inf(-1))
		}
	}
}

func logSumExp(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v - m))
	}
	return m + float32(math.Log(s))
}

func (w *engineWorker) Close() error { return nil }
