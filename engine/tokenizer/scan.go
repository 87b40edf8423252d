package tokenizer

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// Hand-written scanners for the pre-tokenization regexes of GPT-2 and
// Llama-3 (tiktoken cl100k style). They return exactly the matches that
// Oniguruma (which Hugging Face tokenizers uses) returns for those patterns,
// in one left-to-right pass with no backtracking over the input.

// The Split patterns recognized by the scanners, spelled as in tokenizer.json.
const (
	gpt2Pattern   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwen2Pattern is llama3Pattern with single digits.
	qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// Character classes of the patterns: \p{L}, \p{N}, \s and everything else.
const (
	clOther uint8 = iota
	clLetter
	clNumber
	clSpace
)

var (
	asciiClass [utf8.RuneSelf]uint8
	bmpClass   [0x10000]uint8 // class of every BMP code point, overrides applied
	suppRanges []classRange   // sorted overrides above the BMP
)

type classRange struct {
	lo, hi rune
	class  uint8
}

func init() {
	for r := rune(0); r < 0x10000; r++ {
		bmpClass[r] = goRuneClass(r)
	}
	for _, o := range onigOverrides {
		for _, rg := range o.ranges {
			for r := rg[0]; r <= rg[1] && r < 0x10000; r++ {
				bmpClass[r] = o.class
			}
			if rg[1] >= 0x10000 {
				suppRanges = append(suppRanges, classRange{max(rg[0], 0x10000), rg[1], o.class})
			}
		}
	}
	sort.Slice(suppRanges, func(i, j int) bool { return suppRanges[i].lo < suppRanges[j].lo })
	copy(asciiClass[:], bmpClass[:utf8.RuneSelf])
}

// goRuneClass classifies with Go's unicode tables.
func goRuneClass(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return clLetter
	case unicode.IsNumber(r):
		return clNumber
	case unicode.IsSpace(r):
		return clSpace
	}
	return clOther
}

// runeClass classifies r as Oniguruma in Hugging Face tokenizers does: Go's
// tables plus the generated overrides for characters added in newer Unicode
// versions (unicode_onig.go).
func runeClass(r rune) uint8 {
	if r < 0x10000 {
		return bmpClass[r]
	}
	i := sort.Search(len(suppRanges), func(i int) bool { return suppRanges[i].hi >= r })
	if i < len(suppRanges) && suppRanges[i].lo <= r {
		return suppRanges[i].class
	}
	return goRuneClass(r)
}

// classAt returns the class and byte width of the character at s[i]. An
// invalid UTF-8 byte is one character of class "other" (as U+FFFD would be).
func classAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size == 1 {
		return clOther, 1
	}
	return runeClass(r), size
}

// runEnd returns the end of the maximal run of class cl starting at i.
func runEnd(s string, i int, cl uint8) int {
	for i < len(s) {
		c, size := classAt(s, i)
		if c != cl {
			break
		}
		i += size
	}
	return i
}

// spaceEnd handles `\s+(?!\S)|\s+` at a whitespace character i: the whole
// run if it reaches the end of s, otherwise all but its last character when
// the run has two or more.
func spaceEnd(s string, i int) int {
	j, last := i, i
	for j < len(s) {
		c, size := classAt(s, j)
		if c != clSpace {
			break
		}
		last = j
		j += size
	}
	if j == len(s) || last == i {
		return j
	}
	return last
}

// splitGPT2 appends the matches of gpt2Pattern in s to out.
func splitGPT2(s string, out []string) []string {
	for i := 0; i < len(s); {
		j := gpt2Next(s, i)
		out = append(out, s[i:j])
		i = j
	}
	return out
}

func gpt2Next(s string, i int) int {
	c := s[i]
	if c == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	if c == ' ' && i+1 < len(s) {
		if ncl, _ := classAt(s, i+1); ncl != clSpace {
			return runEnd(s, i+1, ncl)
		}
	}
	cl, _ := classAt(s, i)
	if cl != clSpace {
		return runEnd(s, i, cl)
	}
	return spaceEnd(s, i)
}

// splitLlama3 appends the matches of llama3Pattern (maxDigits 3) or
// qwen2Pattern (maxDigits 1) in s to out.
func splitLlama3(s string, maxDigits int, out []string) []string {
	for i := 0; i < len(s); {
		j := llama3Next(s, i, maxDigits)
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// foldAt returns the simple case fold of an ASCII letter (or of U+017F LONG
// S, which folds to 's' under Oniguruma's (?i)) at s[i], and its width;
// 0 for anything else.
func foldAt(s string, i int) (byte, int) {
	if i >= len(s) {
		return 0, 0
	}
	c := s[i]
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A', 1
	}
	if c >= 'a' && c <= 'z' {
		return c, 1
	}
	if c == 0xC5 && i+1 < len(s) && s[i+1] == 0xBF {
		return 's', 2
	}
	return 0, 0
}

func llama3Next(s string, i int, maxDigits int) int {
	c := s[i]
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' {
		a, na := foldAt(s, i+1)
		switch a {
		case 's', 't', 'm', 'd':
			return i + 1 + na
		case 'r', 'v', 'l':
			b, nb := foldAt(s, i+1+na)
			if (a == 'l' && b == 'l') || (a != 'l' && b == 'e') {
				return i + 1 + na + nb
			}
		}
	}
	cl, size := classAt(s, i)
	switch cl {
	case clLetter: // [^\r\n\p{L}\p{N}]?\p{L}+ without the optional char
		return runEnd(s, i, clLetter)
	case clNumber: // \p{N}{1,3}
		j := i + size
		for n := 1; n < maxDigits && j < len(s); n++ {
			c, sz := classAt(s, j)
			if c != clNumber {
				break
			}
			j += sz
		}
		return j
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ with the optional char
	if c != '\r' && c != '\n' && i+size < len(s) {
		if ncl, _ := classAt(s, i+size); ncl == clLetter {
			return runEnd(s, i+size, clLetter)
		}
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	start := -1
	if cl == clOther {
		start = i
	} else if c == ' ' && i+1 < len(s) {
		if ncl, _ := classAt(s, i+1); ncl == clOther {
			start = i + 1
		}
	}
	if start >= 0 {
		j := runEnd(s, start, clOther)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// `\s*[\r\n]+`: up to the last CR or LF of the whitespace run.
	j, nl := i, -1
	for j < len(s) {
		c, sz := classAt(s, j)
		if c != clSpace {
			break
		}
		if s[j] == '\r' || s[j] == '\n' {
			nl = j
		}
		j += sz
	}
	if nl >= 0 {
		return nl + 1
	}
	return spaceEnd(s, i)
}
