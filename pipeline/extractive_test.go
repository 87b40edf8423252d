package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

// listTok is a tokenizer over a list of token texts (id = index, id 0 the
// empty special), greedy longest match.
type listTok []string

func (v listTok) Encode(s string) []int32 {
	var out []int32
	for len(s) > 0 {
		best, id := 0, int32(0)
		for i, w := range v {
			if w != "" && len(w) > best && strings.HasPrefix(s, w) {
				best, id = len(w), int32(i)
			}
		}
		if best == 0 {
			best = 1
		}
		out = append(out, id)
		s = s[best:]
	}
	return out
}

func (v listTok) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(v[id])
	}
	return b.String()
}

func (v listTok) VocabSize() int { return len(v) }

// TestTextExtractive: extractive answers by text. The first token may be a
// spaced token whose text after the space starts a substring of the
// document (" 100" at "#1004785"); later tokens continue the text at any
// occurrence; an abstain string is a path of its own; white space alone
// never starts an answer; nothing continues past the document's end.
func TestTextExtractive(t *testing.T) {
	tok := listTok{"", "<eos>", "#", "100", "4785", " 100", " 1", "00", "47", "85", " none", "x", " ", "\n", "no", "ne"}
	v := newTextVocab(tok)
	doc := "#1004785x"
	stop := []int32{1}
	for _, c := range []struct {
		answer string
		want   string
	}{
		// start: any token whose text (after white space) starts a
		// substring: "#" 2, "100" 3, "4785" 4, " 100" 5, " 1" 6, "00" 7,
		// "47" 8, "85" 9, " none" 10 (abstain), "x" 11, "no" 14; then <eos>
		{"", "[2 3 4 5 6 7 8 9 10 11 14 1]"},
		{" 1", "[7 1]"},        // "1" ends at 2: "00" follows
		{" 100", "[4 8 1]"},    // then "4785" or "47"
		{" 1004785", "[11 1]"}, // then "x"
		{" 1004785x", "[]"},    // the document's end
		{" no", "[15 1]"},      // "none" continues as the abstain string
		{"47", "[9 1]"},
		{"\n", "[]"}, // white space only
	} {
		if got := fmt.Sprint(v.allow(doc, []string{"none"}, c.answer, stop)); got != c.want {
			t.Errorf("after %q: allowed %s, want %s", c.answer, got, c.want)
		}
	}
	if v := newTextVocab(byteTok{}); v != nil {
		t.Errorf("a tokenizer without VocabSize got a text vocabulary")
	}
}
