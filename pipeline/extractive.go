package pipeline

import (
	"slices"
	"strings"
)

// Extractive decoding by text (extract --extractive with a tokenizer that
// lists its vocabulary). The answer must be a substring of the document's
// text once the white space before it is trimmed (as the answer column
// is), or one of the --abstain strings. Constraining by text rather than by
// the document's token ids matters for a model fine-tuned on "Answer: X":
// it writes X with the tokenizer's spaced tokens (" 1004785"), which a
// byte-level BPE splits differently from the same digits after "#" in the
// document, so a token-level constraint would forbid the right answer.

// vocabTrie is a byte trie over token texts; a node lists the tokens whose
// text ends there.
type vocabTrie struct {
	next map[byte]*vocabTrie
	ids  []int32
}

func (n *vocabTrie) add(s string, id int32) {
	for i := 0; i < len(s); i++ {
		if n.next == nil {
			n.next = map[byte]*vocabTrie{}
		}
		c := n.next[s[i]]
		if c == nil {
			c = &vocabTrie{}
			n.next[s[i]] = c
		}
		n = c
	}
	n.ids = append(n.ids, id)
}

// walk reports every token whose text is a non-empty prefix of s.
func (n *vocabTrie) walk(s string, emit func([]int32)) {
	for i := 0; i < len(s) && n != nil; i++ {
		n = n.next[s[i]]
		if n != nil && len(n.ids) > 0 {
			emit(n.ids)
		}
	}
}

// textVocab holds the two tries extractive decoding walks: full token
// texts (to continue an answer) and token texts without their leading
// white space (to start one: " 100" may start an answer at "100").
type textVocab struct {
	full, core vocabTrie
}

// vocabLister is a tokenizer that can say how many ids it has.
type vocabLister interface{ VocabSize() int }

// idTexts returns what every id decodes to on its own, indexed by id; nil
// when the tokenizer cannot list its vocabulary.
func idTexts(tok Tokenizer) []string {
	vl, ok := tok.(vocabLister)
	if !ok {
		return nil
	}
	texts := make([]string, vl.VocabSize())
	for id := range texts {
		texts[id] = tok.Decode([]int32{int32(id)})
	}
	return texts
}

// newTextVocab builds the tries from every id's text; nil when the
// tokenizer cannot list its vocabulary (extractive decoding then keeps to
// the document's token ids).
func newTextVocab(tok Tokenizer) *textVocab {
	texts := idTexts(tok)
	if texts == nil {
		return nil
	}
	v := &textVocab{}
	for id, s := range texts {
		if s == "" {
			continue
		}
		v.full.add(s, int32(id))
		if c := strings.TrimLeft(s, answerSpace); c != "" {
			v.core.add(c, int32(id))
		}
	}
	return v
}

// answerSpace is the white space trimmed before an answer.
const answerSpace = " \t\r\n"

// allow lists the ids that keep the answer generated so far (answer, the
// decoded text of the generated ids) a substring of doc or a prefix of an
// abstain string, in ascending order, then the stop ids: at the start
// (stopping at once abstains) and once the answer is non-empty (a span
// may end anywhere). Nil: nothing can follow, stop.
func (v *textVocab) allow(doc string, abstain []string, answer string, stop []int32) []int32 {
	seen := map[int32]bool{}
	var out []int32
	emit := func(ids []int32) {
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	a := strings.TrimLeft(answer, answerSpace)
	if a == "" {
		if answer != "" {
			return nil // white space only so far: never produced, see below
		}
		// the first token: its text after white space starts a substring
		// of the document, or an abstain string
		for q := 0; q < len(doc); q++ {
			v.core.walk(doc[q:], emit)
		}
		for _, s := range abstain {
			v.core.walk(strings.TrimSpace(s), emit)
		}
	} else {
		for from := 0; ; {
			i := strings.Index(doc[from:], a)
			if i < 0 {
				break
			}
			e := from + i + len(a)
			v.full.walk(doc[e:], emit)
			from += i + 1
		}
		for _, s := range abstain {
			if s = strings.TrimSpace(s); strings.HasPrefix(s, a) {
				v.full.walk(s[len(a):], emit)
			}
		}
	}
	slices.Sort(out)
	if len(out) == 0 && a != "" {
		return nil
	}
	for _, s := range stop {
		if !seen[s] {
			out = append(out, s)
		}
	}
	return out
}
