package engine

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSpanDecode checks the decoder on hand-made logits: best span with
// s ≤ e, the max-span limit, abstention against the null score plus
// threshold, and the span log-probability.
func TestSpanDecode(t *testing.T) {
	start := []float64{0, 1, 5, 0, 0}
	end := []float64{0, 0, 4, 0, 6} // e=0 would pair best with s=1 but s≤e forbids it
	r := SpanDecode(start, end, 64, 0, nil)
	if r.Abstain || r.S != 1 || r.E != 3 {
		t.Fatalf("got %+v, want span 1..3", r)
	}
	want := LogSoftmaxAt(start, 2) + LogSoftmaxAt(end, 4)
	if math.Abs(r.LogProb-want) > 1e-12 || r.LogProb >= 0 {
		t.Errorf("logprob %g, want %g", r.LogProb, want)
	}
	if r := SpanDecode(start, end, 2, 0, nil); r.S != 1 || r.E != 1 {
		t.Errorf("maxSpan 2: got %+v, want 1..1", r)
	}
	// the end logit before the start is never used
	if r := SpanDecode([]float64{0, 0, 5}, []float64{0, 9, 0}, 64, 0, nil); r.S != 0 || r.E != 0 {
		t.Errorf("got %+v, want 0..0", r)
	}
	if r := SpanDecode(start, end, 64, 20, nil); !r.Abstain || r.S != SpanNull {
		t.Errorf("threshold 20: got %+v, want abstain", r)
	}
	nullWins := []float64{12, 1, 5, 0, 0}
	if r := SpanDecode(nullWins, end, 64, 0, nil); !r.Abstain || math.Abs(r.LogProb-(LogSoftmaxAt(nullWins, 0)+LogSoftmaxAt(end, 0))) > 1e-12 {
		t.Errorf("null wins: got %+v", r)
	}
	if r := SpanDecode([]float64{0}, []float64{0}, 64, 0, nil); !r.Abstain {
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
		got, cs, ce := SpanText(text, offs, c.s, c.e, false)
		r := []rune(text)
		if got != c.want || cs != c.cs || ce != c.ce || string(r[cs:ce]) != got {
			t.Errorf("span %d..%d: %q [%d,%d), want %q [%d,%d)", c.s, c.e, got, cs, ce, c.want, c.cs, c.ce)
		}
	}
}

// TestSpanTextWholeWords: with wholeWords an edge inside a word moves out
// to the word's boundary (letters and digits of any script), an edge at a
// boundary stays, and the answer is still the text at its offsets.
func TestSpanTextWholeWords(t *testing.T) {
	for _, c := range []struct {
		text   string
		lens   []int // token byte lengths
		s, e   int
		want   string
		wantNo string // the same span without wholeWords
	}{
		{"Hi\n\nDaniel\n", []int{2, 3, 5, 1}, 2, 2, "Daniel", "aniel"}, // "\n\nD" "aniel": the head missed a token
		{"Thanks,\nPhil", []int{7, 3, 2}, 1, 1, "Phil", "Ph"},          // end inside the word
		{"Mathieu Malaterre.", []int{7, 8, 2, 1}, 0, 1, "Mathieu Malaterre", "Mathieu Malater"},
		{"version v42 out", []int{7, 2, 2, 4}, 2, 2, "v42", "42"},      // digits and letters are one word
		{"by Jörg Straße", []int{2, 6, 7, 1}, 2, 2, "Straße", "Straß"}, // "Straß" "e" across ß
		{"the code is AB12.", []int{11, 5, 1}, 1, 1, "AB12", "AB12"},   // already whole: unchanged
		{"a-b c", []int{1, 1, 1, 2}, 1, 1, "-", "-"},                   // punctuation is a boundary
	} {
		offs := TokenByteOffsets(c.lens)
		for _, whole := range []bool{true, false} {
			want := c.wantNo
			if whole {
				want = c.want
			}
			got, cs, ce := SpanText(c.text, offs, c.s, c.e, whole)
			if got != want || string([]rune(c.text)[cs:ce]) != got {
				t.Errorf("%q span %d..%d whole=%v: %q at [%d,%d), want %q", c.text, c.s, c.e, whole, got, cs, ce, want)
			}
		}
	}
}

// TestAtWordBoundaries: an edge is inside a word only with a letter or
// digit on both sides; the ends of the text are boundaries.
func TestAtWordBoundaries(t *testing.T) {
	text := "v42 Jörg, #1004785"
	for _, c := range []struct {
		a, b int
		want bool
	}{
		{0, 3, true},           // v42
		{1, 3, false},          // 42 of v42
		{4, 9, true},           // Jörg (ö is two bytes)
		{4, 7, false},          // Jö
		{12, len(text), true},  // 1004785 after '#'
		{11, len(text), true},  // #1004785
		{0, len(text), true},   // everything
		{13, len(text), false}, // 004785
	} {
		if got := AtWordBoundaries(text, c.a, c.b); got != c.want {
			t.Errorf("%q [%d,%d) = %q: %v, want %v", text, c.a, c.b, text[c.a:c.b], got, c.want)
		}
	}
}

// TestCalibrateSpanThreshold: hand cases (0 kept when it is already
// best, a move only when it strictly helps, documents without spans), then
// random cases against a brute force over many thresholds.
func TestCalibrateSpanThreshold(t *testing.T) {
	inf := math.Inf(-1)
	cases := []struct {
		name                string
		margin              []float64
		answerOK, abstainOK []bool
		wantT               float64
		wantExact           int
	}{
		{"zero already best", []float64{-1, 2}, []bool{false, true}, []bool{true, false}, 0, 2},
		{"answer more", []float64{-2, -1, 3}, []bool{true, true, true}, []bool{false, false, false}, -3, 3},
		{"abstain more", []float64{1, 2, 5}, []bool{false, false, true}, []bool{true, true, false}, 3.5, 3},
		{"no span counts as abstention", []float64{inf, 1}, []bool{false, true}, []bool{true, false}, 0, 2},
		{"ties nearest zero", []float64{-4, 4}, []bool{false, false}, []bool{true, true}, 5, 2},
		{"empty", nil, nil, nil, 0, 0},
	}
	for _, c := range cases {
		th, ex := CalibrateSpanThreshold(c.margin, c.answerOK, c.abstainOK)
		if th != c.wantT || ex != c.wantExact {
			t.Errorf("%s: threshold %g exact %d, want %g %d", c.name, th, ex, c.wantT, c.wantExact)
		}
	}
	rng := uint64(7)
	next := func() uint64 { rng = rng*6364136223846793005 + 1442695040888963407; return rng >> 33 }
	for trial := 0; trial < 300; trial++ {
		n := int(next() % 12)
		margin := make([]float64, n)
		aok, bok := make([]bool, n), make([]bool, n)
		for k := range margin {
			margin[k] = float64(int(next()%9)) - 4 // ties on purpose
			if next()%10 == 0 {
				margin[k] = inf
			}
			aok[k], bok[k] = next()%2 == 0, next()%3 == 0
		}
		exactAt := func(th float64) int {
			e := 0
			for k := range margin {
				abstain := math.IsInf(margin[k], -1) || th >= margin[k]
				if (abstain && bok[k]) || (!abstain && aok[k]) {
					e++
				}
			}
			return e
		}
		best := 0
		for th := -10.0; th <= 10; th += 0.25 {
			best = max(best, exactAt(th))
		}
		th, ex := CalibrateSpanThreshold(margin, aok, bok)
		if ex != best || exactAt(th) != ex {
			t.Fatalf("trial %d: margins %v answerOK %v abstainOK %v: got threshold %g exact %d (%d there), brute force %d",
				trial, margin, aok, bok, th, ex, exactAt(th), best)
		}
		if exactAt(0) == best && th != 0 {
			t.Fatalf("trial %d: 0 is optimal but threshold %g", trial, th)
		}
	}
}

// TestSpanDecodeOneLine: with SpanLines, SpanDecode returns exactly the
// best span (earliest on ties) among those whose text — widened to whole
// characters and white space trimmed, as SpanText cuts it — holds no line
// break, checked against brute force on random texts (multi-byte
// characters, runs of spaces and newlines, token edges inside characters)
// and random logits; every answer it gives is on one line.
func TestSpanDecodeOneLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 7))
	pieces := []string{"a", "Bob", " ", "  ", "\n", "\n\n", "\t", "é", "€", "名", "x y", "\r\n", "--"}
	for iter := 0; iter < 3000; iter++ {
		var sb strings.Builder
		for k := rng.IntN(12); k >= 0; k-- {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := sb.String()
		// random byte-level tokens, some ending inside a character
		var lens []int
		for p := 0; p < len(text); {
			l := min(1+rng.IntN(4), len(text)-p)
			lens = append(lens, l)
			p += l
		}
		offs := TokenByteOffsets(lens)
		n := len(offs)
		start, end := make([]float64, n+1), make([]float64, n+1)
		for i := range start {
			start[i], end[i] = float64(rng.IntN(7)), float64(rng.IntN(7))
		}
		start[0], end[0] = -100, -100 // never abstain, so the span is always compared
		maxSpan := 1 + rng.IntN(6)
		oneLine := func(s, e int) bool {
			a, b := offs[s][0], offs[e][1]
			for a > 0 && !utf8.RuneStart(text[a]) {
				a--
			}
			for b < len(text) && !utf8.RuneStart(text[b]) {
				b++
			}
			return !strings.Contains(strings.TrimSpace(text[a:b]), "\n")
		}
		ws, we, best := SpanNull, SpanNull, math.Inf(-1)
		for s := 0; s < n; s++ {
			for e := s; e < n && e-s < maxSpan; e++ {
				if v := start[s+1] + end[e+1]; oneLine(s, e) && v > best {
					ws, we, best = s, e, v
				}
			}
		}
		r := SpanDecode(start, end, maxSpan, 0, NewSpanLines(text, offs))
		if n == 0 {
			if !r.Abstain {
				t.Fatalf("%q: empty document answered", text)
			}
			continue
		}
		if r.S != ws || r.E != we {
			t.Fatalf("text %q lens %v maxSpan %d: decoded %d..%d, brute force %d..%d", text, lens, maxSpan, r.S, r.E, ws, we)
		}
		if r.Abstain != (ws == SpanNull) {
			t.Fatalf("text %q: abstained %v, brute force found %d..%d", text, r.Abstain, ws, we)
		}
		if r.Abstain {
			continue // every span crosses a line (a token holds "a\nb")
		}
		if ans, _, _ := SpanText(text, offs, r.S, r.E, false); strings.Contains(strings.TrimSpace(ans), "\n") {
			t.Fatalf("text %q: answer %q crosses a line", text, ans)
		}
	}
}

// TestSpanDecodeOneLineExample: the miss that motivated it — the best
// start on "Regards" and the best end on the name on the next line.
func TestSpanDecodeOneLineExample(t *testing.T) {
	text := "Best Regards\nAnders Holm"
	toks := []string{"Best", " Regards", "\n", "Anders", " Holm"}
	var lens []int
	for _, s := range toks {
		lens = append(lens, len(s))
	}
	offs := TokenByteOffsets(lens)
	start := []float64{0, 1, 5, 0, 4, 0} // [null, tokens...]
	end := []float64{0, 0, 1, 0, 2, 6}
	free := SpanDecode(start, end, 64, 0, nil)
	if a, _, _ := SpanText(text, offs, free.S, free.E, false); a != "Regards\nAnders Holm" {
		t.Fatalf("unconstrained answer %q", a)
	}
	one := SpanDecode(start, end, 64, 0, NewSpanLines(text, offs))
	if a, _, _ := SpanText(text, offs, one.S, one.E, false); a != "Anders Holm" {
		t.Fatalf("one-line answer %q, want %q", a, "Anders Holm")
	}
}
