package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/onecore-dev/onecore/engine"
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
// character offsets to tokens and the answer parser; the decoder
// (engine.SpanDecode) is shared with inference, and the training loop is
// extract.go.

// SpanNull is the index that SpanTargets and engine.SpanDecode use for
// the null ("not present") span.
const SpanNull = engine.SpanNull

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

// TokenByteOffsets is engine.TokenByteOffsets: [first byte, end byte) of
// each token from the byte lengths its tokens decode to.
func TokenByteOffsets(lens []int) [][2]int { return engine.TokenByteOffsets(lens) }

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

// AmbiguousSpanAnswer reports whether raw is an answer given as a string
// that occurs more than once in text: ParseSpanAnswer places it at its
// first occurrence, which may not be the one meant (a quoted "Brian
// wrote:" above the signature "Brian"). Offsets say which one.
func AmbiguousSpanAnswer(text string, raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '"' {
		return false
	}
	var a string
	return json.Unmarshal(t, &a) == nil && a != "" && strings.Count(text, a) > 1
}
