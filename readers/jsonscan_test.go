package readers

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func scanFields(line string, fields ...string) ([]span, error) {
	slots := map[string]int{}
	for i, f := range fields {
		slots[f] = i
	}
	spans := make([]span, len(fields))
	var key []byte
	err := scanObject([]byte(line), slots, spans, &key)
	return spans, err
}

func TestScanObject(t *testing.T) {
	tests := []struct {
		line string
		want string // text value, "<missing>", "<null>", "<other:RAW>"
		err  string // substring of the error, "" for none
	}{
		{`{"text":"hi"}`, "hi", ""},
		{`  { "a" : [1, {"text": "nested"}], "text" : "top" }  `, "top", ""},
		{`{"te\u0078t":"escaped key"}`, "escaped key", ""},
		{`{"text":"a","text":"b"}`, "b", ""},
		{`{"text":null}`, "<null>", ""},
		{`{"text":12.5e-3}`, "<other:12.5e-3>", ""},
		{`{"text":{"x":[true,false,null]}}`, `<other:{"x":[true,false,null]}>`, ""},
		{`{}`, "<missing>", ""},
		{`{"other":"x"}`, "<missing>", ""},
		{`{"text":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`, "\"\\/\b\f\n\r\té😀", ""},
		{`{"text":"lone \ud800 surrogate"}`, "lone \uFFFD surrogate", ""},
		{`{"text":"x",}`, "", "want a field name"},
		{`{"text" "x"}`, "", "want ':'"},
		{`{"text":"x"} extra`, "", "trailing data"},
		{`{"text":"x"}{}`, "", "trailing data"},
		{`[1,2]`, "", "want a JSON object"},
		{``, "", "empty line"},
		{`{"text":"x"`, "", "want ',' or '}'"},
		{`{"text":"unterminated}`, "", "unterminated string"},
		{`{"text":"bad \x escape"}`, "", "invalid escape"},
		{`{"text":"short \u12"}`, "", "invalid \\u escape"},
		{"{\"text\":\"raw\x01control\"}", "", "control character"},
		{`{"a":01}`, "", "want ',' or '}'"},
		{`{"a":1.}`, "", "invalid number"},
		{`{"a":-}`, "", "invalid number"},
		{`{"a":1e}`, "", "invalid number"},
		{`{"a":tru}`, "", "invalid literal"},
		{`{"text":nul}`, "", "invalid literal"},
		{`{"a":[1,]}`, "", "unexpected"},
		{`{"a":{"b":1,}}`, "", "want a field name"},
		{`{"a":` + strings.Repeat("[", maxDepth+5) + strings.Repeat("]", maxDepth+5) + `}`, "", "nesting deeper"},
	}
	for _, tc := range tests {
		spans, err := scanFields(tc.line, "text")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if got := render(tc.line, spans[0]); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.line, got, tc.want)
		}
	}
}

func render(line string, sp span) string {
	switch sp.kind {
	case kindMissing:
		return "<missing>"
	case kindNull:
		return "<null>"
	case kindOther:
		return "<other:" + line[sp.start:sp.end] + ">"
	}
	b := []byte(line[sp.start:sp.end])
	if sp.escaped {
		b = unescape(nil, b)
	}
	return string(b)
}

func TestCtlIndex(t *testing.T) {
	for n := 0; n < 20; n++ {
		for pos := -1; pos < n; pos++ {
			b := bytes.Repeat([]byte{'a'}, n)
			if pos >= 0 {
				b[pos] = 0x1f
			}
			if got := ctlIndex(b); got != pos {
				t.Fatalf("n=%d pos=%d: got %d", n, pos, got)
			}
		}
	}
	// bytes >= 0x80 (UTF-8) must not count as control characters
	if got := ctlIndex([]byte("héllo wörld 日本語 😀 ok")); got != -1 {
		t.Fatalf("UTF-8 text: got %d", got)
	}
}

// FuzzScanObject checks the scanner against encoding/json: the same lines
// are valid, and the extracted text decodes to the same string.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{"text":"hi","id":3}`, `{"text":"\ud83d\ude00\u00e9\n"}`, `{"a":[1,2,{"b":null}],"text":"x"}`,
		`{"text":"x",}`, `{"text":1e5}`, `{"text":"lone \udc00"}`, ` {} `, `[]`, `{"text":"a\"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		spans := make([]span, 1)
		var key []byte
		err := scanObject(line, map[string]int{"text": 0}, spans, &key)
		trimmed := bytes.TrimLeft(line, " \t\r\n")
		want := json.Valid(line) && len(trimmed) > 0 && trimmed[0] == '{'
		if (err == nil) != want {
			if err != nil && strings.Contains(err.Error(), "nesting deeper") {
				return
			}
			t.Fatalf("%q: scanner err=%v, encoding/json valid=%v", line, err, want)
		}
		if err != nil || spans[0].kind != kindString {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		raw := line[spans[0].start:spans[0].end]
		got := raw
		if spans[0].escaped {
			got = unescape(nil, raw)
		}
		if !utf8.Valid(got) {
			return // encoding/json repairs invalid UTF-8; we leave it to the UTF-8 policy
		}
		if string(got) != obj["text"] {
			t.Fatalf("%q: got %q, encoding/json %q", line, got, obj["text"])
		}
	})
}
