package train

import (
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

	"github.com/onecore-dev/onecore/readers"
)

// SFTOptions configures supervised fine-tuning on prompt/answer records.
type SFTOptions struct {
	From, Out                string
	Data                     []string
	PromptField, AnswerField string
	Tokenizer                Tokenizer
	TokenizerPath            string

	Epochs      float64
	SeqLen      int
	Batch       int
	LR, MinLR   float64
	Warmup      int64
	WeightDecay float64
	Clip        float64
	Seed        uint64
	ValPermille int
	LogEvery    int
	Samples     int // greedy generations checked against the held-out answers
	// Workers is the number of training threads, each pinned to its own
	// core (≤ 0: the usable CPUs). Results do not depend on it.
	Workers int
	// MicroBatch is the number of rows per micro-batch (≤ 0: Batch/16
	// rounded up); results depend on it, not on Workers.
	MicroBatch int
	// CkptEvery checkpoints every this many steps (0: only on
	// interruption and at the end).
	CkptEvery int64
	// Resume continues the run in Out from its train_state/.
	Resume bool
	// StopAfterSteps ends the run early (as if killed) after this many
	// steps of this invocation, without a checkpoint: for tests.
	StopAfterSteps int64

	Log *slog.Logger
	// Progress, when set, makes a progress bar of total steps.
	Progress func(total int64) func(done int64, desc string)
}

// fingerprint covers the options a resumed run must share with the original.
func (o *SFTOptions) fingerprint() string {
	b, _ := json.Marshal([]any{o.From, o.Data, o.PromptField, o.AnswerField, o.Epochs, o.SeqLen, o.Batch, o.LR, o.MinLR, o.Warmup, o.WeightDecay, o.Clip, o.Seed, o.ValPermille, microRows(o.MicroBatch, o.Batch)})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// readRecords calls fn with fields (the first is the reader's text field)
// of every row of paths (Parquet or JSON Lines); a row missing one of them
// is an error naming file and row. It returns the malformed rows skipped.
func readRecords(paths []string, fields []string, fn func(vals []string) error) (int, error) {
	shards, err := readers.Expand(paths)
	if err != nil {
		return 0, fmt.Errorf("data: %w", err)
	}
	rejects := 0
	for _, sh := range shards {
		n, err := readRows(sh.Path, fields[0], fields[1:], func(row int64, text string, keep []readers.Value) error {
			vals := []string{text}
			for i, v := range keep {
				if !v.Valid {
					return fmt.Errorf("data %s: row %d: field %q missing or null", sh.Path, row, fields[i+1])
				}
				vals = append(vals, v.S)
			}
			if err := fn(vals); err != nil {
				return fmt.Errorf("data %s: row %d: %w", sh.Path, row, err)
			}
			return nil
		})
		rejects += n
		if err != nil {
			return rejects, err
		}
	}
	return rejects, nil
}

// sftExample is one tokenized prompt/answer pair.
type sftExample struct{ prompt, answer []int32 }

// SFT fine-tunes the checkpoint o.From on prompt/answer records: the loss is
// the full-vocabulary cross-entropy of the answer tokens and the closing
// <eos> only (prompt tokens are context), so the model learns to answer and
// to stop. Classifier heads of the source checkpoint are dropped.
func SFT(ctx context.Context, o SFTOptions) error {
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c, src, gen, err := LoadCheckpoint(o.From)
	if err != nil {
		return err
	}
	p := NewParams[float32](ParamSpecs(c, 0))
	for _, s := range p.Specs {
		copy(p.W(s.Name), src.W(s.Name))
	}
	train, val := &Corpus{Offs: []int64{0}}, &Corpus{Offs: []int64{0}}
	var valEx []sftExample
	var exs []sftExample
	var hs []uint64
	dg := newDataDigest()
	rejects, err := readRecords(o.Data, []string{o.PromptField, o.AnswerField}, func(vals []string) error {
		pr, an := vals[0], vals[1]
		dg.add(pr, an)
		exs = append(exs, sftExample{o.Tokenizer.Encode(pr), o.Tokenizer.Encode(an)})
		hs = append(hs, textHash(pr+"\x00"+an))
		return nil
	})
	if err != nil {
		return err
	}
	for i, held := range heldOutSplit(hs, o.ValPermille) {
		if held {
			val.addExample(exs[i])
			valEx = append(valEx, exs[i])
		} else {
			train.addExample(exs[i])
		}
	}
	if train.Docs() == 0 {
		return fmt.Errorf("data %v: no training records", o.Data)
	}
	counts, err := train.Counts(c.VocabSize)
	if err != nil {
		return err
	}
	if _, err := val.Counts(c.VocabSize); err != nil {
		return err
	}
	// ids seen now are no longer masked
	masked := map[int32]bool{}
	for _, id := range gen.VocabMask {
		if counts[id] == 0 {
			masked[id] = true
		}
	}
	gen.VocabMask = gen.VocabMask[:0]
	mask := make([]bool, c.VocabSize)
	for id := range mask {
		if masked[int32(id)] {
			gen.VocabMask = append(gen.VocabMask, int32(id))
			mask[id] = true
		}
	}
	gen.Labels = nil
	gen.SpanThreshold = 0 // the span head is not carried over
	log.Info("sft data", "rejected_rows", rejects, "train_records", train.Docs(), "train_tokens", len(train.Tokens), "val_records", val.Docs())

	statePath := filepath.Join(o.Out, "train_state", "state.json")
	_, statErr := os.Stat(statePath)
	if statErr == nil && !o.Resume {
		return fmt.Errorf("%s holds a run (train_state/); pass --resume to continue it or choose another --out", o.Out)
	}
	if o.Resume && statErr != nil {
		log.Info("no train_state/ in the output directory: starting a new run", "dir", o.Out)
	}
	m := NewModel(c, p) // evaluation, on this goroutine
	opt := NewAdamW(p, o.WeightDecay)
	rowTokens := int64(o.SeqLen * o.Batch)
	totalSteps := max(1, int64(math.Ceil(o.Epochs*float64(len(train.Tokens))/float64(rowTokens))))
	sched := Schedule{LR: o.LR, MinLR: o.MinLR, Warmup: capWarmup(o.Warmup, totalSteps, log), Total: totalSteps}
	packer := &Packer{C: train, RowLen: o.SeqLen, Seed: o.Seed}
	st := &TrainState{Seed: o.Seed, Options: o.fingerprint(), Data: dg.String()}
	fresh := st
	if o.Resume && statErr == nil {
		if st, err = loadTrainState(o.Out, p, opt); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		if err := checkResume(statePath, st, fresh); err != nil {
			return err
		}
		packer.Cur = st.Cursor
		log.Info("resumed", "step", st.Step, "cursor", fmt.Sprintf("%+v", st.Cursor))
	}
	if gen.Templates == nil {
		gen.Templates = map[string]string{}
	}
	save := func() error {
		st.Cursor = packer.Cur
		if err := SaveCheckpoint(o.Out, c, p, gen, o.TokenizerPath); err != nil {
			return err
		}
		return saveTrainState(o.Out, p, opt, st)
	}
	mbRows := microRows(o.MicroBatch, o.Batch)
	nMicro := (o.Batch + mbRows - 1) / mbRows
	workers := resolveWorkers(o.Workers, nMicro, log)
	dp := newDataParallel(c, p, workers, 0, log)
	defer dp.close()
	log.Info("workers", "workers", workers, "micro_batches", nMicro, "rows_per_micro_batch", mbRows)
	ids := make([]int32, rowTokens)
	learn := make([]bool, rowTokens)
	tg := make([]int32, rowTokens)
	mbLoss := make([]float64, nMicro)
	var bar func(int64, string)
	if o.Progress != nil {
		bar = o.Progress(totalSteps)
		bar(st.Step, "")
	}
	evaluate := func(step int64) {
		vl, n := ValFlat(m, val, o.SeqLen, o.Batch, 1<<30)
		exact, stops := 0, 0
		k := min(o.Samples, len(valEx))
		for i := 0; i < k; i++ {
			ex := valEx[i]
			prompt := append([]int32{bosID}, ex.prompt...)
			out := Generate(m, prompt, len(ex.answer)+8, mask)
			if len(out) > 0 && out[len(out)-1] == eosID {
				stops++
				if fmt.Sprint(out[:len(out)-1]) == fmt.Sprint(ex.answer) {
					exact++
				}
			}
			if i < 3 {
				log.Info("sample", "step", step, "prompt", o.Tokenizer.Decode(ex.prompt), "want", o.Tokenizer.Decode(ex.answer), "got", o.Tokenizer.Decode(out))
			}
		}
		attrs := []any{"step", fmt.Sprintf("%d/%d", step, totalSteps), "val_loss", fmt.Sprintf("%.4f", vl), "val_tokens", n}
		if k > 0 {
			attrs = append(attrs, "exact", float64(exact)/float64(k), "stopped", float64(stops)/float64(k))
		}
		log.Info("sft eval", attrs...)
	}
	if st.Step == 0 {
		evaluate(0)
	}
	pc := newPace(totalSteps)
	var runSteps int64
	for ; st.Step < totalSteps; st.Step++ {
		if ctx.Err() != nil {
			if err := save(); err != nil {
				return err
			}
			return ErrInterrupted
		}
		if o.StopAfterSteps > 0 && runSteps >= o.StopAfterSteps {
			return nil
		}
		runSteps++
		if st.Step > 0 && o.CkptEvery > 0 && st.Step%o.CkptEvery == 0 {
			if err := save(); err != nil {
				return err
			}
			log.Info("checkpoint", "dir", o.Out, "step", st.Step)
		}
		for r := 0; r < o.Batch; r++ {
			packer.Next(ids[r*o.SeqLen:(r+1)*o.SeqLen], learn[r*o.SeqLen:(r+1)*o.SeqLen])
		}
		Targets(ids, o.SeqLen, tg, learn)
		nTgt := 0
		for _, y := range tg {
			if y >= 0 {
				nTgt++
			}
		}
		if nTgt == 0 {
			continue
		}
		dp.micro(nMicro, func(w *dpWorker, k int) {
			a, b := k*mbRows*o.SeqLen, min((k+1)*mbRows, o.Batch)*o.SeqLen
			hf := w.m.Forward(ids[a:b], o.SeqLen)
			l, _, dhf := fullCE(w.m, hf, tg[a:b], true, nTgt)
			w.m.Backward(dhf)
			w.touchAll() // the full-vocabulary loss writes every embedding row
			mbLoss[k] = l
		})
		var loss float64
		for _, l := range mbLoss {
			loss += l
		}
		gn := dp.reduce(nMicro)
		scale := 1.0
		if o.Clip > 0 && gn > o.Clip {
			scale = o.Clip / gn
		}
		lr := sched.At(st.Step)
		dp.update(opt, lr, scale)
		st.Tokens += rowTokens
		pc.step(rowTokens)
		if o.LogEvery > 0 && ((st.Step+1)%int64(o.LogEvery) == 0 || st.Step+1 == totalSteps) {
			tps, _ := pc.window()
			log.Info("sft", "step", fmt.Sprintf("%d/%d", st.Step+1, totalSteps), "tokens", st.Tokens, "tok/s", fmt.Sprintf("%.0f", tps), "eta", pc.eta(st.Step+1).String(),
				"lr", fmt.Sprintf("%.3g", lr), "loss", fmt.Sprintf("%.4f", loss), "grad_norm", fmt.Sprintf("%.3g", gn))
		}
		if bar != nil {
			bar(st.Step+1, pc.barText(loss, lr))
		}
	}
	evaluate(totalSteps)
	if err := save(); err != nil {
		return err
	}
	log.Info("done", "dir", o.Out, "steps", totalSteps)
	return nil
}

// addExample appends [bos] prompt answer [eos], marking answer and <eos>
// as the tokens to learn.
func (c *Corpus) addExample(ex sftExample) {
	if c.Learn == nil {
		c.Learn = make([]bool, len(c.Tokens))
	}
	c.Tokens = append(c.Tokens, bosID)
	c.Tokens = append(c.Tokens, ex.prompt...)
	for range 1 + len(ex.prompt) {
		c.Learn = append(c.Learn, false)
	}
	c.Tokens = append(c.Tokens, ex.answer...)
	c.Tokens = append(c.Tokens, eosID)
	for range len(ex.answer) + 1 {
		c.Learn = append(c.Learn, true)
	}
	c.Offs = append(c.Offs, int64(len(c.Tokens)))
}
