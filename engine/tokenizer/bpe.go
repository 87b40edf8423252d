package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// bpeModel is the Hugging Face BPE model: initial symbols are characters
// (or bytes of the byte-level alphabet), merged by rank with exactly the
// priority-queue order Hugging Face uses, so ids agree even where merge
// lists are ambiguous (several merges yielding the same token).
type bpeModel struct {
	vocab        map[string]int32
	merges       map[uint64]uint64 // pairKey(a, b) → rank<<32 | new id
	unkID        int32             // -1: no unk token
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix

	// byteLevel: pieces arrive as raw bytes and start as the ids of their
	// byte-level alphabet spelling (the ByteLevel pre-tokenizer's mapping).
	byteLevel bool
	byteIDs   [256]int32       // id of each byte's alphabet rune, -1 if absent
	rawVocab  map[string]int32 // raw bytes → id, for ignore_merges
	fallback  [256]int32       // id of "<0xXX>", -1 if absent
	cache     *wordCache

	// metaSplit: no merge and no token joins a character other than ▁
	// with a following ▁, so a piece can be cut before every such ▁ and
	// the parts encoded (and cached) separately with identical results.
	// This makes SentencePiece-style BPE (Llama-2: no pre-tokenizer, the
	// whole text is one piece) as fast as word-level encoding.
	metaSplit bool
}

const metaspace = "▁"

// crossesMeta reports whether s has a ▁ right after another character.
func crossesMeta(s string) bool {
	for i := 1; i < len(s); i++ {
		j := strings.Index(s[i:], metaspace)
		if j < 0 {
			return false
		}
		i += j
		if !strings.HasSuffix(s[:i], metaspace) {
			return true
		}
		i += len(metaspace) - 1
	}
	return false
}

// initMetaSplit decides metaSplit (see there) from the vocabulary.
func (m *bpeModel) initMetaSplit() {
	if _, ok := m.vocab[metaspace]; !ok || m.prefix != "" || m.suffix != "" || m.byteLevel {
		return
	}
	for tok := range m.vocab {
		if crossesMeta(tok) {
			return
		}
	}
	m.metaSplit = true
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func newBPE(vocab map[string]int32, merges [][2]string) (*bpeModel, error) {
	m := &bpeModel{vocab: vocab, merges: make(map[uint64]uint64, len(merges)), unkID: -1, cache: newWordCache()}
	for i, mg := range merges {
		a, okA := vocab[mg[0]]
		b, okB := vocab[mg[1]]
		if !okA || !okB {
			return nil, fmt.Errorf("model.merges[%d] %q %q: token not in vocab", i, mg[0], mg[1])
		}
		id, ok := vocab[mg[0]+mg[1]]
		if !ok {
			return nil, fmt.Errorf("model.merges[%d] %q %q: merged token %q not in vocab", i, mg[0], mg[1], mg[0]+mg[1])
		}
		m.merges[pairKey(a, b)] = uint64(i)<<32 | uint64(uint32(id))
	}
	for b := 0; b < 256; b++ {
		m.fallback[b] = -1
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallback[b] = id
		}
	}
	return m, nil
}

// setByteLevel switches the model to raw-byte input.
func (m *bpeModel) setByteLevel() {
	m.byteLevel = true
	m.metaSplit = false
	for b := 0; b < 256; b++ {
		m.byteIDs[b] = -1
		if id, ok := m.vocab[string(byteToRune[b])]; ok {
			m.byteIDs[b] = id
		}
	}
	if m.ignoreMerges {
		m.rawVocab = make(map[string]int32, len(m.vocab))
		for tok, id := range m.vocab {
			if raw, ok := byteLevelDecode(tok); ok {
				m.rawVocab[string(raw)] = id
			}
		}
	}
}

// maxCachedWord bounds the pieces kept in the word cache: long pieces are
// rare and would only evict useful entries.
const maxCachedWord = 64

func (m *bpeModel) tokenize(dst []int32, piece string, sc *scratch) []int32 {
	if piece == "" {
		return dst
	}
	if m.metaSplit && len(piece) > len(metaspace) {
		start := 0
		for i := len(metaspace); i < len(piece); {
			j := strings.Index(piece[i:], metaspace)
			if j < 0 {
				break
			}
			i += j
			if !strings.HasSuffix(piece[:i], metaspace) {
				dst = m.tokenizeWord(dst, piece[start:i], sc)
				start = i
			}
			i += len(metaspace)
		}
		return m.tokenizeWord(dst, piece[start:], sc)
	}
	return m.tokenizeWord(dst, piece, sc)
}

// tokenizeWord encodes one piece, through the word cache.
func (m *bpeModel) tokenizeWord(dst []int32, piece string, sc *scratch) []int32 {
	var h uint32
	if len(piece) <= maxCachedWord {
		h = pieceHash(piece)
		if ids, ok := m.cache.lookup(sc, piece, h); ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	dst = m.tokenizeNoCache(dst, piece, sc)
	if len(piece) <= maxCachedWord {
		m.cache.store(sc, piece, h, dst[start:])
	}
	return dst
}

func (m *bpeModel) tokenizeNoCache(dst []int32, piece string, sc *scratch) []int32 {
	if m.ignoreMerges {
		var id int32
		var ok bool
		if m.byteLevel {
			id, ok = m.rawVocab[piece]
		} else {
			id, ok = m.vocab[piece]
		}
		if ok {
			return append(dst, id)
		}
	}
	syms := sc.syms[:0]
	if m.byteLevel && m.prefix == "" && m.suffix == "" {
		ok := true
		for i := 0; i < len(piece); i++ {
			id := m.byteIDs[piece[i]]
			if id < 0 {
				ok = false
				break
			}
			syms = append(syms, symbol{id: id})
		}
		if !ok {
			syms = m.initialSymbols(syms[:0], byteLevelString(piece))
		}
	} else if m.byteLevel {
		syms = m.initialSymbols(syms, byteLevelString(piece))
	} else {
		syms = m.initialSymbols(syms, piece)
	}
	syms = m.mergeAll(syms, sc)
	sc.syms = syms
	for i := range syms {
		if syms[i].alive() {
			dst = append(dst, syms[i].id)
		}
	}
	return dst
}

// initialSymbols splits w into characters and looks each up, with the
// continuing-subword prefix, end-of-word suffix, byte fallback and (fused)
// unknown token of Hugging Face's BPE::merge_word.
func (m *bpeModel) initialSymbols(syms []symbol, w string) []symbol {
	unk, unkPending := int32(-1), false
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+size]
		if i > 0 && m.prefix != "" {
			s = m.prefix + s
		}
		if i+size == len(w) && m.suffix != "" {
			s += m.suffix
		}
		i += size
		if id, ok := m.vocab[s]; ok {
			if unkPending {
				syms = append(syms, symbol{id: unk})
				unkPending = false
			}
			syms = append(syms, symbol{id: id})
			continue
		}
		if m.byteFallback {
			all := true
			for j := 0; j < len(s); j++ {
				if m.fallback[s[j]] < 0 {
					all = false
					break
				}
			}
			if all {
				for j := 0; j < len(s); j++ {
					syms = append(syms, symbol{id: m.fallback[s[j]]})
				}
				continue
			}
		}
		if m.unkID >= 0 {
			if unkPending && !m.fuseUnk {
				syms = append(syms, symbol{id: unk})
			}
			unk, unkPending = m.unkID, true
		}
	}
	if unkPending {
		syms = append(syms, symbol{id: unk})
	}
	return syms
}

// symbol is one node of the doubly linked list of a word being merged.
type symbol struct {
	id         int32
	prev, next int32 // -1 at the ends; next = -2 marks a symbol merged away
}

func (s *symbol) alive() bool { return s.next != -2 }

// mergeEntry is a queued merge: lowest rank first, then leftmost.
type mergeEntry struct {
	rank, pos, newID int32
}

func (a mergeEntry) less(b mergeEntry) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// mergeAll applies merges exactly like Hugging Face's Word::merge_all: a
// binary heap of (rank, position), stale entries dropped when the pair at
// the position no longer merges to the entry's token. O(n log n).
func (m *bpeModel) mergeAll(syms []symbol, sc *scratch) []symbol {
	n := len(syms)
	if n < 2 {
		for i := range syms {
			syms[i].prev, syms[i].next = int32(i-1), -1
		}
		return syms
	}
	for i := range syms {
		syms[i].prev = int32(i - 1)
		syms[i].next = int32(i + 1)
	}
	syms[n-1].next = -1
	h := sc.heap[:0]
	for i := 0; i+1 < n; i++ {
		if v, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = heapPush(h, mergeEntry{int32(v >> 32), int32(i), int32(uint32(v))})
		}
	}
	for len(h) > 0 {
		var top mergeEntry
		top, h = heapPop(h)
		cur := &syms[top.pos]
		if !cur.alive() || cur.next == -1 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		v, ok := m.merges[pairKey(cur.id, right.id)]
		if !ok || int32(uint32(v)) != top.newID {
			continue
		}
		cur.id = top.newID
		cur.next = right.next
		syms[nextPos].next = -2
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if v, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h = heapPush(h, mergeEntry{int32(v >> 32), cur.prev, int32(uint32(v))})
			}
		}
		if cur.next >= 0 {
			if v, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h = heapPush(h, mergeEntry{int32(v >> 32), top.pos, int32(uint32(v))})
			}
		}
	}
	sc.heap = h
	return syms
}

func heapPush(h []mergeEntry, e mergeEntry) []mergeEntry {
	h = append(h, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []mergeEntry) (mergeEntry, []mergeEntry) {
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h[r].less(h[l]) {
			c = r
		}
		if !h[c].less(h[i]) {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	return top, h
}
