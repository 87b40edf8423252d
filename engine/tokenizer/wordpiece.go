package tokenizer

import "unicode/utf8"

// wordPieceModel is the WordPiece model (BERT): greedy longest-match-first
// with a continuing-subword prefix; a word with any unmatched part, or
// longer than maxChars characters, becomes the unknown token.
type wordPieceModel struct {
	vocab    map[string]int32
	unkID    int32
	prefix   string
	maxChars int
	maxLen   int // longest vocabulary entry in bytes, bounds the search
	cache    *wordCache
}

func (m *wordPieceModel) tokenize(dst []int32, piece string, sc *scratch) []int32 {
	if piece == "" {
		return dst
	}
	var h uint32
	if len(piece) <= maxCachedWord {
		h = pieceHash(piece)
		if ids, ok := m.cache.lookup(sc, piece, h); ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	dst = m.tokenizeNoCache(dst, piece)
	if len(piece) <= maxCachedWord {
		m.cache.store(sc, piece, h, dst[start:])
	}
	return dst
}

func (m *wordPieceModel) tokenizeNoCache(dst []int32, w string) []int32 {
	if utf8.RuneCountInString(w) > m.maxChars {
		return append(dst, m.unkID)
	}
	first := len(dst)
	buf := make([]byte, 0, len(m.prefix)+len(w))
	for start := 0; start < len(w); {
		end := len(w)
		if end-start > m.maxLen {
			end = start + m.maxLen
			for end > start && !utf8.RuneStart(w[end]) {
				end--
			}
		}
		found := int32(-1)
		for end > start {
			sub := w[start:end]
			var id int32
			var ok bool
			if start > 0 {
				buf = append(append(buf[:0], m.prefix...), sub...)
				id, ok = m.vocab[string(buf)]
			} else {
				id, ok = m.vocab[sub]
			}
			if ok {
				found = id
				break
			}
			_, size := utf8.DecodeLastRuneInString(sub)
			end -= size
		}
		if found < 0 {
			return append(dst[:first], m.unkID)
		}
		dst = append(dst, found)
		start = end
	}
	return dst
}
