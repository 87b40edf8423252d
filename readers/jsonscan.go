package readers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// This file holds a JSON scanner that extracts a few top-level fields of an
// object without decoding the rest: encoding/json decodes whole objects at
// about 50 MB/s, while locating string ends with bytes.IndexByte (SIMD)
// runs at memory speed. The scanner still validates the whole line, so a
// malformed line is rejected exactly as encoding/json would (except that it
// is not limited in nesting beyond maxDepth).

// Kinds of an extracted field.
const (
	kindMissing = iota
	kindString  // span is the string body between the quotes
	kindNull
	kindOther // number, boolean, object or array: span is its raw JSON text
)

// span locates a field's value in the line.
type span struct {
	start, end int
	kind       uint8
	escaped    bool // string body contains backslash escapes
}

// maxDepth bounds nesting so a hostile line cannot exhaust the stack.
const maxDepth = 1000

// syntaxError is a malformed-JSON error at a byte offset of the line.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte %d: %s", e.off, e.msg)
}

func synErr(off int, format string, args ...any) error {
	return &syntaxError{off, fmt.Sprintf(format, args...)}
}

// scanObject validates line as one JSON object (surrounded by optional
// whitespace) and records in spans[slot] the value of each top-level key
// found in slots. Keys not in slots are skipped. A repeated key keeps the
// last value, as encoding/json does.
func scanObject(line []byte, slots map[string]int, spans []span, keyBuf *[]byte) error {
	for k := range spans {
		spans[k] = span{}
	}
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		if i >= len(line) {
			return synErr(i, "empty line")
		}
		return synErr(i, "want a JSON object, found %q", line[i])
	}
	i = skipWS(line, i+1)
	if i < len(line) && line[i] == '}' {
		i++
	} else {
		for {
			if i >= len(line) || line[i] != '"' {
				return synErr(i, "want a field name")
			}
			end, esc, err := scanString(line, i+1)
			if err != nil {
				return err
			}
			key := line[i+1 : end]
			if esc {
				*keyBuf = unescape((*keyBuf)[:0], key)
				key = *keyBuf
			}
			i = skipWS(line, end+1)
			if i >= len(line) || line[i] != ':' {
				return synErr(i, "want ':' after field name")
			}
			i = skipWS(line, i+1)
			if i >= len(line) {
				return synErr(i, "want a value")
			}
			slot, want := slots[string(key)]
			if want {
				switch line[i] {
				case '"':
					end, esc, err := scanString(line, i+1)
					if err != nil {
						return err
					}
					spans[slot] = span{i + 1, end, kindString, esc}
					i = end + 1
				case 'n':
					if !bytes.HasPrefix(line[i:], litNull) {
						return synErr(i, "invalid literal")
					}
					spans[slot] = span{i, i + 4, kindNull, false}
					i += 4
				default:
					end, err := skipValue(line, i, 0)
					if err != nil {
						return err
					}
					spans[slot] = span{i, end, kindOther, false}
					i = end
				}
			} else {
				end, err := skipValue(line, i, 0)
				if err != nil {
					return err
				}
				i = end
			}
			i = skipWS(line, i)
			if i < len(line) && line[i] == ',' {
				i = skipWS(line, i+1)
				continue
			}
			if i < len(line) && line[i] == '}' {
				i++
				break
			}
			return synErr(i, "want ',' or '}' after a field")
		}
	}
	if i = skipWS(line, i); i != len(line) {
		return synErr(i, "trailing data after the object")
	}
	return nil
}

var (
	litNull  = []byte("null")
	litTrue  = []byte("true")
	litFalse = []byte("false")
)

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString finds the closing quote of a string whose body starts at i. It
// validates escapes and rejects raw control characters, as JSON requires.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return 0, false, synErr(len(b), "unterminated string")
		}
		seg := b[i : i+q]
		bs := bytes.IndexByte(seg, '\\')
		if bs < 0 {
			if c := ctlIndex(seg); c >= 0 {
				return 0, false, synErr(i+c, "control character in string")
			}
			return i + q, escaped, nil
		}
		if c := ctlIndex(seg[:bs]); c >= 0 {
			return 0, false, synErr(i+c, "control character in string")
		}
		escaped = true
		j := i + bs + 1
		if j >= len(b) {
			return 0, false, synErr(j, "unterminated string")
		}
		switch b[j] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i = j + 1
		case 'u':
			if j+5 > len(b) {
				return 0, false, synErr(j, "short \\u escape")
			}
			for _, h := range b[j+1 : j+5] {
				if hexVal(h) < 0 {
					return 0, false, synErr(j, "invalid \\u escape")
				}
			}
			i = j + 5
		default:
			return 0, false, synErr(j, "invalid escape \\%c", b[j])
		}
	}
}

// ctlIndex returns the index of the first byte < 0x20 in s, or -1. It tests
// eight bytes at a time: a byte x is < 0x20 iff (x - 0x20) borrows into its
// high bit while x's own high bit is clear.
func ctlIndex(s []byte) int {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		if (x-lo)&^x&hi != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 {
			return i
		}
	}
	return -1
}

func hexVal(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// skipValue validates the JSON value starting at i and returns its end.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, synErr(i, "want a value")
	}
	if depth > maxDepth {
		return 0, synErr(i, "nesting deeper than %d", maxDepth)
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i+1)
		return end + 1, err
	case c == '{':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return 0, synErr(i, "want a field name")
			}
			end, _, err := scanString(b, i+1)
			if err != nil {
				return 0, err
			}
			i = skipWS(b, end+1)
			if i >= len(b) || b[i] != ':' {
				return 0, synErr(i, "want ':' after field name")
			}
			if i, err = skipValue(b, skipWS(b, i+1), depth+1); err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				return i + 1, nil
			}
			return 0, synErr(i, "want ',' or '}' in object")
		}
	case c == '[':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = skipValue(b, i, depth+1); err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == ']' {
				return i + 1, nil
			}
			return 0, synErr(i, "want ',' or ']' in array")
		}
	case c == 't':
		return literal(b, i, litTrue)
	case c == 'f':
		return literal(b, i, litFalse)
	case c == 'n':
		return literal(b, i, litNull)
	case c == '-' || ('0' <= c && c <= '9'):
		return skipNumber(b, i)
	default:
		return 0, synErr(i, "unexpected %q", c)
	}
}

func literal(b []byte, i int, lit []byte) (int, error) {
	if !bytes.HasPrefix(b[i:], lit) {
		return 0, synErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return 0, synErr(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, synErr(start, "invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, synErr(start, "invalid number")
		}
	}
	return i, nil
}

// unescape appends the decoded body of a validated JSON string to dst. Like
// encoding/json, an unpaired UTF-16 surrogate escape decodes to U+FFFD.
// Raw bytes (including invalid UTF-8) are copied unchanged; the caller
// applies its UTF-8 policy.
func unescape(dst, s []byte) []byte {
	for len(s) > 0 {
		bs := bytes.IndexByte(s, '\\')
		if bs < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:bs]...)
		s = s[bs+1:]
		c := s[0]
		s = s[1:]
		switch c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s)
			s = s[4:]
			if 0xD800 <= r && r < 0xDC00 && len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
				if r2 := hex4(s[2:]); 0xDC00 <= r2 && r2 < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
					s = s[6:]
				}
			}
			if 0xD800 <= r && r < 0xE000 {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
	}
	return dst
}

func hex4(s []byte) rune {
	return hexVal(s[0])<<12 | hexVal(s[1])<<8 | hexVal(s[2])<<4 | hexVal(s[3])
}
