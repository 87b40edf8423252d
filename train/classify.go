package train

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
)

// ClassifyOptions configures classifier-head training.
type ClassifyOptions struct {
	From, Out             string
	Data                  []string
	TextField, LabelField string
	Tokenizer             Tokenizer
	TokenizerPath         string

	MaxTokens   int // documents are <bos> + their first MaxTokens−1 tokens (as the pipeline feeds them)
	ValPermille int
	HeadEpochs  int     // full-batch steps of the head on frozen features
	HeadLR      float64 // AdamW learning rate of the head
	Finetune    bool    // then train body and head together
	Epochs      float64 // fine-tuning epochs
	LR          float64 // fine-tuning learning rate
	BatchTokens int     // fine-tuning tokens per step
	WeightDecay float64
	Seed        uint64

	Log *slog.Logger
}

// ClassifyReport is the held-out evaluation of a trained head.
type ClassifyReport struct {
	Accuracy, MacroF1 float64
	PerLabelF1        []float64
	N                 int
}

type labeledDoc struct {
	ids   []int32
	label int
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
	type rec struct {
		text, label string
	}
	var recs []rec
	labelSet := map[string]bool{}
	rejects, err := readRecords(o.Data, []string{o.TextField, o.LabelField}, func(vals []string) error {
		t, l := vals[0], vals[1]
		recs = append(recs, rec{t, l})
		labelSet[l] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(labelSet) < 2 {
		return nil, fmt.Errorf("data %v: need at least 2 distinct values of %q, found %d", o.Data, o.LabelField, len(labelSet))
	}
	labels := make([]string, 0, len(labelSet))
	for l := range labelSet {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	index := map[string]int{}
	for i, l := range labels {
		index[l] = i
	}
	L := len(labels)
	var trainDocs, valDocs []labeledDoc
	for _, r := range recs {
		ids := o.Tokenizer.Encode(r.text)
		if len(ids) > o.MaxTokens-1 {
			ids = ids[:o.MaxTokens-1]
		}
		for _, id := range ids {
			if id < 0 || int(id) >= c.VocabSize {
				return nil, fmt.Errorf("token id %d out of the model's vocabulary (%d)", id, c.VocabSize)
			}
		}
		d := labeledDoc{append([]int32{bosID}, ids...), index[r.label]}
		if heldOut(r.text, o.ValPermille) {
			valDocs = append(valDocs, d)
		} else {
			trainDocs = append(trainDocs, d)
		}
	}
	if len(trainDocs) == 0 || len(valDocs) == 0 {
		return nil, fmt.Errorf("data: %d training and %d held-out documents; need both (adjust --val-permille)", len(trainDocs), len(valDocs))
	}
	log.Info("classify data", "rejected_rows", rejects, "labels", L, "train_docs", len(trainDocs), "val_docs", len(valDocs))

	p := NewParams[float32](ParamSpecs(c, L))
	for _, s := range ParamSpecs(c, 0) {
		copy(p.W(s.Name), src.W(s.Name))
	}
	m := NewModel(c, p)
	D := c.DModel

	// 1. linear probe: the head on frozen features
	feats := func(docs []labeledDoc) []float32 {
		f := make([]float32, len(docs)*D)
		for i := 0; i < len(docs); {
			j, n := i, 0
			for j < len(docs) && (j == i || n+len(docs[j].ids) <= 8192) {
				n += len(docs[j].ids)
				j++
			}
			ids := make([]int32, 0, n)
			for _, d := range docs[i:j] {
				ids = append(ids, d.ids...)
			}
			hf := m.Forward(ids, 0)
			off := 0
			for k, d := range docs[i:j] {
				meanRows(hf[off*D:(off+len(d.ids))*D], D, f[(i+k)*D:(i+k+1)*D])
				off += len(d.ids)
			}
			i = j
		}
		return f
	}
	trF, vaF := feats(trainDocs), feats(valDocs)
	trainHead(p, trF, trainDocs, L, o.HeadEpochs, o.HeadLR, o.WeightDecay)
	rep := evalHead(p, vaF, valDocs, L)
	log.Info("head (frozen body)", "accuracy", fmt.Sprintf("%.4f", rep.Accuracy), "macro_f1", fmt.Sprintf("%.4f", rep.MacroF1), "val_docs", rep.N)

	// 2. optional fine-tuning of body and head
	if o.Finetune && o.Epochs > 0 {
		opt := NewAdamW(p, o.WeightDecay)
		rng := rand.New(rand.NewPCG(o.Seed, 0x636c73))
		total := 0
		for _, d := range trainDocs {
			total += len(d.ids)
		}
		steps := max(1, int64(o.Epochs*float64(total)/float64(o.BatchTokens)))
		sched := Schedule{LR: o.LR, MinLR: o.LR / 10, Warmup: steps / 10, Total: steps}
		order := rng.Perm(len(trainDocs))
		pos := 0
		for step := int64(0); step < steps; step++ {
			if ctx.Err() != nil {
				return nil, ErrInterrupted
			}
			var batch []labeledDoc
			n := 0
			for n < o.BatchTokens {
				if pos == len(order) {
					order, pos = rng.Perm(len(trainDocs)), 0
				}
				d := trainDocs[order[pos]]
				pos++
				batch = append(batch, d)
				n += len(d.ids)
			}
			ids := make([]int32, 0, n)
			for _, d := range batch {
				ids = append(ids, d.ids...)
			}
			p.ZeroGrad()
			hf := m.Forward(ids, 0)
			loss, dhf := headLoss(p, hf, batch, L)
			m.Backward(dhf)
			gn := GradNorm(p)
			scale := 1.0
			if gn > 1 {
				scale = 1 / gn
			}
			opt.Update(p, sched.At(step), scale)
			if (step+1)%20 == 0 || step+1 == steps {
				log.Info("classify finetune", "step", step+1, "of", steps, "loss", fmt.Sprintf("%.4f", loss), "grad_norm", fmt.Sprintf("%.3g", gn))
			}
		}
		rep = evalHead(p, feats(valDocs), valDocs, L)
		log.Info("head (fine-tuned body)", "accuracy", fmt.Sprintf("%.4f", rep.Accuracy), "macro_f1", fmt.Sprintf("%.4f", rep.MacroF1), "val_docs", rep.N)
	}
	for i, l := range labels {
		log.Info("label", "label", l, "f1", fmt.Sprintf("%.4f", rep.PerLabelF1[i]))
	}
	gen.Labels = labels
	if err := SaveCheckpoint(o.Out, c, p, gen, o.TokenizerPath); err != nil {
		return nil, err
	}
	return rep, nil
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

// trainHead fits head.cls on fixed features with full-batch AdamW.
func trainHead(p *Params[float32], feats []float32, docs []labeledDoc, L, epochs int, lr, wd float64) {
	D := len(feats) / len(docs)
	w, b := p.W("head.cls.w"), p.W("head.cls.b")
	clear(w)
	clear(b)
	sub := NewParams[float32]([]TensorSpec{{"head.cls.w", []int{D, L}}, {"head.cls.b", []int{L}}})
	opt := NewAdamW(sub, wd)
	logits := make([]float64, L)
	for e := 0; e < epochs; e++ {
		sub.ZeroGrad()
		copy(sub.W("head.cls.w"), w)
		copy(sub.W("head.cls.b"), b)
		gw, gb := sub.G("head.cls.w"), sub.G("head.cls.b")
		inv := 1 / float64(len(docs))
		for k, d := range docs {
			f := feats[k*D : (k+1)*D]
			headLogits(w, b, f, L, logits)
			softmaxCE(logits, d.label)
			for j, g := range logits {
				gb[j] += float32(g * inv)
			}
			for i, fv := range f {
				for j, g := range logits {
					gw[i*L+j] += float32(float64(fv) * g * inv)
				}
			}
		}
		opt.Update(sub, lr*0.5*(1+math.Cos(math.Pi*float64(e)/float64(epochs))), 1)
		copy(w, sub.W("head.cls.w"))
		copy(b, sub.W("head.cls.b"))
	}
}

// headLoss is the mean head cross-entropy of a packed batch and its
// gradient with respect to every position's final-norm output; head
// gradients go to p.Grad.
func headLoss[T Float](p *Params[T], hf []T, batch []labeledDoc, L int) (float64, []T) {
	D := len(hf) / lenIDs(batch)
	w, b := p.W("head.cls.w"), p.W("head.cls.b")
	gw, gb := p.G("head.cls.w"), p.G("head.cls.b")
	dhf := make([]T, len(hf))
	feat := make([]T, D)
	logits := make([]float64, L)
	var loss float64
	inv := 1 / float64(len(batch))
	off := 0
	for _, d := range batch {
		n := len(d.ids)
		meanRows(hf[off*D:(off+n)*D], D, feat)
		headLogits(w, b, feat, L, logits)
		loss += softmaxCE(logits, d.label) * inv
		dfeat := make([]float64, D)
		for j, g := range logits {
			g *= inv
			gb[j] += T(g)
			for i, f := range feat {
				gw[i*L+j] += T(float64(f) * g)
				dfeat[i] += float64(w[i*L+j]) * g
			}
		}
		for t := off; t < off+n; t++ {
			for i, g := range dfeat {
				dhf[t*D+i] = T(g / float64(n))
			}
		}
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

// evalHead computes accuracy and macro-F1 of head.cls on features.
func evalHead(p *Params[float32], feats []float32, docs []labeledDoc, L int) *ClassifyReport {
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
	r := &ClassifyReport{Accuracy: float64(correct) / float64(len(docs)), N: len(docs), PerLabelF1: make([]float64, L)}
	for j := 0; j < L; j++ {
		if 2*tp[j]+fp[j]+fn[j] > 0 {
			r.PerLabelF1[j] = 2 * float64(tp[j]) / float64(2*tp[j]+fp[j]+fn[j])
		}
		r.MacroF1 += r.PerLabelF1[j] / float64(L)
	}
	return r
}
