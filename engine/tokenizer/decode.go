package tokenizer

import (
	"strconv"
	"strings"
)

// decoder is one tokenizer.json decoder: it rewrites the token strings; the
// result is their concatenation.
type decoder interface {
	decode(toks []string) []string
}

type seqDecoder []decoder

func (q seqDecoder) decode(toks []string) []string {
	for _, d := range q {
		toks = d.decode(toks)
	}
	return toks
}

// byteLevelDecoder maps the byte-level alphabet back to bytes. Unlike
// Hugging Face it keeps invalid UTF-8 as raw bytes instead of U+FFFD, so
// Decode(Encode(x)) == x for every Go string x.
type byteLevelDecoder struct{}

func (byteLevelDecoder) decode(toks []string) []string {
	var b []byte
	for _, t := range toks {
		if raw, ok := byteLevelDecode(t); ok {
			b = append(b, raw...)
		} else {
			b = append(b, t...)
		}
	}
	return []string{string(b)}
}

type replaceDecoder struct{ old, new string }

func (d replaceDecoder) decode(toks []string) []string {
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(t, d.old, d.new)
	}
	return toks
}

// byteFallbackDecoder turns runs of "<0xXX>" tokens into their bytes (kept
// raw even when not valid UTF-8, see byteLevelDecoder).
type byteFallbackDecoder struct{}

func (byteFallbackDecoder) decode(toks []string) []string {
	out := toks[:0:0]
	var pending []byte
	for _, t := range toks {
		if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
			if v, err := strconv.ParseUint(t[3:5], 16, 8); err == nil {
				pending = append(pending, byte(v))
				continue
			}
		}
		if len(pending) > 0 {
			out = append(out, string(pending))
			pending = pending[:0]
		}
		out = append(out, t)
	}
	if len(pending) > 0 {
		out = append(out, string(pending))
	}
	return out
}

type fuseDecoder struct{}

func (fuseDecoder) decode(toks []string) []string { return []string{strings.Join(toks, "")} }

// stripDecoder removes up to start leading and stop trailing copies of a
// character from each token.
type stripDecoder struct {
	content     string
	start, stop int
}

func (d stripDecoder) decode(toks []string) []string {
	for i, t := range toks {
		for n := 0; n < d.start && strings.HasPrefix(t, d.content); n++ {
			t = t[len(d.content):]
		}
		for n := 0; n < d.stop && strings.HasSuffix(t, d.content); n++ {
			t = t[:len(t)-len(d.content)]
		}
		toks[i] = t
	}
	return toks
}

type wordPieceDecoder struct {
	prefix  string
	cleanup bool
}

func (d wordPieceDecoder) decode(toks []string) []string {
	for i, t := range toks {
		if i > 0 {
			if strings.HasPrefix(t, d.prefix) {
				t = t[len(d.prefix):]
			} else {
				t = " " + t
			}
		}
		if d.cleanup {
			t = cleanupDecoded(t)
		}
		toks[i] = t
	}
	return toks
}

var cleanupReplacer = []string{" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'", " n't", "n't", " 'm", "'m", " do not", " don't", " 's", "'s", " 've", "'ve", " 're", "'re"}

// cleanupDecoded undoes the spaces WordPiece decoding puts before
// punctuation and English contractions (Hugging Face's cleanup).
func cleanupDecoded(s string) string {
	for i := 0; i < len(cleanupReplacer); i += 2 {
		s = strings.ReplaceAll(s, cleanupReplacer[i], cleanupReplacer[i+1])
	}
	return s
}

type metaspaceDecoder struct {
	replacement string
	prepend     bool
}

func (d metaspaceDecoder) decode(toks []string) []string {
	for i, t := range toks {
		t = strings.ReplaceAll(t, d.replacement, " ")
		if i == 0 && d.prepend {
			t = strings.TrimPrefix(t, " ")
		}
		toks[i] = t
	}
	return toks
}

// bpeDecoder is the BPEDecoder: the end-of-word suffix becomes a space.
type bpeDecoder struct{ suffix string }

func (d bpeDecoder) decode(toks []string) []string {
	for i, t := range toks {
		rep := " "
		if i == len(toks)-1 {
			rep = ""
		}
		toks[i] = strings.ReplaceAll(t, d.suffix, rep)
	}
	return toks
}
