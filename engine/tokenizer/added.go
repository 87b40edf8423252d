package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedMatcher finds added tokens in text, leftmost-longest like the
// Aho-Corasick automaton Hugging Face uses, with a byte trie.
type addedMatcher struct {
	nodes []trieNode
	first [256]bool // bytes that can start a token
	toks  []addedToken
}

type trieNode struct {
	next map[byte]int32
	tok  int32 // index into toks, -1 if none ends here
}

func newAddedMatcher(toks []addedToken) *addedMatcher {
	if len(toks) == 0 {
		return nil
	}
	a := &addedMatcher{nodes: []trieNode{{tok: -1}}, toks: toks}
	for ti, t := range toks {
		if t.Content == "" {
			continue
		}
		a.first[t.Content[0]] = true
		n := int32(0)
		for i := 0; i < len(t.Content); i++ {
			c := t.Content[i]
			nx, ok := a.nodes[n].next[c]
			if !ok {
				if a.nodes[n].next == nil {
					a.nodes[n].next = map[byte]int32{}
				}
				nx = int32(len(a.nodes))
				a.nodes = append(a.nodes, trieNode{tok: -1})
				a.nodes[n].next[c] = nx
			}
			n = nx
		}
		if a.nodes[n].tok < 0 {
			a.nodes[n].tok = int32(ti)
		}
	}
	return a
}

// longestAt returns the longest token matching at s[i:], or -1.
func (a *addedMatcher) longestAt(s string, i int) (tok int32, end int) {
	tok, n := -1, int32(0)
	for j := i; j < len(s); j++ {
		nx, ok := a.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = nx
		if t := a.nodes[n].tok; t >= 0 {
			tok, end = t, j+1
		}
	}
	return tok, end
}

// span is a piece of a segment: either an added token's id or text.
type span struct {
	start, end int
	id         int32 // -1 for text
}

// split cuts s into text and added-token spans, applying single_word,
// lstrip and rstrip as Hugging Face's AddedVocabulary::find_matches does.
func (a *addedMatcher) split(s string, out []span) []span {
	textStart := 0
	for i := 0; i < len(s); i++ {
		if !a.first[s[i]] {
			continue
		}
		ti, end := a.longestAt(s, i)
		if ti < 0 {
			continue
		}
		t := &a.toks[ti]
		start := i
		if t.SingleWord && (endsWithWordChar(s[:start]) || startsWithWordChar(s[end:])) {
			continue
		}
		if t.LStrip {
			j := start
			for j > textStart {
				r, size := utf8.DecodeLastRuneInString(s[:j])
				if !unicode.IsSpace(r) {
					break
				}
				j -= size
			}
			start = j
		}
		if t.RStrip {
			for end < len(s) {
				r, size := utf8.DecodeRuneInString(s[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += size
			}
		}
		if textStart < start {
			out = append(out, span{textStart, start, -1})
		}
		out = append(out, span{start, end, t.ID})
		textStart = end
		i = end - 1
	}
	if textStart < len(s) {
		out = append(out, span{textStart, len(s), -1})
	}
	return out
}

func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func endsWithWordChar(s string) bool {
	r, size := utf8.DecodeLastRuneInString(s)
	return size > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return size > 0 && isWordChar(r)
}
