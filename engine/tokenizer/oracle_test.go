package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// oracleLines runs testdata/oracle.js in mode on in and returns its output
// lines.
func oracleLines(t *testing.T, mode, tokPath, in string) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.jsonl")
	cmd := exec.Command(testenv.LookPath(t, "node"), filepath.Join("testdata", "oracle.js"), mode, tokPath, in, out)
	cmd.Env = append(os.Environ(), "NODE_PATH="+testenv.NodeModules(t))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oracle %s: %v\n%s", mode, err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestPreTokenizerParity compares the pieces of the hand-written scanners
// with the oracle's pre-tokenizer directly: BPE could hide a wrong split.
func TestPreTokenizerParity(t *testing.T) {
	docs := edgeDocs()
	in, err := writeJSONL(docs)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(in)
	for _, name := range []string{"gpt2", "llama3", "bert", "gpt4o", "deepseek_v3", "mistral_nemo", "qwen3"} { // Llama-2 has none
		t.Run(name, func(t *testing.T) {
			path := tokenizerFile(t, name)
			tok, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := oracleLines(t, "pretok", path, in)
			if len(lines) != len(docs) {
				t.Fatalf("oracle gave %d lines for %d docs", len(lines), len(docs))
			}
			byteLevel := name != "bert" // every other one ends in ByteLevel
			bad := 0
			for i, d := range docs {
				var want []string
				if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
					t.Fatal(err)
				}
				got := tok.pre.split(d.text, true, nil)
				if byteLevel {
					for j := range got {
						got[j] = byteLevelString(got[j])
					}
				}
				if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
					bad++
					if bad < 4 {
						t.Errorf("doc %d (%s): pieces differ\n ours   %q\n oracle %q", i, d.source, head(got), head(want))
					}
				}
			}
		})
	}
}

func head(s []string) []string {
	return s[:min(len(s), 30)]
}

// TestDecodeParity decodes ids of real text with the oracle's decoder.
func TestDecodeParity(t *testing.T) {
	docs := edgeDocs()[:len(edgeSamples)]
	for _, name := range []string{"gpt2", "llama3", "llama2", "bert"} {
		t.Run(name, func(t *testing.T) {
			path := tokenizerFile(t, name)
			tok, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.CreateTemp(t.TempDir(), "ids-*.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			var all [][]int32
			for _, d := range docs {
				ids := tok.Encode(d.text, false)
				all = append(all, ids)
				b, _ := json.Marshal(ids)
				f.Write(append(b, '\n'))
			}
			f.Close()
			lines := oracleLines(t, "decode", path, f.Name())
			for i, ids := range all {
				var want string
				if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
					t.Fatal(err)
				}
				got := tok.Decode(ids, false)
				if !utf8.ValidString(got) {
					continue // the oracle shows U+FFFD where we keep raw bytes
				}
				if got != want {
					t.Errorf("doc %d: decode\n ours   %q\n oracle %q", i, got, want)
				}
			}
		})
	}
}

// TestAddedTokensParity adds tokens with lstrip, rstrip, single_word and
// normalized to real tokenizers and compares ids with the oracle.
func TestAddedTokensParity(t *testing.T) {
	texts := []string{
		"a <lst> b <rst>  c  <lst><rst> d",
		"word words sword word. _word word_ (word)",
		"  <lst>\n<rst>\t end<lst>",
		"Déjà-Vu and DÉJÀ-VU and deja-vu, déjà-vu!",
		"abcabc ab cab",
	}
	var docs []doc
	for _, s := range texts {
		docs = append(docs, doc{"added", s})
	}
	in, err := writeJSONL(docs)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(in)
	for _, name := range []string{"gpt2", "llama2", "bert"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(tokenizerFile(t, name))
			if err != nil {
				t.Fatal(err)
			}
			var f map[string]any
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			added := f["added_tokens"].([]any)
			next := 0
			for _, a := range added {
				next = max(next, int(a.(map[string]any)["id"].(float64))+1)
			}
			model := f["model"].(map[string]any)
			if v, ok := model["vocab"].(map[string]any); ok {
				next = max(next, len(v))
			}
			for _, a := range []map[string]any{
				{"content": "<lst>", "lstrip": true, "special": true},
				{"content": "<rst>", "rstrip": true, "special": true},
				{"content": "word", "single_word": true},
				{"content": "Déjà-Vu", "normalized": true},
				{"content": "bca"},
			} {
				for _, k := range []string{"lstrip", "rstrip", "single_word", "normalized", "special"} {
					if _, ok := a[k]; !ok {
						a[k] = false
					}
				}
				a["id"] = next
				next++
				added = append(added, a)
			}
			f["added_tokens"] = added
			out, _ := json.Marshal(f)
			path := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			tok, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			want := runOracle(t, path, in, false)
			got := make([][]int32, len(docs))
			for i, d := range docs {
				got[i] = tok.Encode(d.text, false)
			}
			compareIDs(t, tok, docs, got, want)
		})
	}
}

// TestEncodeOrdinaryParity: EncodeOrdinary must equal the oracle on the
// same tokenizer with its special tokens removed from added_tokens.
func TestEncodeOrdinaryParity(t *testing.T) {
	texts := []string{
		"a<|endoftext|>b <|begin_of_text|>",
		"<s>Hello</s> <unk> [CLS] x [SEP]",
		"<|endoftext|><|endoftext|> end",
	}
	var docs []doc
	for _, s := range texts {
		docs = append(docs, doc{"ordinary", s})
	}
	in, err := writeJSONL(docs)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(in)
	for _, name := range []string{"gpt2", "llama3", "llama2", "bert"} {
		t.Run(name, func(t *testing.T) {
			path := tokenizerFile(t, name)
			tok, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var f map[string]any
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			kept := []any{}
			for _, a := range f["added_tokens"].([]any) {
				if !a.(map[string]any)["special"].(bool) {
					kept = append(kept, a)
				}
			}
			f["added_tokens"] = kept
			out, _ := json.Marshal(f)
			plain := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := os.WriteFile(plain, out, 0o644); err != nil {
				t.Fatal(err)
			}
			want := runOracle(t, plain, in, false)
			got := make([][]int32, len(docs))
			for i, d := range docs {
				got[i] = tok.EncodeOrdinary(d.text)
			}
			compareIDs(t, tok, docs, got, want)
			compareIDs(t, tok, docs, tok.EncodeBatchOrdinary(texts, 2), want)
		})
	}
}

// replaceInvalid turns every invalid UTF-8 byte into U+FFFD.
func replaceInvalid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// TestInvalidUTF8LikeReplacement: the oracle cannot take invalid UTF-8, so
// check our policy against it: an invalid byte pre-tokenizes exactly like
// U+FFFD (same pieces once each invalid byte is replaced).
func TestInvalidUTF8LikeReplacement(t *testing.T) {
	var docs, fixed []doc
	for i, s := range edgeSamples {
		for _, bad := range []string{"\xff", "\xc3", "\xe2\x82", "\x80\x80", "\xf0\x9f\x98"} {
			at := (i * 7) % (len(s) + 1)
			x := s[:at] + bad + s[at:] + " a" + bad + "b " + bad
			docs = append(docs, doc{"invalid", x})
			fixed = append(fixed, doc{"invalid", replaceInvalid(x)})
		}
	}
	in, err := writeJSONL(fixed)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(in)
	for _, name := range []string{"gpt2", "llama3"} {
		t.Run(name, func(t *testing.T) {
			path := tokenizerFile(t, name)
			tok, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := oracleLines(t, "pretok", path, in)
			for i, d := range docs {
				var want []string
				if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
					t.Fatal(err)
				}
				got := tok.pre.split(d.text, true, nil)
				for j := range got {
					got[j] = byteLevelString(replaceInvalid(got[j]))
				}
				if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
					t.Errorf("%q: pieces\n ours   %q\n oracle %q", d.text, got, want)
				}
				if dec := tok.Decode(tok.Encode(d.text, false), false); dec != d.text {
					t.Errorf("%q does not round-trip: %q", d.text, dec)
				}
			}
		})
	}
}
