package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Span-extraction head, core arithmetic (issue 14 item 1). The head reads
// the final RMSNorm'ed hidden state of a causal model fed
// `<bos> Question: {question}\n` followed by the document tokens, so every
// document token has already seen the question. Per document token it
// emits a start and an end logit (head.span.w [D,2], head.span.b [2]); the
// "not present" answer is the null span placed at the last prompt token,
// as SQuAD 2.0 heads place it at [CLS]. The loss is cross-entropy over
// {null} ∪ document positions, once for the start and once for the end.
// This file holds the parts that do not depend on the network: the loss
// and its gradient with respect to the logits, the target mapping from
// character offsets to tokens, and the decoder; the training loop and the
// engine path are still to be wired (docs/notes/issue-14.md).

// SpanNull is the index that SpanTargets and SpanDecode use for the null
// ("not present") span.
const SpanNull = -1

// SpanLoss returns the cross-entropy of the start target ts and end target
// te (SpanNull or a document position) over the logits [null, doc...]: the
// null logit first, then one per document token. It writes the gradient
// of the loss with respect to each logit into gs and ge (same lengths as
// start and end), so the caller can backpropagate into head and body.
func SpanLoss(start, end []float64, ts, te int, gs, ge []float64) float64 {
	return ceGrad(start, ts+1, gs) + ceGrad(end, te+1, ge)
}

// ceGrad is softmax cross-entropy of class y with its gradient
// softmax − onehot in g (the classifier's softmaxCE on a copy of z).
func ceGrad(z []float64, y int, g []float64) float64 {
	copy(g, z)
	return softmaxCE(g, y)
}

// SpanTargets maps an answer given as byte offsets [as, ae) in the document
// to token targets: the token containing the answer's first byte and the
// token containing its last byte. offs[i] = [first byte, end byte) of
// token i in the document. An answer that is empty, or that starts or
// ends beyond the kept (possibly truncated) tokens, becomes SpanNull with
// ok = false, so the caller can count truncation losses.
func SpanTargets(offs [][2]int, as, ae int) (ts, te int, ok bool) {
	if ae <= as {
		return SpanNull, SpanNull, false
	}
	ts, te = -1, -1
	for i, o := range offs {
		if ts < 0 && as >= o[0] && as < o[1] {
			ts = i
		}
		if ae-1 >= o[0] && ae-1 < o[1] {
			te = i
			break
		}
	}
	if ts < 0 || te < 0 {
		return SpanNull, SpanNull, false
	}
	return ts, te, true
}

// SpanResult is one decoded span: token positions S..E inclusive (SpanNull
// when abstaining) and the span's log-probability, log softmax over start
// positions plus log softmax over end positions.
type SpanResult struct {
	S, E     int
	LogProb  float64
	Abstain  bool
	BestSpan float64 // start+end score of the best non-null span, kept for threshold tuning
}

// SpanDecode picks the best span s ≤ e < s+maxSpan by start[s]+end[e]
// over logits laid out as in SpanLoss (index 0 is null), and abstains when
// the null score start[null]+end[null] plus threshold is at least as
// high, or when the document has no tokens. Ties go to the earliest span
// so the result does not depend on anything but the logits.
func SpanDecode(start, end []float64, maxSpan int, threshold float64) SpanResult {
	n := len(start) - 1
	null := start[0] + end[0]
	bs, be, best := SpanNull, SpanNull, math.Inf(-1)
	for s := 0; s < n; s++ {
		for e := s; e < n && e-s < maxSpan; e++ {
			if v := start[s+1] + end[e+1]; v > best {
				bs, be, best = s, e, v
			}
		}
	}
	r := SpanResult{S: bs, E: be, BestSpan: best}
	if bs == SpanNull || null+threshold >= best {
		r.S, r.E, r.Abstain = SpanNull, SpanNull, true
	}
	r.LogProb = logSoftmaxAt(start, r.S+1) + logSoftmaxAt(end, r.E+1)
	return r
}

// logSoftmaxAt is log softmax(z)[i], stable for large logits.
func logSoftmaxAt(z []float64, i int) float64 {
	m := math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, v)
	}
	var s float64
	for _, v := range z {
		s += math.Exp(v - m)
	}
	return z[i] - m - math.Log(s)
}

// TokenByteOffsets returns [first byte, end byte) of each token in a
// document whose tokens decode to the given byte lengths, in order: with
// the bundled byte-level BPE (no normalizer) the concatenated token bytes
// are exactly the document's bytes, so offsets are running sums.
func TokenByteOffsets(lens []int) [][2]int {
	offs := make([][2]int, len(lens))
	p := 0
	for i, l := range lens {
		offs[i] = [2]int{p, p + l}
		p += l
	}
	return offs
}

// ParseSpanAnswer turns a training record's answer into byte offsets
// [as, ae) in text. The answer may be a string (its first occurrence in
// text), character offsets {"start":s,"end":e} or [s,e] (characters are
// Unicode code points, end exclusive), or null/absent (present = false).
// A string that does not occur in text, or offsets out of range, is an
// error rather than a silent "not present", since it means mislabelled data.
func ParseSpanAnswer(text string, raw json.RawMessage) (as, ae int, present bool, err error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return 0, 0, false, nil
	}
	var s, e int
	switch t[0] {
	case '"':
		var a string
		if err := json.Unmarshal(t, &a); err != nil {
			return 0, 0, false, err
		}
		i := strings.Index(text, a)
		if a == "" || i < 0 {
			return 0, 0, false, fmt.Errorf("answer %q not found in text", a)
		}
		return i, i + len(a), true, nil
	case '{':
		var o struct{ Start, End *int }
		if err := json.Unmarshal(t, &o); err != nil || o.Start == nil || o.End == nil {
			return 0, 0, false, fmt.Errorf("answer %s: want {\"start\":s,\"end\":e}", t)
		}
		s, e = *o.Start, *o.End
	case '[':
		var a []int
		if err := json.Unmarshal(t, &a); err != nil || len(a) != 2 {
			return 0, 0, false, fmt.Errorf("answer %s: want [start,end]", t)
		}
		s, e = a[0], a[1]
	default:
		return 0, 0, false, fmt.Errorf("answer %s: want a string, offsets or null", t)
	}
	// character → byte offsets: walk runes once.
	as, ae = -1, -1
	c := 0
	for b := range text {
		if c == s {
			as = b
		}
		if c == e {
			ae = b
		}
		c++
	}
	if c == s {
		as = len(text)
	}
	if c == e {
		ae = len(text)
	}
	if s < 0 || e <= s || as < 0 || ae < 0 {
		return 0, 0, false, fmt.Errorf("answer offsets [%d,%d) out of range for a %d-character text", s, e, c)
	}
	return as, ae, true, nil
}
