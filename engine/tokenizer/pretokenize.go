package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// preTokenizer is one tokenizer.json pre-tokenizer: it cuts a normalized
// segment into pieces (appended to out) that the model encodes separately.
// first is true for the piece that starts the original text (Metaspace's
// prepend_scheme "first" needs it).
type preTokenizer interface {
	split(s string, first bool, out []string) []string
}

type seqPre []preTokenizer

func (q seqPre) split(s string, first bool, out []string) []string {
	cur := []string{s}
	for _, p := range q {
		var next []string
		for i, c := range cur {
			next = p.split(c, first && i == 0, next)
		}
		cur = next
	}
	return append(out, cur...)
}

// Split behaviors (SplitDelimiterBehavior).
const (
	behRemoved = iota
	behIsolated
	behMergedWithPrevious
	behMergedWithNext
	behContiguous
)

func parseBehavior(s string) (int, error) {
	switch s {
	case "Removed":
		return behRemoved, nil
	case "Isolated":
		return behIsolated, nil
	case "MergedWithPrevious":
		return behMergedWithPrevious, nil
	case "MergedWithNext":
		return behMergedWithNext, nil
	case "Contiguous":
		return behContiguous, nil
	}
	return 0, fmt.Errorf("unsupported split behavior %q", s)
}

// matcher finds the matches of a Split pattern in s, as [start, end) pairs.
type matcher interface {
	matches(s string, out [][2]int) [][2]int
}

// scannerMatcher wraps the hand-written GPT-2 / Llama-3 scanners.
type scannerMatcher struct {
	next func(s string, i int) int
}

func (m scannerMatcher) matches(s string, out [][2]int) [][2]int {
	for i := 0; i < len(s); {
		j := m.next(s, i)
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

type literalMatcher string

func (m literalMatcher) matches(s string, out [][2]int) [][2]int {
	if m == "" {
		return out
	}
	for off := 0; ; {
		i := strings.Index(s[off:], string(m))
		if i < 0 {
			return out
		}
		out = append(out, [2]int{off + i, off + i + len(m)})
		off += i + len(m)
	}
}

// newPatternMatcher recognizes the GPT-2, Llama-3 and Qwen2 regexes (fast
// scanners) and compiles every other Oniguruma pattern for regexp2 (see
// regex_onig.go).
func newPatternMatcher(pattern string, literal bool) (matcher, error) {
	if literal {
		return literalMatcher(pattern), nil
	}
	switch pattern {
	case gpt2Pattern:
		return scannerMatcher{gpt2Next}, nil
	case llama3Pattern:
		return scannerMatcher{func(s string, i int) int { return llama3Next(s, i, 3) }}, nil
	case qwen2Pattern:
		return scannerMatcher{func(s string, i int) int { return llama3Next(s, i, 1) }}, nil
	}
	return compileOnig(pattern)
}

// splitPre is the Split pre-tokenizer.
type splitPre struct {
	m        matcher
	behavior int
	invert   bool
	isolated bool // behavior Isolated and not inverted: pieces are the matches and gaps
}

func (p *splitPre) split(s string, _ bool, out []string) []string {
	if s == "" {
		return out
	}
	if sm, ok := p.m.(scannerMatcher); ok && p.isolated {
		for i := 0; i < len(s); {
			j := sm.next(s, i)
			out = append(out, s[i:j])
			i = j
		}
		return out
	}
	return splitByMatches(s, p.m.matches(s, nil), p.behavior, p.invert, out)
}

// splitByMatches applies a SplitDelimiterBehavior to the matches of s,
// exactly as Hugging Face tokenizers does (NormalizedString::split): the
// string is cut into matches and the gaps between them (an empty match is a
// piece of its own), invert flips which are matches, the behavior folds
// neighbouring pieces, and empty pieces are dropped at the end.
func splitByMatches(s string, ms [][2]int, behavior int, invert bool, out []string) []string {
	type piece struct {
		start, end int
		match      bool
	}
	var pieces []piece
	prev := 0
	for _, m := range ms {
		if prev != m[0] {
			pieces = append(pieces, piece{prev, m[0], invert})
		}
		pieces = append(pieces, piece{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev != len(s) {
		pieces = append(pieces, piece{prev, len(s), invert})
	}
	var folded []piece // match now means "remove"
	switch behavior {
	case behIsolated:
		for _, p := range pieces {
			folded = append(folded, piece{p.start, p.end, false})
		}
	case behRemoved:
		folded = pieces
	case behContiguous:
		previous := false
		for _, p := range pieces {
			if p.match == previous && len(folded) > 0 {
				folded[len(folded)-1].end = p.end
			} else {
				folded = append(folded, piece{p.start, p.end, false})
			}
			previous = p.match
		}
	case behMergedWithPrevious:
		previous := false
		for _, p := range pieces {
			if p.match && !previous && len(folded) > 0 {
				folded[len(folded)-1].end = p.end
			} else {
				folded = append(folded, piece{p.start, p.end, false})
			}
			previous = p.match
		}
	case behMergedWithNext:
		previous := false
		for k := len(pieces) - 1; k >= 0; k-- {
			p := pieces[k]
			if p.match && !previous && len(folded) > 0 {
				folded[len(folded)-1].start = p.start
			} else {
				folded = append(folded, piece{p.start, p.end, false})
			}
			previous = p.match
		}
		slices.Reverse(folded)
	}
	for _, p := range folded {
		if !p.match && p.start < p.end {
			out = append(out, s[p.start:p.end])
		}
	}
	return out
}

// byteLevelPre is the ByteLevel pre-tokenizer. Pieces stay raw bytes: the
// byte-to-alphabet mapping happens inside the BPE model (bpeModel.byteLevel).
type byteLevelPre struct {
	addPrefixSpace bool
	useRegex       bool
}

func (p byteLevelPre) split(s string, _ bool, out []string) []string {
	if s == "" {
		return out
	}
	if p.addPrefixSpace && s[0] != ' ' {
		s = " " + s
	}
	if !p.useRegex {
		return append(out, s)
	}
	return splitGPT2(s, out)
}

// metaspacePre is the Metaspace pre-tokenizer.
type metaspacePre struct {
	replacement string
	prepend     string // "always", "never" or "first"
	splitOn     bool
}

func (p metaspacePre) split(s string, first bool, out []string) []string {
	if s == "" {
		return out
	}
	s = strings.ReplaceAll(s, " ", p.replacement)
	if (p.prepend == "always" || (p.prepend == "first" && first)) && !strings.HasPrefix(s, p.replacement) {
		s = p.replacement + s
	}
	if !p.splitOn {
		return append(out, s)
	}
	return splitByMatches(s, literalMatcher(p.replacement).matches(s, nil), behMergedWithNext, false, out)
}

// funcPre splits on a character predicate: isolated characters become their
// own pieces, removed ones (whitespace) separate pieces.
type funcPre struct {
	remove  func(rune) bool
	isolate func(rune) bool
}

func (p funcPre) split(s string, _ bool, out []string) []string {
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case p.remove != nil && p.remove(r):
			if start < i {
				out = append(out, s[start:i])
			}
			start = i + size
		case p.isolate != nil && p.isolate(r):
			if start < i {
				out = append(out, s[start:i])
			}
			out = append(out, s[i:i+size])
			start = i + size
		}
		i += size
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// isBertPunct is Hugging Face's is_bert_punc: ASCII punctuation or P* in
// unicode_categories' tables (unicode_bert.go).
func isBertPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= '!' && r <= '/') || (r >= ':' && r <= '@') || (r >= '[' && r <= '`') || (r >= '{' && r <= '~')
	}
	return unicode.Is(bertPunctTable, r)
}

// charClassPre splits into maximal runs of one class, dropping runs whose
// class is 0 (used for Whitespace: \w+|[^\w\s]+ and Digits).
type charClassPre struct {
	class func(rune) int
}

func (p charClassPre) split(s string, _ bool, out []string) []string {
	start, cur := 0, -1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := p.class(r)
		if c != cur || c < 0 {
			if cur > 0 && start < i {
				out = append(out, s[start:i])
			}
			start, cur = i, c
			if c < 0 { // an isolated character
				out = append(out, s[i:i+size])
				start, cur = i+size, -2
			}
		}
		i += size
	}
	if cur > 0 && start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func isOnigWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.M, unicode.Pc)
}
