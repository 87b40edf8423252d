package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer is one tokenizer.json normalizer.
type normalizer interface {
	normalize(s string) string
}

type seqNormalizer []normalizer

func (q seqNormalizer) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// unicodeNormalizer is NFC, NFD, NFKC or NFKD.
type unicodeNormalizer struct{ form norm.Form }

func (u unicodeNormalizer) normalize(s string) string { return normalizeForm(u.form, s) }

type lowercaseNormalizer struct{}

func (lowercaseNormalizer) normalize(s string) string { return lowercase(s) }

// lowercase lowercases per character like Rust's char::to_lowercase (no
// context-dependent final sigma; U+0130 becomes "i̇"; unicode_lower.go has
// the characters where Go's tables and the oracle's differ).
func lowercase(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if l, ok := lowerOverrides[r]; ok { // İ → i̇, and characters newer than Go's tables
			b.WriteString(l)
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

type stripNormalizer struct{ left, right bool }

func (n stripNormalizer) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

type stripAccentsNormalizer struct{}

func (stripAccentsNormalizer) normalize(s string) string { return stripAccents(s) }

// stripAccents removes nonspacing marks (Mn, in unicode_categories' tables
// like Hugging Face), as StripAccents does after its caller applied NFD.
func stripAccents(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(bertMnTable, r) {
			return -1
		}
		return r
	}, s)
}

// replaceNormalizer replaces a literal string or the matches of an
// Oniguruma regex (compiled like Split's, see regex_onig.go).
type replaceNormalizer struct {
	literal string
	re      matcher
	content string
}

func (n replaceNormalizer) normalize(s string) string {
	if n.re == nil {
		return strings.ReplaceAll(s, n.literal, n.content)
	}
	ms := n.re.matches(s, nil)
	if len(ms) == 0 {
		return s
	}
	var b strings.Builder
	prev := 0
	for _, m := range ms {
		b.WriteString(s[prev:m[0]])
		b.WriteString(n.content)
		prev = m[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}

type prependNormalizer struct{ prefix string }

func (n prependNormalizer) normalize(s string) string {
	if s == "" {
		return s
	}
	return n.prefix + s
}

// bertNormalizer is BertNormalizer: clean text, pad CJK ideographs with
// spaces, strip accents, lowercase.
type bertNormalizer struct {
	cleanText, chineseChars, stripAccents, lowercase bool
}

func (n bertNormalizer) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if n.cleanText {
			if r == 0 || r == utf8.RuneError || bertIsControl(r) {
				continue
			}
			if bertIsWhitespace(r) {
				r = ' '
			}
		}
		if n.chineseChars && isChineseChar(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if n.stripAccents {
		out = stripAccents(normalizeForm(norm.NFD, out))
	}
	if n.lowercase {
		out = lowercase(out)
	}
	return out
}

func bertIsWhitespace(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || unicode.IsSpace(r)
}

// bertIsControl is Hugging Face's is_control: unicode_categories' is_other
// (Cc, Cf, Co as listed in its tables, see unicode_bert.go) except tab,
// newline and carriage return.
func bertIsControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.Is(bertControlTable, r)
}

func isChineseChar(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
