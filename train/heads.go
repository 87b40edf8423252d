package train

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/onecore-dev/onecore/engine"
)

// Head kinds beyond the softmax classifier (see ClassifyOptions.Head):
//
//   - multilabel: logit z_j per label, p_j = sigmoid(z_j), loss Σ_j
//     binary cross-entropy (softplus(z) − y·z), a document may have any
//     number of labels, none included. Each label's decision threshold is
//     the one maximising that label's F1 on the held-out split (ties: the
//     one nearest 0.5), stored in generation.json.
//   - regression: one output z, loss ½(z − y)² on the standardized target
//     y = (value − mean)/std of the training split; the saved head is
//     mapped back (w·std, b·std + mean) so the engine's output is the
//     value itself.

// parseLabelSet reads a multilabel field: a JSON array of strings (the
// reader hands non-string JSON values over as their JSON text), or one
// label as a plain string; "" and [] are the empty set.
func parseLabelSet(v string) ([]string, error) {
	t := strings.TrimSpace(v)
	if t == "" {
		return nil, nil
	}
	if !strings.HasPrefix(t, "[") {
		return []string{v}, nil
	}
	var tags []string
	if err := json.Unmarshal([]byte(t), &tags); err != nil {
		return nil, fmt.Errorf("%q is not a JSON array of label strings: %v", v, err)
	}
	seen := map[string]bool{}
	out := tags[:0]
	for _, l := range tags {
		if l == "" {
			return nil, fmt.Errorf("%q: empty label", v)
		}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out, nil
}

// affine maps a standardized value back: value = z·scale + shift.
type affine struct{ scale, shift float64 }

func (a affine) apply(z float64) float64 { return z*a.scale + a.shift }

// standardize replaces every document's regression target by its
// standardized value under the training split's mean and standard
// deviation, which it returns.
func standardize(train, val []labeledDoc) (affine, error) {
	var s, s2 float64
	for _, d := range train {
		v := float64(d.y[0])
		s += v
		s2 += v * v
	}
	n := float64(len(train))
	mean := s / n
	std := math.Sqrt(math.Max(0, s2/n-mean*mean))
	if !(std > 1e-12*math.Max(1, math.Abs(mean))) {
		return affine{}, fmt.Errorf("every training target is %g: nothing to learn", mean)
	}
	for _, docs := range [][]labeledDoc{train, val} {
		for _, d := range docs {
			d.y[0] = float32((float64(d.y[0]) - mean) / std)
		}
	}
	return affine{scale: std, shift: mean}, nil
}

// exportHead is the parameters as saved for the engine: p itself, or for
// a regression head a copy whose head outputs target units.
func exportHead(kind string, p *Params[float32], tgt affine) *Params[float32] {
	if kind != engine.HeadRegression {
		return p
	}
	q := &Params[float32]{Specs: p.Specs, Off: p.Off, Data: slices.Clone(p.Data)}
	for i, w := range q.W("head.cls.w") {
		q.W("head.cls.w")[i] = float32(float64(w) * tgt.scale)
	}
	b := q.W("head.cls.b")
	b[0] = float32(tgt.apply(float64(b[0])))
	return q
}

// headGrad turns a document's head logits into dLoss/dlogits (in place)
// and returns its loss, for the head kind.
func headGrad(kind string, logits []float64, d labeledDoc) float64 {
	switch kind {
	case engine.HeadMultilabel:
		var loss float64
		for j, z := range logits {
			y := float64(d.y[j])
			loss += softplus(z) - y*z
			logits[j] = sigmoid(z) - y
		}
		return loss
	case engine.HeadRegression:
		e := logits[0] - float64(d.y[0])
		logits[0] = e
		return e * e / 2
	}
	return softmaxCE(logits, d.label)
}

// evalMultilabel tunes each label's threshold on docs, then reports set
// accuracy (every label right), micro-F1 and macro-F1 at those thresholds.
func evalMultilabel(p *Params[float32], feats []float32, docs []labeledDoc, L int) *ClassifyReport {
	D := len(feats) / len(docs)
	w, b := p.W("head.cls.w"), p.W("head.cls.b")
	probs := make([][]float64, len(docs))
	logits := make([]float64, L)
	for k := range docs {
		headLogits(w, b, feats[k*D:(k+1)*D], L, logits)
		probs[k] = make([]float64, L)
		for j, z := range logits {
			probs[k][j] = sigmoid(z)
		}
	}
	r := &ClassifyReport{Head: engine.HeadMultilabel, N: len(docs), PerLabelF1: make([]float64, L), Thresholds: make([]float32, L)}
	var tpAll, fpAll, fnAll int
	correct := make([]bool, len(docs))
	for k := range correct {
		correct[k] = true
	}
	for j := 0; j < L; j++ {
		col := make([]float64, len(docs))
		pos := 0
		for k, d := range docs {
			col[k] = probs[k][j]
			if d.y[j] == 1 {
				pos++
			}
		}
		th := bestThreshold(col, docs, j, pos)
		r.Thresholds[j] = th
		var tp, fp, fn int
		for k, d := range docs {
			pred := float32(col[k]) >= th
			gold := d.y[j] == 1
			switch {
			case pred && gold:
				tp++
			case pred:
				fp++
			case gold:
				fn++
			}
			if pred != gold {
				correct[k] = false
			}
		}
		if 2*tp+fp+fn > 0 {
			r.PerLabelF1[j] = 2 * float64(tp) / float64(2*tp+fp+fn)
		} else {
			r.PerLabelF1[j] = 1 // never present, never predicted
		}
		r.MacroF1 += r.PerLabelF1[j] / float64(L)
		tpAll, fpAll, fnAll = tpAll+tp, fpAll+fp, fnAll+fn
	}
	if 2*tpAll+fpAll+fnAll > 0 {
		r.MicroF1 = 2 * float64(tpAll) / float64(2*tpAll+fpAll+fnAll)
	}
	n := 0
	for _, c := range correct {
		if c {
			n++
		}
	}
	r.Accuracy = float64(n) / float64(len(docs))
	return r
}

// bestThreshold is the threshold on column j's probabilities with the best
// F1 on docs (ties: nearest 0.5), kept inside [0.01, 0.99] so a label seen
// rarely in the held-out split cannot end up always or never predicted.
func bestThreshold(col []float64, docs []labeledDoc, j, pos int) float32 {
	order := make([]int, len(col))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return col[order[a]] > col[order[b]] })
	best, bestF1 := 0.5, -1.0
	tp, fp := 0, 0
	// predicting the k most probable documents: threshold between the
	// k-th and the (k+1)-th probability
	for k := 0; k <= len(order); k++ {
		if k > 0 {
			if docs[order[k-1]].y[j] == 1 {
				tp++
			} else {
				fp++
			}
			if k < len(order) && col[order[k]] == col[order[k-1]] {
				continue // a threshold cannot split equal probabilities
			}
		}
		var th float64
		switch {
		case k == 0:
			th = col[order[0]] + (1-col[order[0]])/2
		case k == len(order):
			th = col[order[k-1]] / 2
		default:
			th = (col[order[k-1]] + col[order[k]]) / 2
		}
		th = math.Min(0.99, math.Max(0.01, th))
		f1 := 1.0
		if 2*tp+fp+(pos-tp) > 0 {
			f1 = 2 * float64(tp) / float64(2*tp+fp+(pos-tp))
		}
		if f1 > bestF1+1e-12 || (math.Abs(f1-bestF1) <= 1e-12 && math.Abs(th-0.5) < math.Abs(best-0.5)) {
			best, bestF1 = th, f1
		}
	}
	return float32(best)
}

// evalRegression reports MAE, RMSE and Pearson's r of the head's output
// against the targets, both mapped back to target units.
func evalRegression(p *Params[float32], feats []float32, docs []labeledDoc, tgt affine) *ClassifyReport {
	D := len(feats) / len(docs)
	w, b := p.W("head.cls.w"), p.W("head.cls.b")
	out := make([]float64, 1)
	var ae, se, sx, sy, sxx, syy, sxy float64
	for k, d := range docs {
		headLogits(w, b, feats[k*D:(k+1)*D], 1, out)
		x, y := tgt.apply(out[0]), tgt.apply(float64(d.y[0]))
		ae += math.Abs(x - y)
		se += (x - y) * (x - y)
		sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
	}
	n := float64(len(docs))
	r := &ClassifyReport{Head: engine.HeadRegression, N: len(docs), MAE: ae / n, RMSE: math.Sqrt(se / n)}
	if den := math.Sqrt((n*sxx - sx*sx) * (n*syy - sy*sy)); den > 0 {
		r.Pearson = (n*sxy - sx*sy) / den
	}
	return r
}

// logReport logs a held-out evaluation in the head kind's terms.
func logReport(log *slog.Logger, msg string, r *ClassifyReport) {
	switch r.Head {
	case engine.HeadRegression:
		log.Info(msg, "mae", fmt.Sprintf("%.4f", r.MAE), "rmse", fmt.Sprintf("%.4f", r.RMSE), "pearson", fmt.Sprintf("%.4f", r.Pearson), "val_docs", r.N)
	case engine.HeadMultilabel:
		log.Info(msg, "set_accuracy", fmt.Sprintf("%.4f", r.Accuracy), "micro_f1", fmt.Sprintf("%.4f", r.MicroF1), "macro_f1", fmt.Sprintf("%.4f", r.MacroF1), "val_docs", r.N)
	default:
		log.Info(msg, "accuracy", fmt.Sprintf("%.4f", r.Accuracy), "macro_f1", fmt.Sprintf("%.4f", r.MacroF1), "val_docs", r.N)
	}
}

// String is the report as train classify prints it.
func (r *ClassifyReport) String() string {
	switch r.Head {
	case engine.HeadRegression:
		return fmt.Sprintf("held-out: MAE %.4f  RMSE %.4f  Pearson r %.4f  (%d documents)", r.MAE, r.RMSE, r.Pearson, r.N)
	case engine.HeadMultilabel:
		return fmt.Sprintf("held-out: set accuracy %.4f  micro-F1 %.4f  macro-F1 %.4f  (%d documents; thresholds tuned on them)", r.Accuracy, r.MicroF1, r.MacroF1, r.N)
	}
	return fmt.Sprintf("held-out: accuracy %.4f  macro-F1 %.4f  (%d documents)", r.Accuracy, r.MacroF1, r.N)
}
