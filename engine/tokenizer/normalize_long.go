package tokenizer

import (
	"slices"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Unicode normalization the way Hugging Face tokenizers (Rust
// unicode-normalization) does it. golang.org/x/text/unicode/norm differs in
// two ways, and text that would show either goes through the plain
// algorithm below instead of x/text's fast path:
//
//   - x/text follows the Stream-Safe Text Format: it orders and composes
//     combining marks in segments of at most 30 non-starters, so a longer
//     run (Zalgo text) comes out in another order than full canonical
//     ordering gives.
//   - The two follow different Unicode versions: onigNorm
//     (unicode_onignorm.go, generated from the oracle) lists the characters
//     whose combining class, decompositions or composition differ.
//
// The plain algorithm: decompose every character on its own, stable-sort
// each run of non-starters by combining class, then (NFC, NFKC) compose
// every mark that is not blocked with the last starter.

// maxNonStarters is x/text's segment limit.
const maxNonStarters = 30

// normData is a character's normalization in the oracle where it differs
// from Go's tables.
type normData struct {
	rank      uint16 // sorts like the combining class; 0: a starter
	nfd, nfkd []rune
	composes  bool // NFC recomposes nfd into the character
}

// normalizeForm applies form to s like the oracle.
func normalizeForm(form norm.Form, s string) string {
	if !needsPlainNormalization(s) {
		return form.String(s)
	}
	compat := form == norm.NFKC || form == norm.NFKD
	// 1. full decomposition, character by character
	var rs []rune
	for _, r := range s {
		rs = appendDecomposition(rs, r, compat)
	}
	// 2. canonical ordering: a stable sort of each run of non-starters
	for i := 0; i < len(rs); {
		if rank(rs[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && rank(rs[j]) != 0 {
			j++
		}
		slices.SortStableFunc(rs[i:j], func(a, b rune) int { return int(rank(a)) - int(rank(b)) })
		i = j
	}
	if form == norm.NFD || form == norm.NFKD {
		return string(rs)
	}
	// 3. canonical composition
	out := make([]rune, 0, len(rs))
	starter := -1 // index in out of the last starter
	var last uint16
	for _, r := range rs {
		k := rank(r)
		adjacent := starter >= 0 && len(out)-1 == starter
		if starter >= 0 && (adjacent || (last != 0 && last < k)) {
			if p, ok := compose(out[starter], r); ok {
				out[starter] = p
				continue
			}
		}
		if k == 0 {
			starter, last = len(out), 0
		} else {
			last = k
		}
		out = append(out, r)
	}
	return string(out)
}

// needsPlainNormalization reports a run of more than maxNonStarters
// non-starters, or a character whose data differ between the two tables.
func needsPlainNormalization(s string) bool {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf { // ASCII: starters, the same everywhere
			n = 0
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if _, ok := onigNorm[r]; ok {
			return true
		}
		if norm.NFC.PropertiesString(s[i:]).CCC() != 0 {
			if n++; n > maxNonStarters {
				return true
			}
		} else {
			n = 0
		}
		i += size
	}
	return false
}

func appendDecomposition(dst []rune, r rune, compat bool) []rune {
	if d, ok := onigNorm[r]; ok {
		if compat {
			return append(dst, d.nfkd...)
		}
		return append(dst, d.nfd...)
	}
	f := norm.NFD
	if compat {
		f = norm.NFKD
	}
	if r >= 0xAC00 && r <= 0xD7A3 { // Hangul syllables decompose by algorithm, not by table
		for _, x := range f.String(string(r)) {
			dst = append(dst, x)
		}
		return dst
	}
	var b [utf8.UTFMax]byte
	dec := f.Properties(b[:utf8.EncodeRune(b[:], r)]).Decomposition() // nil: r decomposes to itself
	if dec == nil {
		return append(dst, r)
	}
	for _, x := range string(dec) {
		dst = append(dst, x) // x/text stores full decompositions
	}
	return dst
}

// rank sorts like the canonical combining class (0 for a starter).
func rank(r rune) uint16 {
	if d, ok := onigNorm[r]; ok {
		return d.rank
	}
	var b [utf8.UTFMax]byte
	return 2 * uint16(norm.NFC.Properties(b[:utf8.EncodeRune(b[:], r)]).CCC())
}

// compose returns the primary composite of a starter and a following
// character, if there is one in the oracle's tables.
func compose(a, b rune) (rune, bool) {
	if _, ok := onigNorm[b]; ok && rank(b) == 0 && len(onigNorm[b].nfd) == 1 {
		return 0, false // a starter there
	}
	var buf [2 * utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], a)
	n += utf8.EncodeRune(buf[n:], b)
	c := norm.NFC.Bytes(buf[:n])
	r, size := utf8.DecodeRune(c)
	if size != len(c) {
		return 0, false
	}
	if d, ok := onigNorm[r]; ok && !d.composes {
		return 0, false
	}
	return r, true
}
