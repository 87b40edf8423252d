package tokenizer

import (
	"fmt"
	"regexp"
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

type regexpMatcher struct{ re *regexp.Regexp }

func (m regexpMatcher) matches(s string, out [][2]int) [][2]int {
	for _, loc := range m.re.FindAllStringIndex(s, -1) {
		if loc[0] < loc[1] {
			out = append(out, [2]int{loc[0], loc[1]})
		}
	}
	return out
}

// newPatternMatcher recognizes the GPT-2 and Llama-3 regexes (scanners) and
// otherwise accepts regexes whose meaning Go's RE2 shares with Oniguruma.
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
	for _, esc := range []string{`\s`, `\S`, `\w`, `\W`, `\d`, `\D`, `\b`, `\B`} {
		if strings.Contains(pattern, esc) {
			return nil, fmt.Errorf("unsupported Split regex %q: %s is Unicode-aware in Oniguruma but ASCII-only in Go's regexp", pattern, esc)
		}
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("unsupported Split regex %q: %v", pattern, err)
	}
	return regexpMatcher{re}, nil
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

// splitByMatches applies a SplitDelimiterBehavior to the matches of s.
func splitByMatches(s string, ms [][2]int, behavior int, invert bool, out []string) []string {
	type part struct {
		start, end int
		match      bool
	}
	var parts []part
	prev := 0
	for _, m := range ms {
		if prev < m[0] {
			parts = append(parts, part{prev, m[0], invert})
		}
		parts = append(parts, part{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev < len(s) {
		parts = append(parts, part{prev, len(s), invert})
	}
	switch behavior {
	case behIsolated:
		for _, p := range parts {
			out = append(out, s[p.start:p.end])
		}
	case behRemoved:
		for _, p := range parts {
			if !p.match {
				out = append(out, s[p.start:p.end])
			}
		}
	case behContiguous:
		for i := 0; i < len(parts); {
			j := i + 1
			if parts[i].match {
				for j < len(parts) && parts[j].match {
					j++
				}
			}
			out = append(out, s[parts[i].start:parts[j-1].end])
			i = j
		}
	case behMergedWithPrevious:
		start := -1
		for _, p := range parts {
			if start < 0 {
				start = p.start
			}
			if p.match {
				out = append(out, s[start:p.end])
				start = -1
			}
		}
		if start >= 0 {
			out = append(out, s[start:])
		}
	case behMergedWithNext:
		start := -1
		for _, p := range parts {
			if p.match {
				if start >= 0 {
					out = append(out, s[start:p.start])
				}
				start = p.start
				continue
			}
			if start < 0 {
				start = p.start
			}
			out = append(out, s[start:p.end])
			start = -1
		}
		if start >= 0 {
			out = append(out, s[start:])
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
