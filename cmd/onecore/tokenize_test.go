package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/engine/tokenizer"
	"github.com/onecore-dev/onecore/internal/testenv"
)

var tokenizeDocs = []string{
	"Hello world, it's 2024!",
	"  spaces   and\ttabs  ",
	"日本語のテキスト 😀 and <|endoftext|> special",
	"",
	"don't STOP 'til you get enough 1234567",
}

func runOnecore(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return testenv.Run(t, nil, stdin, args...)
}

func gpt2File(t *testing.T) string {
	return filepath.Join(testenv.NodeModules(t), "@lenml", "tokenizer-gpt2", "models", "tokenizer.json")
}

// oracleIDs encodes docs with Hugging Face tokenizers (npm).
func oracleIDs(t *testing.T, tokPath string, docs []string, addSpecial bool) []string {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b bytes.Buffer
	for _, d := range docs {
		enc, _ := json.Marshal(map[string]string{"text": d})
		b.Write(enc)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	args := []string{filepath.Join(testenv.RepoRoot(), "engine", "tokenizer", "testdata", "oracle.js"), "encode", tokPath, in, out}
	if addSpecial {
		args = append(args, "add_special")
	}
	cmd := exec.Command(testenv.LookPath(t, "node"), args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+testenv.NodeModules(t))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oracle: %v\n%s", err, msg)
	}
	res, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(res), "\n"), "\n")
}

func TestTokenizeMatchesOracle(t *testing.T) {
	tok := gpt2File(t)
	want := oracleIDs(t, tok, tokenizeDocs, false)
	for _, workers := range []string{"1", "3"} {
		out, stderr, code := runOnecore(t, strings.Join(tokenizeDocs, "\n")+"\n", "tokenize", "--tokenizer", tok, "--workers", workers)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("workers %s:\n got  %q\n want %q", workers, got, want)
		}
	}
}

func TestTokenizeFormats(t *testing.T) {
	tokPath := gpt2File(t)
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, d := range tokenizeDocs {
		enc, _ := json.Marshal(map[string]any{"id": 7, "text": d})
		in.Write(enc)
		in.WriteByte('\n')
	}
	counts, stderr, code := runOnecore(t, in.String(), "tokenize", "--tokenizer", tokPath, "--text-field", "text", "--format", "count")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	toks, _, _ := runOnecore(t, in.String(), "tokenize", "--tokenizer", tokPath, "--text-field", "text", "--format", "tokens")
	countLines := strings.Split(strings.TrimSuffix(counts, "\n"), "\n")
	tokLines := strings.Split(strings.TrimSuffix(toks, "\n"), "\n")
	if len(countLines) != len(tokenizeDocs) || len(tokLines) != len(tokenizeDocs) {
		t.Fatalf("got %d count lines, %d token lines for %d docs", len(countLines), len(tokLines), len(tokenizeDocs))
	}
	for i, d := range tokenizeDocs {
		ids := tok.Encode(d, false)
		var strs []string
		for _, id := range ids {
			strs = append(strs, tok.IDToken(id))
		}
		if want, _ := json.Marshal(len(ids)); countLines[i] != string(want) {
			t.Errorf("doc %d count %s, want %s", i, countLines[i], want)
		}
		var got []string
		if err := json.Unmarshal([]byte(tokLines[i]), &got); err != nil || strings.Join(got, "\x00") != strings.Join(strs, "\x00") {
			t.Errorf("doc %d tokens %s, want %q (%v)", i, tokLines[i], strs, err)
		}
	}
}

func TestTokenizeErrors(t *testing.T) {
	tok := gpt2File(t)
	_, stderr, code := runOnecore(t, "{\"text\": \"ok\"}\nnot json\n", "tokenize", "--tokenizer", tok, "--text-field", "text")
	if code != exitError || !strings.Contains(stderr, "stdin:2") {
		t.Errorf("bad JSONL line: exit %d, stderr %q; want exit %d naming stdin:2", code, stderr, exitError)
	}
	_, stderr, code = runOnecore(t, "x\n", "tokenize", "--tokenizer", tok, "--format", "xml")
	if code != exitUsage {
		t.Errorf("bad --format: exit %d (%s), want %d", code, stderr, exitUsage)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"model": {"type": "Unigram", "vocab": []}}`), 0o644)
	_, stderr, code = runOnecore(t, "x\n", "tokenize", "--tokenizer", bad)
	if code != exitError || !strings.Contains(stderr, "Unigram") {
		t.Errorf("unsupported model: exit %d, stderr %q; want an error naming Unigram", code, stderr)
	}
}

func TestTokenizeBench(t *testing.T) {
	out, stderr, code := runOnecore(t, strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 200), "tokenize", "--tokenizer", gpt2File(t), "--bench", "--workers", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		MBPerS float64 `json:"mb_per_s"`
		Docs   int     `json:"docs"`
		Tokens int     `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bench output %q: %v", out, err)
	}
	if res.Docs != 200 || res.Tokens != 200*10 || res.MBPerS <= 0 {
		t.Errorf("bench = %+v, want 200 docs, 2000 tokens, positive speed", res)
	}
}

func TestTrainTokenizerCLI(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for i := 0; i < 300; i++ {
		text.WriteString("The whale, the sea and the ship. Call me Ishmael; it's 1851.\n")
		text.WriteString("func main() { fmt.Println(\"hello, world\") }\n")
	}
	in := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(in, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tokenizer.json")
	_, stderr, code := runOnecore(t, "", "train", "tokenizer", "--in", in, "--vocab-size", "400", "--special", "<|user|>", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	tok, err := tokenizer.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := tok.TokenID("<|user|>"); !ok || id != 3 {
		t.Errorf("<|user|> id %d %v, want 3", id, ok)
	}
	if tok.VocabSize() > 400 {
		t.Errorf("vocab size %d > 400", tok.VocabSize())
	}
	docs := []string{"Call me Ishmael.", "the whale<|user|>ship", "new words: zebra quagga 99999", "fmt.Println(x)"}
	want := oracleIDs(t, out, docs, true)
	got, stderr, code := runOnecore(t, strings.Join(docs, "\n")+"\n", "tokenize", "--tokenizer", out, "--add-special-tokens")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.TrimSuffix(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("trained tokenizer ids differ from the oracle:\n got  %s\n want %s", got, strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(got, "[1,") {
		t.Errorf("--add-special-tokens output %q should start with <bos>=1", got)
	}
	_, _, code = runOnecore(t, "", "train", "tokenizer", "--out", out)
	if code != exitUsage {
		t.Errorf("no input: exit %d, want %d", code, exitUsage)
	}
}
