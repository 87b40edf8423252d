package tokenizer

import "unicode/utf8"

// GPT-2's byte-level alphabet: every byte maps to one printable rune so that
// BPE vocabularies can be stored as text. Printable Latin-1 bytes map to
// themselves, the rest to U+0100 and up, in byte order.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelString maps raw bytes to their byte-level alphabet spelling.
func byteLevelString(raw string) string {
	buf := make([]byte, 0, 2*len(raw))
	for i := 0; i < len(raw); i++ {
		buf = utf8.AppendRune(buf, byteToRune[raw[i]])
	}
	return string(buf)
}

// byteLevelDecode maps a byte-level spelled token back to raw bytes. ok is
// false when a rune is outside the alphabet (e.g. an added token), in which
// case the caller uses the token's own bytes, as Hugging Face does.
func byteLevelDecode(tok string) (raw []byte, ok bool) {
	raw = make([]byte, 0, len(tok))
	for _, r := range tok {
		b, found := runeToByte[r]
		if !found {
			return nil, false
		}
		raw = append(raw, b)
	}
	return raw, true
}
