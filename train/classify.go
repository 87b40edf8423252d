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
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/onecore-dev/onecore/amx"
	"github.com/onecore-dev/onecore/engine"
)

// ClassifyOptions configures classifier-head training.
type ClassifyOptions struct {
	From, Out             string
	Data                  []string
	TextField, LabelField string
	// Head is the kind of head: engine.HeadMulticlass ("" too: one label
	// per document, softmax), HeadMultilabel (a JSON array of labels per
	// document, a sigmoid per label, thresholds tuned on the held-out
	// split) or HeadRegression (a number per document, squared error).
	Head string
	// Pooling is how the head sees a document: engine.PoolMean ("" too),
	// PoolLast or PoolAttention (a learned query, head.cls.q, that starts
	// at zero — the mean — and is learned in fine-tuning).
	Pooling       string
	Tokenizer     Tokenizer
	TokenizerPath string

	MaxTokens   int // documents are <bos> + their first MaxTokens−1 tokens (as the pipeline feeds them)
	ValPermille int
	HeadEpochs  int     // full-batch steps of the head on frozen features
	HeadLR      float64 // AdamW learning rate of the head
	Finetune    bool    // then train body and head together
	Epochs      float64 // fine-tuning epochs (≤ 0: AutoEpochs of the training tokens)
	LR          float64 // fine-tuning learning rate
	BatchTokens int     // fine-tuning tokens per step
	WeightDecay float64
	// Layers keeps only the source's first Layers layers (KeepLayers):
	// a shallower, faster classifier (≤ 0: every layer).
	Layers int
	Seed   uint64
	// Workers is the number of training threads, each pinned to its own
	// core (≤ 0: the usable CPUs). Results do not depend on it.
	Workers int
	// CkptEvery checkpoints the fine-tuning every this many steps (0: only
	// at its start, on interruption and at the end).
	CkptEvery int64
	// Resume continues the run in Out from its train_state/.
	Resume bool
	// StopAfterSteps ends fine-tuning early (as if killed) after this many
	// steps of this invocation, without a checkpoint: for tests.
	StopAfterSteps int64
	// onStep, when set, runs after every fine-tuning step (tests).
	onStep func()

	Log *slog.Logger
	// Progress, when set, makes a progress bar of total fine-tuning steps.
	Progress func(total int64) func(done int64, desc string)
}

// AutoFinetuneTokens and AutoMaxEpochs set the fine-tuning length when
// ClassifyOptions.Epochs is ≤ 0: enough epochs to see about
// AutoFinetuneTokens training tokens in all, at least one and at most
// AutoMaxEpochs. Small labeled sets need several passes (measured on the
// suite and the bible check, docs/notes/issue-15.md: 1 → 3 epochs was worth
// +1.7 to +3.3 points on sets of 0.5–0.9 M tokens), large ones need one.
const (
	AutoFinetuneTokens = 3_000_000
	AutoMaxEpochs      = 6
)

// AutoEpochs is the fine-tuning epochs for trainTokens tokens of training
// documents: AutoFinetuneTokens/trainTokens, clamped to [1, AutoMaxEpochs].
func AutoEpochs(trainTokens int64) float64 {
	if trainTokens <= 0 {
		return 1
	}
	return min(max(float64(AutoFinetuneTokens)/float64(trainTokens), 1), AutoMaxEpochs)
}

// fingerprint covers the options a resumed run must share with the original.
func (o *ClassifyOptions) fingerprint() string {
	v := []any{o.From, o.Data, o.TextField, o.LabelField, o.MaxTokens, o.ValPermille, o.HeadEpochs, o.HeadLR, o.Finetune, o.Epochs, o.LR, o.BatchTokens, o.WeightDecay, o.Seed}
	if k := o.headKind(); k != engine.HeadMulticlass {
		v = append(v, k) // multiclass runs keep the fingerprint they had before heads had kinds
	}
	if pl := o.poolingKind(); pl != engine.PoolMean {
		v = append(v, "pooling:"+pl) // likewise for mean-pooled runs
	}
	if o.Layers > 0 {
		v = append(v, fmt.Sprintf("layers:%d", o.Layers)) // likewise for full-depth runs
	}
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func (o *ClassifyOptions) poolingKind() string {
	if o.Pooling == "" {
		return engine.PoolMean
	}
	return o.Pooling
}

func (o *ClassifyOptions) headKind() string {
	if o.Head == "" {
		return engine.HeadMulticlass
	}
	return o.Head
}

// ClassifyReport is the held-out evaluation of a trained head. Accuracy is
// the share of documents whose label (multiclass) or whole label set
// (multilabel) is right; MicroF1, MacroF1 and PerLabelF1 are over labels.
// A regression head reports MAE, RMSE and Pearson's r in target units.
type ClassifyReport struct {
	Head              string
	Accuracy, MacroF1 float64
	MicroF1           float64
	PerLabelF1        []float64
	// Thresholds are a multilabel head's per-label thresholds, tuned on
	// the held-out split (so its F1 there is an optimistic estimate).
	Thresholds         []float32
	MAE, RMSE, Pearson float64
	N                  int
}

type labeledDoc struct {
	ids   []int32
	label int       // multiclass: the label's index
	y     []float32 // multilabel: 1/0 per label; regression: the standardized target
}

// Classify trains head.cls (logits = mean over the document's positions of
// the final-norm output · head.cls.w + head.cls.b) on labeled documents,
// optionally fine-tuning the body too, and writes a checkpoint with the
// head and the label set in generation.json.
func Classify(ctx context.Context, o ClassifyOptions) (*ClassifyReport, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c, src, gen, err := LoadCheckpoint(o.From)
	if err != nil {
		return nil, err
	}
	if c, err = keepLayersLogged(c, o.Layers, log); err != nil {
		return nil, err
	}
	kind := o.headKind()
	pooling := o.poolingKind()
	switch pooling {
	case engine.PoolMean, engine.PoolLast, engine.PoolAttention:
	default:
		return nil, fmt.Errorf("unknown pooling %q (want %s, %s or %s)", pooling, engine.PoolMean, engine.PoolLast, engine.PoolAttention)
	}
	if pooling == engine.PoolAttention && !o.Finetune {
		// the query starts at zero (the mean) and only fine-tuning moves it
		return nil, fmt.Errorf("attention pooling learns its query in fine-tuning: fine-tune (drop --finetune=false) or use --pooling mean or last")
	}
	type rec struct {
		text, label string
		tags        []string // multilabel
		value       float64  // regression
	}
	var recs []rec
	labelSet := map[string]bool{}
	dg := newDataDigest()
	rejects, err := readRecords(o.Data, []string{o.TextField, o.LabelField}, func(vals []string) error {
		r := rec{text: vals[0], label: vals[1]}
		dg.add(r.text, r.label)
		switch kind {
		case engine.HeadMulticlass:
			labelSet[r.label] = true
		case engine.HeadMultilabel:
			tags, err := parseLabelSet(r.label)
			if err != nil {
				return fmt.Errorf("field %q: %w", o.LabelField, err)
			}
			for _, t := range tags {
				labelSet[t] = true
			}
			r.tags = tags
		case engine.HeadRegression:
			v, err := strconv.ParseFloat(strings.TrimSpace(r.label), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("field %q: %q is not a finite number (a regression head needs one per document)", o.LabelField, r.label)
			}
			r.value = v
		default:
			return fmt.Errorf("unknown head kind %q (want %s, %s or %s)", kind, engine.HeadMulticlass, engine.HeadMultilabel, engine.HeadRegression)
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case kind == engine.HeadMulticlass && len(labelSet) < 2:
		return nil, fmt.Errorf("data %v: need at least 2 distinct values of %q, found %d", o.Data, o.LabelField, len(labelSet))
	case kind == engine.HeadMultilabel && len(labelSet) < 1:
		return nil, fmt.Errorf("data %v: no labels in %q (every label set is empty)", o.Data, o.LabelField)
	}
	labels := make([]string, 0, len(labelSet))
	for l := range labelSet {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	if kind == engine.HeadRegression {
		labels = []string{o.LabelField}
	}
	index := map[string]int{}
	for i, l := range labels {
		index[l] = i
	}
	L := len(labels)
	var trainDocs, valDocs []labeledDoc
	hs := make([]uint64, len(recs))
	for i, r := range recs {
		hs[i] = textHash(r.text)
	}
	held := heldOutSplit(hs, o.ValPermille)
	for i, r := range recs {
		ids := o.Tokenizer.Encode(r.text)
		if len(ids) > o.MaxTokens-1 {
			ids = ids[:o.MaxTokens-1]
		}
		for _, id := range ids {
			if id < 0 || int(id) >= c.VocabSize {
				return nil, fmt.Errorf("token id %d out of the model's vocabulary (%d)", id, c.VocabSize)
			}
		}
		d := labeledDoc{ids: append([]int32{bosID}, ids...), label: index[r.label]}
		switch kind {
		case engine.HeadMultilabel:
			d.y = make([]float32, L)
			for _, t := range r.tags {
				d.y[index[t]] = 1
			}
		case engine.HeadRegression:
			d.y = []float32{float32(r.value)} // standardized below
		}
		if held[i] {
			valDocs = append(valDocs, d)
		} else {
			trainDocs = append(trainDocs, d)
		}
	}
	if len(trainDocs) == 0 || len(valDocs) == 0 {
		return nil, fmt.Errorf("data: %d training and %d held-out documents; need both (adjust --val-permille)", len(trainDocs), len(valDocs))
	}
	log.Info("classify data", "head", kind, "rejected_rows", rejects, "labels", L, "train_docs", len(trainDocs), "val_docs", len(valDocs))
	// a regression head learns the standardized target (every target the
	// same scale for the optimizer); the saved head is mapped back to
	// target units (exportHead)
	var tgt affine
	if kind == engine.HeadRegression {
		if tgt, err = standardize(trainDocs, valDocs); err != nil {
			return nil, fmt.Errorf("data %v: field %q: %w", o.Data, o.LabelField, err)
		}
		log.Info("regression target", "mean", fmt.Sprintf("%.4g", tgt.shift), "std", fmt.Sprintf("%.4g", tgt.scale))
	}

	specs := ParamSpecs(c, L)
	if pooling == engine.PoolAttention {
		specs = append(specs, TensorSpec{engine.HeadClsQ, []int{c.DModel}}) // zero: the mean
	}
	p := NewParams[float32](specs)
	for _, s := range ParamSpecs(c, 0) {
		copy(p.W(s.Name), src.W(s.Name))
	}
	D := c.DModel
	statePath := filepath.Join(o.Out, "train_state", "state.json")
	_, statErr := os.Stat(statePath)
	if statErr == nil && !o.Resume {
		return nil, fmt.Errorf("%s holds a run (train_state/); pass --resume to continue it or choose another --out", o.Out)
	}
	if o.Resume && statErr != nil {
		log.Info("no train_state/ in the output directory: starting a new run", "dir", o.Out)
	}
	mbTokens := max(1, o.MaxTokens)
	workers := resolveWorkers(o.Workers, 0, log)
	dp := newDataParallel(c, p, workers, 0, log)
	defer dp.close()
	gen.Labels = labels
	gen.Head, gen.Thresholds, gen.Pooling = "", nil, ""
	gen.SpanThreshold = 0 // the span head is not carried over
	if kind != engine.HeadMulticlass {
		gen.Head = kind
	}
	if pooling != engine.PoolMean {
		gen.Pooling = pooling
	}
	var poolQ []float32 // the master copy of attention pooling's query
	if pooling == engine.PoolAttention {
		poolQ = p.W(engine.HeadClsQ)
	}

	// feats computes every document's pooled final-norm output, packs of
	// documents (up to 8192 tokens) spread over the workers.
	feats := func(docs []labeledDoc) ([]float32, error) {
		f := make([]float32, len(docs)*D)
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
				for k, d := range docs[i:j] {
					poolRows(pooling, hf[off*D:(off+len(d.ids))*D], D, poolQ, f[(i+k)*D:(i+k+1)*D])
					off += len(d.ids)
				}
			}
		})
		if ctx.Err() != nil {
			return nil, ErrInterruptedEarly
		}
		return f, nil
	}

	var opt *AdamW
	st := &TrainState{Seed: o.Seed, Options: o.fingerprint(), Data: dg.String()}
	fresh := st
	var rep *ClassifyReport
	if o.Resume && statErr == nil {
		// the head fit is in the saved master weights
		opt = NewAdamW(p, o.WeightDecay)
		var err error
		if st, err = loadTrainState(o.Out, p, opt); err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if err := checkResume(statePath, st, fresh); err != nil {
			return nil, err
		}
		log.Info("resumed", "step", st.Step)
	} else {
		// 1. linear probe: the head on frozen features
		trF, err := feats(trainDocs)
		if err != nil {
			return nil, err
		}
		vaF, err := feats(valDocs)
		if err != nil {
			return nil, err
		}
		trainHead(kind, p, trF, trainDocs, L, o.HeadEpochs, o.HeadLR, o.WeightDecay, workers)
		rep = evalHead(kind, p, vaF, valDocs, L, tgt)
		logReport(log, "head (frozen body)", rep)
		opt = NewAdamW(p, o.WeightDecay)
	}
	save := func() error {
		if rep != nil && kind == engine.HeadMultilabel {
			gen.Thresholds = rep.Thresholds
		}
		if gen.Head == engine.HeadMultilabel && len(gen.Thresholds) != L {
			// resumed before any evaluation: the thresholds of the head
			// fit are recomputed at the end; meanwhile every label at 0.5
			gen.Thresholds = slices.Repeat([]float32{0.5}, L)
		}
		if err := SaveCheckpoint(o.Out, c, exportHead(kind, p, tgt), gen, o.TokenizerPath); err != nil {
			return err
		}
		return saveTrainState(o.Out, p, opt, st)
	}

	// 2. optional fine-tuning of body and head
	if o.Finetune {
		total := 0
		for _, d := range trainDocs {
			total += len(d.ids)
		}
		epochs := o.Epochs
		if epochs <= 0 {
			epochs = AutoEpochs(int64(total))
			log.Info("epochs (auto)", "epochs", fmt.Sprintf("%.2f", epochs), "train_tokens", total,
				"why", fmt.Sprintf("≈%d training tokens in all, %d–%d epochs; --epochs overrides", AutoFinetuneTokens, 1, AutoMaxEpochs))
		}
		steps := max(1, int64(epochs*float64(total)/float64(o.BatchTokens)))
		sched := Schedule{LR: o.LR, MinLR: o.LR / 10, Warmup: steps / 10, Total: steps}
		// the document order: permutations drawn in turn from one stream;
		// the cursor counts those drawn after the first (Epoch) and the
		// position in the current one (Pos)
		docOrder := newShuffled(o.Seed, 0x636c73, len(trainDocs), st.Cursor.Epoch)
		pos := st.Cursor.Pos
		if st.Step == 0 {
			if err := save(); err != nil { // the head fit is not redone on resume
				return nil, err
			}
		}
		var mbLoss []float64
		var runSteps int64
		loggedEpoch := st.Cursor.Epoch // epochs finished, as of the last held-out report
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
			if st.Cursor.Epoch > loggedEpoch && len(valDocs) > 0 {
				// the last step finished a pass over the training documents:
				// the held-out score after every epoch shows whether more
				// epochs help or overfit (read-only; it changes nothing)
				loggedEpoch = st.Cursor.Epoch
				vaF, err := feats(valDocs)
				if err != nil {
					if ctx.Err() != nil {
						continue // saved and reported at the top of the loop
					}
					return nil, err
				}
				logReport(log, fmt.Sprintf("held-out after epoch %d (step %d/%d)", loggedEpoch, st.Step, steps), evalHead(kind, p, vaF, valDocs, L, tgt))
			}
			batch, n := drawBatch(docOrder, trainDocs, func(d labeledDoc) int { return len(d.ids) }, o.BatchTokens, &pos, &st.Cursor.Epoch)
			st.Cursor.Pos = pos
			// micro-batches: consecutive documents up to --max-tokens
			// tokens each, fixed by the batch alone
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
				l, dhf := headLoss(kind, pooling, w.p, hf, docs, L, len(batch))
				w.m.Backward(dhf)
				w.touch(ids)
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
				log.Info("classify finetune", "step", fmt.Sprintf("%d/%d", st.Step, steps), "tokens", st.Tokens, "tok/s", fmt.Sprintf("%.0f", tps), "eta", pc.eta(st.Step).String(),
					"lr", fmt.Sprintf("%.3g", lr), "loss", fmt.Sprintf("%.4f", loss), "grad_norm", fmt.Sprintf("%.3g", gn))
			}
			if bar != nil {
				bar(st.Step, pc.barText(loss, lr))
			}
			if o.onStep != nil {
				o.onStep()
			}
			if o.StopAfterSteps > 0 && runSteps >= o.StopAfterSteps {
				return nil, nil
			}
			if o.CkptEvery > 0 && st.Step%o.CkptEvery == 0 && st.Step < steps {
				if err := save(); err != nil {
					return nil, err
				}
				log.Info("checkpoint", "dir", o.Out, "step", st.Step)
			}
		}
		vaF, err := feats(valDocs)
		if err != nil {
			return nil, err
		}
		rep = evalHead(kind, p, vaF, valDocs, L, tgt)
		logReport(log, "head (fine-tuned body)", rep)
	} else if rep == nil {
		vaF, err := feats(valDocs)
		if err != nil {
			return nil, err
		}
		rep = evalHead(kind, p, vaF, valDocs, L, tgt)
	}
	if kind != engine.HeadRegression {
		for i, l := range labels {
			args := []any{"label", l, "f1", fmt.Sprintf("%.4f", rep.PerLabelF1[i])}
			if kind == engine.HeadMultilabel {
				args = append(args, "threshold", fmt.Sprintf("%.3f", rep.Thresholds[i]))
			}
			log.Info("label", args...)
		}
	}
	if err := save(); err != nil {
		return nil, err
	}
	return rep, nil
}

// poolRows writes the pooled feature of one document's final-norm rows h
// (each D wide) into dst: their mean, the last row, or the attention
// pooling with query q (engine.AttentionPool's arithmetic, its weights from engine.AttentionWeights).
func poolRows[T Float](pooling string, h []T, D int, q []T, dst []T) {
	switch pooling {
	case engine.PoolLast:
		copy(dst, h[len(h)-D:])
	case engine.PoolAttention:
		a := engine.AttentionWeights(h, q)
		acc := make([]float64, D)
		for t, at := range a {
			for i, v := range h[t*D : (t+1)*D] {
				acc[i] += at * float64(v)
			}
		}
		for i, v := range acc {
			dst[i] = T(v)
		}
	default:
		meanRows(h, D, dst)
	}
}

// poolBackward writes dL/dh for one document's rows h given dL/dfeature
// (dfeat) into dh, and for attention pooling adds dL/dq into gq. With
// f = Σ a_t h_t, a = softmax(s), s_t = h_t·q:
// dL/dh_t = a_t·g + a_t·(g·h_t − g·f)·q and dL/dq = Σ a_t·(g·h_t − g·f)·h_t.
func poolBackward[T Float](pooling string, h []T, D int, q []T, dfeat []float64, dh []T, gq []T) {
	n := len(h) / D
	switch pooling {
	case engine.PoolLast:
		clear(dh)
		for i, g := range dfeat {
			dh[(n-1)*D+i] = T(g)
		}
	case engine.PoolAttention:
		a := engine.AttentionWeights(h, q)
		var gf float64 // g·f
		for t, at := range a {
			for i, v := range h[t*D : (t+1)*D] {
				gf += at * float64(v) * dfeat[i]
			}
		}
		for t, at := range a {
			row := h[t*D : (t+1)*D]
			var gh float64
			for i, v := range row {
				gh += float64(v) * dfeat[i]
			}
			c := at * (gh - gf) // dL/ds_t
			for i := range row {
				dh[t*D+i] = T(at*dfeat[i] + c*float64(q[i]))
				gq[i] += T(c * float64(row[i]))
			}
		}
	default:
		for t := range n {
			for i, g := range dfeat {
				dh[t*D+i] = T(g / float64(n))
			}
		}
	}
}

// meanRows writes the mean of the rows of h (each D wide) into dst.
func meanRows[T Float](h []T, D int, dst []T) {
	n := len(h) / D
	clear(dst)
	for t := 0; t < n; t++ {
		for i, v := range h[t*D : (t+1)*D] {
			dst[i] += v
		}
	}
	for i := range dst {
		dst[i] /= T(n)
	}
}

// headLogits computes feat·W + b.
func headLogits[T Float](w, b, feat []T, L int, out []float64) {
	for j := 0; j < L; j++ {
		out[j] = float64(b[j])
	}
	for i, f := range feat {
		for j := 0; j < L; j++ {
			out[j] += float64(f) * float64(w[i*L+j])
		}
	}
}

// softmaxCE turns logits into dL/dlogits (in place) and returns −log p[y].
func softmaxCE(logits []float64, y int) float64 {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, v)
	}
	var s float64
	for _, v := range logits {
		s += math.Exp(v - mx)
	}
	lse := mx + math.Log(s)
	loss := lse - logits[y]
	for j, v := range logits {
		logits[j] = math.Exp(v - lse)
	}
	logits[y]--
	return loss
}

// headFitChunks is how many fixed slices of the training documents the
// head fit's gradient is summed over: each slice's partial sum is computed
// by whichever worker takes it, and the partials are added in slice order,
// so the result is the same for any number of workers.
const headFitChunks = 16

// trainHead fits head.cls (from zero) on frozen features: epochs
// full-batch AdamW steps with a cosine learning rate. Each step's
// gradient is summed over headFitChunks fixed slices of the documents,
// spread over workers goroutines (a head fit over ~10^5 documents is
// 10^11–10^12 multiply-adds: the SIMD row updates and the cores matter).
func trainHead(kind string, p *Params[float32], feats []float32, docs []labeledDoc, L, epochs int, lr, wd float64, workers int) {
	D := len(feats) / len(docs)
	w, b := p.W("head.cls.w"), p.W("head.cls.b")
	clear(w)
	clear(b)
	sub := NewParams[float32]([]TensorSpec{{"head.cls.w", []int{D, L}}, {"head.cls.b", []int{L}}})
	opt := NewAdamW(sub, wd)
	type partial struct{ gw, gb []float32 }
	parts := make([]partial, headFitChunks)
	for c := range parts {
		parts[c] = partial{make([]float32, D*L), make([]float32, L)}
	}
	inv := 1 / float64(len(docs))
	chunk := func(c int) {
		gw, gb := parts[c].gw, parts[c].gb
		clear(gw)
		clear(gb)
		logits32 := make([]float32, L)
		logits := make([]float64, L)
		g32 := make([]float32, L)
		for k := c * len(docs) / headFitChunks; k < (c+1)*len(docs)/headFitChunks; k++ {
			f := feats[k*D : (k+1)*D]
			copy(logits32, b)
			for i, fv := range f {
				amx.Axpy(fv, w[i*L:(i+1)*L], logits32)
			}
			for j, v := range logits32 {
				logits[j] = float64(v)
			}
			headGrad(kind, logits, docs[k])
			for j, g := range logits {
				g32[j] = float32(g * inv)
			}
			amx.Add(gb, g32)
			for i, fv := range f {
				amx.Axpy(fv, g32, gw[i*L:(i+1)*L])
			}
		}
	}
	workers = max(1, min(workers, headFitChunks))
	for e := 0; e < epochs; e++ {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := int(next.Add(1) - 1); c < headFitChunks; c = int(next.Add(1) - 1) {
					chunk(c)
				}
			}()
		}
		wg.Wait()
		sub.ZeroGrad()
		copy(sub.W("head.cls.w"), w)
		copy(sub.W("head.cls.b"), b)
		gw, gb := sub.G("head.cls.w"), sub.G("head.cls.b")
		for _, pt := range parts { // in slice order: the same sum for any workers
			amx.Add(gw, pt.gw)
			amx.Add(gb, pt.gb)
		}
		opt.Update(sub, lr*0.5*(1+math.Cos(math.Pi*float64(e)/float64(epochs))), 1)
		copy(w, sub.W("head.cls.w"))
		copy(b, sub.W("head.cls.b"))
	}
}

// headLoss is the mean head cross-entropy of a packed batch and its
// gradient with respect to every position's final-norm output; head
// gradients (and attention pooling's query's) go to p.Grad. With norm > 0
// the mean is over norm documents (the batch is one micro-batch of a
// larger one).
func headLoss[T Float](kind, pooling string, p *Params[T], hf []T, batch []labeledDoc, L, norm int) (float64, []T) {
	D := len(hf) / lenIDs(batch)
	w, b := p.W("head.cls.w"), p.W("head.cls.b")
	gw, gb := p.G("head.cls.w"), p.G("head.cls.b")
	var q, gq []T
	if pooling == engine.PoolAttention {
		q, gq = p.W(engine.HeadClsQ), p.G(engine.HeadClsQ)
	}
	dhf := make([]T, len(hf))
	feat := make([]T, D)
	logits := make([]float64, L)
	var loss float64
	inv := 1 / float64(len(batch))
	if norm > 0 {
		inv = 1 / float64(norm)
	}
	off := 0
	for _, d := range batch {
		n := len(d.ids)
		poolRows(pooling, hf[off*D:(off+n)*D], D, q, feat)
		headLogits(w, b, feat, L, logits)
		loss += headGrad(kind, logits, d) * inv
		dfeat := make([]float64, D)
		for j, g := range logits {
			g *= inv
			gb[j] += T(g)
			for i, f := range feat {
				gw[i*L+j] += T(float64(f) * g)
				dfeat[i] += float64(w[i*L+j]) * g
			}
		}
		poolBackward(pooling, hf[off*D:(off+n)*D], D, q, dfeat, dhf[off*D:(off+n)*D], gq)
		off += n
	}
	return loss, dhf
}

func lenIDs(docs []labeledDoc) int {
	n := 0
	for _, d := range docs {
		n += len(d.ids)
	}
	return n
}

// evalHead evaluates head.cls on features: accuracy and macro-F1
// (multiclass); thresholds tuned per label, then set accuracy, micro- and
// macro-F1 (multilabel); MAE, RMSE and Pearson's r in target units
// (regression, tgt maps the standardized output back).
func evalHead(kind string, p *Params[float32], feats []float32, docs []labeledDoc, L int, tgt affine) *ClassifyReport {
	switch kind {
	case engine.HeadMultilabel:
		return evalMultilabel(p, feats, docs, L)
	case engine.HeadRegression:
		return evalRegression(p, feats, docs, tgt)
	}
	D := len(feats) / len(docs)
	w, b := p.W("head.cls.w"), p.W("head.cls.b")
	tp, fp, fn := make([]int, L), make([]int, L), make([]int, L)
	logits := make([]float64, L)
	correct := 0
	for k, d := range docs {
		headLogits(w, b, feats[k*D:(k+1)*D], L, logits)
		pred := 0
		for j, v := range logits {
			if v > logits[pred] {
				pred = j
			}
		}
		if pred == d.label {
			correct++
			tp[pred]++
		} else {
			fp[pred]++
			fn[d.label]++
		}
	}
	r := &ClassifyReport{Head: kind, Accuracy: float64(correct) / float64(len(docs)), N: len(docs), PerLabelF1: make([]float64, L)}
	for j := 0; j < L; j++ {
		if 2*tp[j]+fp[j]+fn[j] > 0 {
			r.PerLabelF1[j] = 2 * float64(tp[j]) / float64(2*tp[j]+fp[j]+fn[j])
		}
		r.MacroF1 += r.PerLabelF1[j] / float64(L)
	}
	return r
}
