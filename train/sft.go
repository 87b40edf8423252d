package train

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"time"

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

	Log      *slog.Logger
	Progress func(total int64) func(done int64, desc string)
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
			return fn(vals)
		})
		rejects += n
		if err != nil {
			return rejects, err
		}
	}
	return rejects, nil
}

func heldOut(text string, permille int) bool {
	h := fnv.New64a()
	io.WriteString(h, text)
	return h.Sum64()%1000 < uint64(permille)
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
	rejects, err := readRecords(o.Data, []string{o.PromptField, o.AnswerField}, func(vals []string) error {
		pr, an := vals[0], vals[1]
		ex := sftExample{o.Tokenizer.Encode(pr), o.Tokenizer.Encode(an)}
		dst := train
		if heldOut(pr+"\x00"+an, o.ValPermille) {
			dst = val
			valEx = append(valEx, ex)
		}
		dst.addExample(ex)
		return nil
	})
	if err != nil {
		return err
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
	log.Info("sft data", "rejected_rows", rejects, "train_records", train.Docs(), "train_tokens", len(train.Tokens), "val_records", val.Docs())

	m := NewModel(c, p)
	opt := NewAdamW(p, o.WeightDecay)
	rowTokens := int64(o.SeqLen * o.Batch)
	totalSteps := max(1, int64(math.Ceil(o.Epochs*float64(len(train.Tokens))/float64(rowTokens))))
	sched := Schedule{LR: o.LR, MinLR: o.MinLR, Warmup: o.Warmup, Total: totalSteps}
	packer := &Packer{C: train, RowLen: o.SeqLen, Seed: o.Seed}
	ids := make([]int32, rowTokens)
	learn := make([]bool, rowTokens)
	tg := make([]int32, rowTokens)
	var bar func(int64, string)
	if o.Progress != nil {
		bar = o.Progress(totalSteps)
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
		attrs := []any{"step", step, "val_loss", fmt.Sprintf("%.4f", vl), "val_tokens", n}
		if k > 0 {
			attrs = append(attrs, "exact", float64(exact)/float64(k), "stopped", float64(stops)/float64(k))
		}
		log.Info("sft eval", attrs...)
	}
	evaluate(0)
	tWin, tokWin := time.Now(), int64(0)
	for step := int64(0); step < totalSteps; step++ {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		for r := 0; r < o.Batch; r++ {
			packer.Next(ids[r*o.SeqLen:(r+1)*o.SeqLen], learn[r*o.SeqLen:(r+1)*o.SeqLen])
		}
		Targets(ids, o.SeqLen, tg, learn)
		p.ZeroGrad()
		hf := m.Forward(ids, o.SeqLen)
		loss, n, dhf := FullCE(m, hf, tg, true)
		if n == 0 {
			continue
		}
		m.Backward(dhf)
		gn := GradNorm(p)
		scale := 1.0
		if o.Clip > 0 && gn > o.Clip {
			scale = o.Clip / gn
		}
		lr := sched.At(step)
		opt.Update(p, lr, scale)
		tokWin += rowTokens
		if o.LogEvery > 0 && ((step+1)%int64(o.LogEvery) == 0 || step+1 == totalSteps) {
			log.Info("sft", "step", step+1, "loss", fmt.Sprintf("%.4f", loss), "lr", fmt.Sprintf("%.3g", lr), "grad_norm", fmt.Sprintf("%.3g", gn), "tok/s", fmt.Sprintf("%.0f", float64(tokWin)/time.Since(tWin).Seconds()))
			tWin, tokWin = time.Now(), 0
		}
		if bar != nil {
			bar(step+1, fmt.Sprintf("loss %.3f", loss))
		}
	}
	evaluate(totalSteps)
	if gen.Templates == nil {
		gen.Templates = map[string]string{}
	}
	if err := SaveCheckpoint(o.Out, c, p, gen, o.TokenizerPath); err != nil {
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
