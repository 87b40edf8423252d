package engine

import (
	"math"
	"testing"
)

// TestSpanDecode checks the decoder on hand-made logits: best span with
// s ≤ e, the max-span limit, abstention against the null score plus
// threshold, and the span log-probability.
func TestSpanDecode(t *testing.T) {
	start := []float64{0, 1, 5, 0, 0}
	end := []float64{0, 0, 4, 0, 6} // e=0 would pair best with s=1 but s≤e forbids it
	r := SpanDecode(start, end, 64, 0)
	if r.Abstain || r.S != 1 || r.E != 3 {
		t.Fatalf("got %+v, want span 1..3", r)
	}
	want := LogSoftmaxAt(start, 2) + LogSoftmaxAt(end, 4)
	if math.Abs(r.LogProb-want) > 1e-12 || r.LogProb >= 0 {
		t.Errorf("logprob %g, want %g", r.LogProb, want)
	}
	if r := SpanDecode(start, end, 2, 0); r.S != 1 || r.E != 1 {
		t.Errorf("maxSpan 2: got %+v, want 1..1", r)
	}
	// the end logit before the start is never used
	if r := SpanDecode([]float64{0, 0, 5}, []float64{0, 9, 0}, 64, 0); r.S != 0 || r.E != 0 {
		t.Errorf("got %+v, want 0..0", r)
	}
	if r := SpanDecode(start, end, 64, 20); !r.Abstain || r.S != SpanNull {
		t.Errorf("threshold 20: got %+v, want abstain", r)
	}
	nullWins := []float64{12, 1, 5, 0, 0}
	if r := SpanDecode(nullWins, end, 64, 0); !r.Abstain || math.Abs(r.LogProb-(LogSoftmaxAt(nullWins, 0)+LogSoftmaxAt(end, 0))) > 1e-12 {
		t.Errorf("null wins: got %+v", r)
	}
	if r := SpanDecode([]float64{0}, []float64{0}, 64, 0); !r.Abstain {
		t.Errorf("empty document: got %+v, want abstain", r)
	}
}

// TestSpanText: answers are whole characters of the text at the reported
// character offsets, even when tokens split a UTF-8 character, without the
// white space BPE tokens carry at their start.
func TestSpanText(t *testing.T) {
	text := "code: ü€x end"
	// byte tokens: "code:", " ", 0xC3, 0xBC, 0xE2, 0x82 0xAC, "x", " end"
	offs := TokenByteOffsets([]int{5, 1, 1, 1, 1, 2, 1, 4})
	for _, c := range []struct {
		s, e   int
		want   string
		cs, ce int
	}{
		{0, 0, "code:", 0, 5},
		{2, 2, "ü", 6, 7}, // first byte of ü only: widened to the character
		{3, 4, "ü€", 6, 8},
		{5, 6, "€x", 7, 9},
		{7, 7, "end", 10, 13}, // the token's leading space is not part of the answer
		{1, 1, " ", 5, 6},     // a span of only white space stays as it is
		{0, 2, "code: ü", 0, 7},
	} {
		got, cs, ce := SpanText(text, offs, c.s, c.e)
		r := []rune(text)
		if got != c.want || cs != c.cs || ce != c.ce || string(r[cs:ce]) != got {
			t.Errorf("span %d..%d: %q [%d,%d), want %q [%d,%d)", c.s, c.e, got, cs, ce, c.want, c.cs, c.ce)
		}
	}
}
