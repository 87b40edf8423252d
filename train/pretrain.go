package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/onecore-dev/onecore/internal/atomicfile"
)

// PretrainOptions configures a pretraining run.
type PretrainOptions struct {
	Config        *Config
	Tokenizer     Tokenizer
	TokenizerPath string // copied into the checkpoint
	Data          []string
	TextField     string
	Out           string
	Resume        bool
	Seed          uint64
	// InitFrom starts from a checkpoint's weights (same config) instead of
	// a random initialisation, with a fresh optimizer and schedule.
	InitFrom string

	Tokens      int64 // training tokens in total (rows×row_len×steps)
	SeqLen      int   // tokens per row
	Batch       int   // rows per step
	LR, MinLR   float64
	Warmup      int64 // steps
	WeightDecay float64
	Clip        float64
	Negatives   int
	AuxCoef     float64

	ValPermille int
	ValTokens   int
	EvalEvery   int64 // tokens; 0 = only at the end
	CkptEvery   int64 // tokens; 0 = only at the end
	LogEvery    int   // steps
	Generations int   // greedy samples printed per eval
	// Workers is the number of training threads, each pinned to its own
	// core (≤ 0: the usable CPUs). Results do not depend on it.
	Workers int
	// MicroBatch is the number of rows per micro-batch, the unit of work
	// of one worker (≤ 0: Batch/16 rounded up, so at most 16 per step).
	// Results depend on it, not on Workers; each micro-batch holds a
	// gradient buffer the size of the model.
	MicroBatch int
	// StopAfterSteps ends the run early (as if killed) after this many
	// steps of this invocation, without a final checkpoint: for tests.
	StopAfterSteps int64

	// Cache is the token cache directory (default Out/tokcache); runs over
	// the same data may share one.
	Cache string
	// TokenizeWorkers tokenize the corpus into the cache (0: GOMAXPROCS);
	// the cache, and so the run, does not depend on it.
	TokenizeWorkers int

	Log *slog.Logger
	// Progress, when set, makes a progress bar of total steps (typically
	// on a terminal); done is the steps done, desc the loss, lr and speed.
	Progress func(total int64) func(done int64, desc string)
}

// fingerprint covers the options a resumed run must share with the original.
func (o *PretrainOptions) fingerprint() string {
	fp := []any{o.Config, o.Data, o.TextField, o.Seed, o.InitFrom, o.SeqLen, o.Batch, o.LR, o.MinLR, o.Warmup, o.WeightDecay, o.Clip, o.Negatives, o.AuxCoef, o.ValPermille}
	if mb := microRows(o.MicroBatch, o.Batch); mb > 1 {
		fp = append(fp, mb) // absent at 1, so runs begun before it existed resume
	}
	b, _ := json.Marshal(fp)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// metrics appends JSON lines to out/metrics.jsonl.
type metrics struct{ w io.WriteCloser }

func (m *metrics) write(v map[string]any) {
	if m.w == nil {
		return
	}
	for k, x := range v { // JSON has no NaN/Inf: write null
		if f, ok := x.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			v[k] = nil
		}
	}
	b, _ := json.Marshal(v)
	m.w.Write(append(b, '\n'))
}

// openMetrics opens out/metrics.jsonl; on resume it keeps only the lines of
// steps up to the checkpoint (later ones are recomputed identically).
func openMetrics(out string, keepUpTo int64, resume bool) (*metrics, error) {
	path := filepath.Join(out, "metrics.jsonl")
	if !resume {
		f, err := os.Create(path)
		return &metrics{f}, err
	}
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var kept []byte
	for _, line := range splitLines(old) {
		var rec struct {
			Step int64 `json:"step"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Step <= keepUpTo {
			kept = append(append(kept, line...), '\n')
		}
	}
	if err := atomicfile.WriteFile(path, kept); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	return &metrics{f}, err
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, b[:i])
		}
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}

// ErrInterrupted is returned when the context was cancelled; the run saved
// a checkpoint and can be resumed.
var ErrInterrupted = errors.New("training interrupted (checkpoint saved; rerun with --resume)")

// ErrInterruptedEarly is returned when the context was cancelled before the
// run's first checkpoint: nothing was saved, a rerun starts over.
var ErrInterruptedEarly = errors.New("training interrupted before its first checkpoint (nothing saved; rerun to start over)")

// Pretrain runs sampled-softmax pretraining and writes checkpoints to o.Out.
func Pretrain(ctx context.Context, o PretrainOptions) error {
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := o.Config
	if o.SeqLen <= 1 || o.Batch <= 0 || o.Negatives <= 0 {
		return fmt.Errorf("seq-len (%d), batch (%d) and negatives (%d) must be positive", o.SeqLen, o.Batch, o.Negatives)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	statePath := filepath.Join(o.Out, "train_state", "state.json")
	_, statErr := os.Stat(statePath)
	if statErr == nil && !o.Resume {
		return fmt.Errorf("%s holds a run (train_state/); pass --resume to continue it or choose another --out", o.Out)
	}
	var err error
	if o.TokenizerPath, err = pinTokenizer(o.Out, o.TokenizerPath); err != nil {
		return err
	}
	t0 := time.Now()
	data, err := OpenTokenCache(ctx, o.tokenCacheOptions(log))
	if err != nil {
		return err
	}
	defer data.Close()
	train, val, counts := data.Train, data.Val, data.Counts
	if val.Docs() == 0 {
		log.Warn("no held-out documents: val_flat is unavailable (raise --val-permille; a corpus of one document has none)")
	}
	log.Info("data", "rejected_rows", data.Rejects, "train_docs", train.Docs(), "train_tokens", train.Len(), "val_docs", val.Docs(), "val_tokens", val.Len(), "secs", time.Since(t0).Seconds())
	logq := make([]float64, c.VocabSize)
	var total int64
	for _, n := range counts {
		total += n
	}
	for id, n := range counts {
		logq[id] = math.Log(float64(max(n, 1)) / float64(total))
	}
	neg := newUnigram(counts, false)
	probeUni := newUnigram(counts, true)
	mask := make([]bool, c.VocabSize)
	for id, n := range counts {
		mask[id] = n == 0 && id > eosID
	}
	gen := &Generation{VocabMask: MaskFromCounts(counts), StopIDs: []int32{eosID}}

	p := NewParams[float32](ParamSpecs(c, 0))
	p.Init(c, o.Seed)
	if o.InitFrom != "" {
		fc, fp, _, err := LoadCheckpoint(o.InitFrom)
		if err != nil {
			return err
		}
		a, _ := json.Marshal(fc)
		b, _ := json.Marshal(c)
		if string(a) != string(b) {
			return fmt.Errorf("--init-from %s: its config %s differs from --config %s", o.InitFrom, a, b)
		}
		for _, s := range p.Specs {
			copy(p.W(s.Name), fp.W(s.Name))
		}
	}
	opt := NewAdamW(p, o.WeightDecay)
	m := NewModel(c, p) // evaluation, on this goroutine
	mbRows := microRows(o.MicroBatch, o.Batch)
	nMicro := (o.Batch + mbRows - 1) / mbRows
	workers := resolveWorkers(o.Workers, nMicro, log)
	// the balance loss is taken per micro-batch and averaged over them
	dp := newDataParallel(c, p, workers, o.AuxCoef/float64(nMicro), log)
	defer dp.close()
	log.Info("workers", "workers", workers, "micro_batches", nMicro, "rows_per_micro_batch", mbRows)
	rowTokens := int64(o.SeqLen * o.Batch)
	totalSteps := max(1, o.Tokens/rowTokens)
	sched := Schedule{LR: o.LR, MinLR: o.MinLR, Warmup: capWarmup(o.Warmup, totalSteps, log), Total: totalSteps}
	packer := &Packer{C: train, RowLen: o.SeqLen, Seed: o.Seed}
	st := &TrainState{Seed: o.Seed, Options: o.fingerprint(), Data: corpusDigest(train, val, counts)}
	fresh := st
	if o.Resume && statErr != nil {
		log.Info("no train_state/ in the output directory: starting a new run", "dir", o.Out)
	}
	if o.Resume && statErr == nil {
		st, err = loadTrainState(o.Out, p, opt)
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		if err := checkResume(statePath, st, fresh); err != nil {
			return err
		}
		packer.Cur = st.Cursor
		log.Info("resumed", "step", st.Step, "tokens", st.Tokens, "cursor", fmt.Sprintf("%+v", st.Cursor))
	}
	mt, err := openMetrics(o.Out, st.Step, o.Resume)
	if err != nil {
		return err
	}
	defer mt.w.Close()

	save := func() error {
		st.Cursor = packer.Cur
		if err := SaveCheckpoint(o.Out, c, p, gen, o.TokenizerPath); err != nil {
			return err
		}
		return saveTrainState(o.Out, p, opt, st)
	}
	evaluate := func() {
		te := time.Now()
		vf, n := ValFlat(m, val, o.SeqLen, o.Batch, o.ValTokens)
		pr := runProbes(m, o.Tokenizer, probeUni, mask, o.Seed)
		rec := map[string]any{"step": st.Step, "tokens": st.Tokens, "val_flat": vf, "val_tokens": n, "induct": pr.Induct, "shift": pr.Shift, "add": pr.Add}
		log.Info("eval", "step", fmt.Sprintf("%d/%d", st.Step, totalSteps), "tokens", st.Tokens, "val_flat", fmt.Sprintf("%.4f", vf), "val_tokens", n, "induct", pr.Induct, "shift", pr.Shift, "add", pr.Add, "secs", fmt.Sprintf("%.1f", time.Since(te).Seconds()))
		var samples []string
		for i := 0; i < o.Generations && i < val.Docs(); i++ {
			doc := val.Doc(i)
			prompt := doc[:min(len(doc), 12)]
			out := Generate(m, prompt, 24, mask)
			s := fmt.Sprintf("%q → %q", o.Tokenizer.Decode(prompt[1:]), o.Tokenizer.Decode(out))
			samples = append(samples, s)
			log.Info("sample", "step", st.Step, "text", s)
		}
		rec["samples"] = samples
		mt.write(rec)
	}

	var bar func(int64, string)
	if o.Progress != nil {
		bar = o.Progress(totalSteps)
		bar(st.Step, "")
	}
	ids := make([]int32, rowTokens)
	tg := make([]int32, rowTokens)
	negs := make([]int32, o.Negatives)
	mbLoss, mbAux := make([]float64, nMicro), make([]float64, nMicro)
	mbLoad := make([][][]int, nMicro)
	for k := range mbLoad {
		mbLoad[k] = make([][]int, len(c.Layers))
	}
	var runSteps int64
	if st.Step == 0 && o.EvalEvery > 0 {
		evaluate() // the untrained baseline
	}
	pc := newPace(totalSteps)
	for st.Step < totalSteps {
		if ctx.Err() != nil {
			if err := save(); err != nil {
				return err
			}
			return ErrInterrupted
		}
		for r := 0; r < o.Batch; r++ {
			packer.Next(ids[r*o.SeqLen:(r+1)*o.SeqLen], nil)
		}
		Targets(ids, o.SeqLen, tg, nil)
		rng := rand.New(rand.NewPCG(o.Seed, uint64(st.Step)))
		for i := range negs {
			negs[i] = neg.draw(rng)
		}
		nTgt := 0
		for _, y := range tg {
			if y >= 0 {
				nTgt++
			}
		}
		dp.micro(nMicro, func(w *dpWorker, k int) {
			a, b := k*mbRows*o.SeqLen, min((k+1)*mbRows, o.Batch)*o.SeqLen
			hf := w.m.Forward(ids[a:b], o.SeqLen)
			l, _, dhf := sampledSoftmax(w.m, hf, tg[a:b], negs, logq, max(nTgt, 1))
			w.m.Backward(dhf)
			w.touch(ids[a:b])
			w.touch(negs)
			mbLoss[k], mbAux[k] = l, w.m.AuxLoss
			copy(mbLoad[k], w.m.Load)
		})
		loss, aux := 0.0, 0.0
		for k := range nMicro { // fixed order: the same sums for any --workers
			loss += mbLoss[k]
			aux += mbAux[k]
		}
		gn := dp.reduce(nMicro)
		scale := 1.0
		if o.Clip > 0 && gn > o.Clip {
			scale = o.Clip / gn
		}
		lr := sched.At(st.Step)
		dp.update(opt, lr, scale)
		st.Step++
		st.Tokens += rowTokens
		runSteps++
		pc.step(rowTokens)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return fmt.Errorf("step %d: loss is %v (lower --lr?)", st.Step, loss)
		}
		rec := map[string]any{"step": st.Step, "tokens": st.Tokens, "loss": loss, "lr": lr, "grad_norm": gn}
		stepLoad := sumLoads(mbLoad[:nMicro])
		if len(c.MoELayers) > 0 {
			rec["aux"] = aux
			load := map[string][]int{}
			for li, l := range stepLoad {
				if l != nil {
					load[fmt.Sprint(li)] = l
				}
			}
			rec["expert_load"] = load
		}
		if o.LogEvery > 0 && (st.Step%int64(o.LogEvery) == 0 || st.Step == totalSteps) {
			tps, tpc := pc.window()
			rec["tok_s"] = tps
			attrs := []any{"step", fmt.Sprintf("%d/%d", st.Step, totalSteps), "tokens", st.Tokens, "tok/s", fmt.Sprintf("%.0f", tps), "eta", pc.eta(st.Step).String(),
				"lr", fmt.Sprintf("%.3g", lr), "loss", fmt.Sprintf("%.4f", loss), "grad_norm", fmt.Sprintf("%.3g", gn)}
			if tpc > 0 {
				rec["tok_cpu_s"] = tpc
				attrs = append(attrs, "tok/cpu-s", fmt.Sprintf("%.0f", tpc))
			}
			for li, l := range stepLoad {
				if l != nil {
					attrs = append(attrs, fmt.Sprintf("load%d", li), loadSummary(l))
				}
			}
			log.Info("train", attrs...)
		}
		mt.write(rec)
		if bar != nil {
			bar(st.Step, pc.barText(loss, lr))
		}
		if o.StopAfterSteps > 0 && runSteps >= o.StopAfterSteps {
			return nil
		}
		// eval and checkpoint when the token count crosses a multiple of the
		// interval, so a resumed run keeps the same schedule
		if crossed(st.Tokens, rowTokens, o.EvalEvery) && st.Step < totalSteps {
			evaluate()
		}
		if crossed(st.Tokens, rowTokens, o.CkptEvery) && st.Step < totalSteps {
			if err := save(); err != nil {
				return err
			}
			log.Info("checkpoint", "dir", o.Out, "step", st.Step)
		}
	}
	evaluate()
	if err := save(); err != nil {
		return err
	}
	log.Info("done", "dir", o.Out, "steps", st.Step, "tokens", st.Tokens)
	return nil
}

// sumLoads adds the per-layer expert loads of micro-batches (nil for
// dense layers).
func sumLoads(mbs [][][]int) [][]int {
	if len(mbs) == 0 {
		return nil
	}
	out := make([][]int, len(mbs[0]))
	for _, mb := range mbs {
		for li, l := range mb {
			if l == nil {
				continue
			}
			if out[li] == nil {
				out[li] = make([]int, len(l))
			}
			for e, v := range l {
				out[li][e] += v
			}
		}
	}
	return out
}

// loadSummary is "max/min tokens per expert" plus the busiest expert.
func loadSummary(l []int) string {
	mx, mn, arg := l[0], l[0], 0
	for e, v := range l {
		if v > mx {
			mx, arg = v, e
		}
		mn = min(mn, v)
	}
	return fmt.Sprintf("max=%d(e%d) min=%d", mx, arg, mn)
}

// crossed reports whether the step that ended at tokens crossed a multiple of every.
func crossed(tokens, step, every int64) bool {
	return every > 0 && tokens/every != (tokens-step)/every
}
