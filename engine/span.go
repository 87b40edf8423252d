package engine

import (
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/onecore-dev/onecore/amx"
)

// Span-extraction head (docs/design.md §7, issue 14). A causal model reads
// <bos> + SpanPrompt(question) + the document's tokens, so every document
// token's state has seen the question. Per position the head scores a
// start and an end logit from the final-RMSNorm output:
// [start, end] = hidden · head.span.w + head.span.b. The "not present"
// answer is the null span, scored by the same head at the prompt's last
// token (which has seen the question but no document token), as SQuAD 2.0
// heads score it at [CLS]. A span's end is scored at the row after its
// last token, which has seen the token that closes the field; a checkpoint
// trained before that (no span_end_next) scores it at the token itself
// (SpanLogitRows). Training: package train (Extract); decoding: SpanDecode.
const (
	HeadSpanW = "head.span.w" // [d_model, 2]: start column, end column
	HeadSpanB = "head.span.b" // [2]
)

// SpanPrompt is the text put between <bos> and the document for the span
// head: the question first, so a causal model's document states see it.
// Training and inference tokenize it on its own (not with the document),
// so both see the same tokens.
func SpanPrompt(question string) string { return "Question: " + question + "\n" }

// HasSpanHead reports whether the model has a span-extraction head.
func (m *Model) HasSpanHead() bool { return m.spanW != nil }

// spanLogits writes [start, end] logits of rows r0..r0+n−1 of the pass
// into dst (2 per row): the bias plus a float32 SIMD dot product of the
// row's hidden state with each head column (amx.Dot, whose summation order
// depends on the length alone), so the logits depend on the row alone:
// batch invariant whatever the packing. (Sequential float64 sums here cost
// 3–4 % of a 2-layer d_model-128 model's extraction; the trainer's float64
// logits agree to ~1e-6.)
func (in *Instance) spanLogits(r0, n int, dst []float32) {
	D := in.m.Cfg.DModel
	ws, we, b := in.m.spanCols[:D], in.m.spanCols[D:], in.m.spanB
	for i := 0; i < n; i++ {
		h := in.xf[(r0+i)*D : (r0+i+1)*D]
		dst[2*i], dst[2*i+1] = b[0]+amx.Dot(h, ws), b[1]+amx.Dot(h, we)
	}
}

// SpanNull is the position SpanDecode reports for the null ("not
// present") answer.
const SpanNull = -1

// SpanResult is one decoded span: document token positions S..E inclusive
// (SpanNull when abstaining) and its log-probability, log softmax over
// start positions plus log softmax over end positions (of the null span
// when abstaining).
type SpanResult struct {
	S, E    int
	LogProb float64
	Abstain bool
	// BestSpan is the start+end score of the best non-null span (−Inf for
	// an empty document) and Null the null span's score, kept for
	// threshold tuning: SpanDecode abstains iff Null+threshold ≥ BestSpan.
	BestSpan, Null float64
}

// SpanLogitRows returns the rows of a span sequence (<bos> + prompt of
// promptLen−1 tokens + document [+ <eos>]) whose start and end logits score
// entry j of SpanDecode's layout [null, doc token 0, doc token 1, ...].
//
// With endNext (generation.json span_end_next, what train extract writes)
// the end of a span at document token j−1 is scored at the next row: a
// causal state cannot see the token after its own, and that token is what
// says a field ends there (the "\n" after a man page's one-line purpose,
// the "," after a surname). Ends scored at their own token learned to stop
// early: a 2-layer head cut 50 of 230 held-out man-page purposes short
// ("compile a resource" for "compile a resource bundle"). The row after the
// document's last token is an appended <eos> (SpanSeqTail). The null keeps
// both logits at the prompt's last token.
func SpanLogitRows(promptLen, j int, endNext bool) (startRow, endRow int) {
	r := promptLen - 1 + j
	if endNext && j > 0 {
		return r, r + 1
	}
	return r, r
}

// SpanSeqTail returns what follows the document in a span sequence: <eos>
// when ends are scored at the next row (SpanLogitRows), else nothing.
func SpanSeqTail(endNext bool) []int32 {
	if endNext {
		return []int32{EosID}
	}
	return nil
}

// SpanDecode picks the best span s ≤ e < s+maxSpan by start[s]+end[e] over
// logits laid out [null, doc token 0, doc token 1, ...], and abstains when
// the null score start[null]+end[null] plus threshold is at least as high,
// or when the document has no tokens. Ties go to the earliest span so the
// result depends on nothing but the logits and lines. With lines (non-nil)
// only spans whose text, white space trimmed, stays on one line of the
// document are considered (see SpanLines).
func SpanDecode(start, end []float64, maxSpan int, threshold float64, lines *SpanLines) SpanResult {
	n := len(start) - 1
	null := start[0] + end[0]
	bs, be, best := SpanNull, SpanNull, math.Inf(-1)
	for s := 0; s < n; s++ {
		for e := s; e < n && e-s < maxSpan; e++ {
			if lines != nil && lines.last[e] > lines.first[s] {
				break // the span's text would cross a line break; so would every longer one
			}
			if v := start[s+1] + end[e+1]; v > best {
				bs, be, best = s, e, v
			}
		}
	}
	r := SpanResult{S: bs, E: be, BestSpan: best, Null: null}
	if bs == SpanNull || null+threshold >= best {
		r.S, r.E, r.Abstain = SpanNull, SpanNull, true
	}
	r.LogProb = LogSoftmaxAt(start, r.S+1) + LogSoftmaxAt(end, r.E+1)
	return r
}

// CalibrateSpanThreshold picks the threshold SpanDecode adds to the null
// score, from held-out decodes: margin[k] = BestSpan − Null of example k,
// answerOK[k] whether its best span is the gold answer, abstainOK[k]
// whether the gold is "not present". With threshold t, example k abstains
// iff t ≥ margin[k], so exact match is a step function of t that changes
// only at the margins. The result maximises held-out exact match; it is 0
// (the head's own decision) whenever 0 already does, else the midpoint of
// the best interval nearest to 0, so a small held-out set moves the
// decision only where it measurably helps. Ties between equal intervals go
// to the one nearest 0, then the lower.
func CalibrateSpanThreshold(margin []float64, answerOK, abstainOK []bool) (threshold float64, exact int) {
	n := len(margin)
	ord := make([]int, 0, n)
	for k := range margin {
		if !math.IsInf(margin[k], -1) && !math.IsNaN(margin[k]) {
			ord = append(ord, k)
		}
	}
	// examples that always abstain (no span at all) count as abstentions
	// at every threshold
	base := 0
	for k := range margin {
		if (math.IsInf(margin[k], -1) || math.IsNaN(margin[k])) && abstainOK[k] {
			base++
		}
	}
	sort.Slice(ord, func(a, b int) bool {
		if margin[ord[a]] != margin[ord[b]] {
			return margin[ord[a]] < margin[ord[b]]
		}
		return ord[a] < ord[b]
	})
	// interval i is t in [m_{i-1}, m_i) (m_{-1} = −Inf, m_len = +Inf):
	// examples ord[:i] abstain, ord[i:] answer
	score := base
	for _, k := range ord {
		if answerOK[k] {
			score++
		}
	}
	zero := func(lo, hi float64) bool { return lo <= 0 && 0 < hi }
	bestScore, bestT, bestDist := -1, 0.0, math.Inf(1)
	i := 0
	for {
		lo, hi := math.Inf(-1), math.Inf(1)
		if i > 0 {
			lo = margin[ord[i-1]]
		}
		if i < len(ord) {
			hi = margin[ord[i]]
		}
		if lo < hi {
			var t, dist float64
			switch {
			case zero(lo, hi):
				t, dist = 0, 0
			case math.IsInf(lo, -1):
				t, dist = hi-1, math.Abs(hi-1)
			case math.IsInf(hi, 1):
				t, dist = lo+1, math.Abs(lo+1)
			default:
				t = (lo + hi) / 2
				dist = math.Abs(t)
			}
			if score > bestScore || (score == bestScore && dist < bestDist) {
				bestScore, bestT, bestDist = score, t, dist
			}
		}
		if i == len(ord) {
			break
		}
		k := ord[i]
		if answerOK[k] {
			score--
		}
		if abstainOK[k] {
			score++
		}
		i++
	}
	return bestT, bestScore
}

// LogSoftmaxAt is log softmax(z)[i], stable for large logits.
func LogSoftmaxAt(z []float64, i int) float64 {
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

// TokenByteOffsets returns [first byte, end byte) of each token of a
// document whose tokens decode to the given byte lengths, in order: with a
// byte-level BPE without normalizer the concatenated token bytes are
// exactly the document's bytes, so offsets are running sums.
func TokenByteOffsets(lens []int) [][2]int {
	offs := make([][2]int, len(lens))
	p := 0
	for i, l := range lens {
		offs[i] = [2]int{p, p + l}
		p += l
	}
	return offs
}

// SpanLines tells SpanDecode which token spans stay on one line: a
// field such as a name, a URL or a bug number never holds a line break,
// and a span head whose start and end are scored apart can otherwise
// join a word near the end of one line to the name on the next ("Regards\n
// Anders"). Per document token it holds the line (count of "\n" before it)
// of the first non-space character at or after the token's start and of
// the last non-space character before the token's end; span s..e keeps to
// one line iff last[e] ≤ first[s] (a span of white space only passes, as
// SpanText keeps it). train extract turns it on for a checkpoint whose
// training answers all fit on one line (generation.json span_one_line).
type SpanLines struct{ first, last []int32 }

// NewSpanLines computes SpanLines for a document's text and its tokens'
// byte offsets (TokenByteOffsets). A token edge inside a UTF-8 character
// counts that whole character, as SpanText widens the span to it.
func NewSpanLines(text string, offs [][2]int) *SpanLines {
	n := len(text)
	// before[p]: line of the last non-space character that starts before
	// byte p (−1 if none); after[p]: line of the first non-space character
	// that ends after byte p (MaxInt32 if none)
	before := make([]int32, n+1)
	after := make([]int32, n+1)
	line := int32(0)
	before[0] = -1
	for p := 0; p < n; {
		r, w := utf8.DecodeRuneInString(text[p:])
		v := before[p]
		if !unicode.IsSpace(r) {
			v = line
		}
		for k := 1; k <= w; k++ {
			before[p+k] = v
		}
		if r == '\n' {
			line++
		}
		p += w
	}
	// the same characters from the end: line counts back down across each
	// "\n", which belongs to the line it ends
	after[n] = math.MaxInt32
	for q := n; q > 0; {
		r, w := utf8.DecodeLastRuneInString(text[:q])
		if r == '\n' {
			line--
		}
		v := after[q]
		if !unicode.IsSpace(r) {
			v = line
		}
		for k := 1; k <= w; k++ {
			after[q-k] = v
		}
		q -= w
	}
	l := &SpanLines{first: make([]int32, len(offs)), last: make([]int32, len(offs))}
	for i, o := range offs {
		l.first[i] = after[min(o[0], n)]
		l.last[i] = before[min(o[1], n)]
	}
	return l
}

// SpanText returns the text of token span s..e (inclusive) of a document
// whose tokens cover text at byte offsets offs, and its character offsets
// [cs, ce) in text. The tokens' byte range is widened to whole characters
// (a byte-level token may hold part of a UTF-8 character), then stripped
// of white space at both ends: BPE tokens carry the space before a word
// (" MF" in " MF99"), so a span of whole tokens would otherwise start with
// it (a span of only white space is kept as it is). The answer is always
// exactly the substring of the document at the reported offsets.
//
// wholeWords widens the span to whole words: an edge with a letter or digit
// on both sides moves outwards until it has not. A token boundary need not
// be a word boundary (BPE merges "\n\nD" and leaves "aniel"), and a head
// that misses by one such token would answer "aniel" for "Daniel"; train
// extract turns it on for a checkpoint whose training answers all sit at
// word boundaries (generation.json span_whole_words).
func SpanText(text string, offs [][2]int, s, e int, wholeWords bool) (answer string, cs, ce int) {
	a, b := offs[s][0], offs[e][1]
	a, b = min(a, len(text)), min(b, len(text))
	for a > 0 && !utf8.RuneStart(text[a]) {
		a--
	}
	for b < len(text) && !utf8.RuneStart(text[b]) {
		b++
	}
	if t := strings.TrimSpace(text[a:b]); t != "" {
		a += strings.Index(text[a:b], t)
		b = a + len(t)
	}
	if wholeWords {
		for midWord(text, a) {
			_, n := utf8.DecodeLastRuneInString(text[:a])
			a -= n
		}
		for midWord(text, b) {
			_, n := utf8.DecodeRuneInString(text[b:])
			b += n
		}
	}
	cs = utf8.RuneCountInString(text[:a])
	return text[a:b], cs, cs + utf8.RuneCountInString(text[a:b])
}

// AtWordBoundaries reports whether text[a:b] (byte offsets) starts and
// ends at word boundaries: neither edge has a letter or digit on both
// sides. train extract checks it for every training answer to decide
// span_whole_words (see SpanText).
func AtWordBoundaries(text string, a, b int) bool {
	return !midWord(text, a) && !midWord(text, b)
}

// midWord reports whether byte offset i of text falls between two word
// characters (letters or digits). The ends of the text are boundaries.
func midWord(text string, i int) bool {
	if i <= 0 || i >= len(text) {
		return false
	}
	r1, _ := utf8.DecodeLastRuneInString(text[:i])
	r2, _ := utf8.DecodeRuneInString(text[i:])
	return isWordRune(r1) && isWordRune(r2)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
