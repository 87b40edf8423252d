package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onecore-dev/onecore/internal/testenv"
	"golang.org/x/text/unicode/norm"
)

// oracleJSON runs testdata/normalize.js with args (the input JSONL goes
// after them) and returns one decoded JSON value per document.
func oracleJSON[T any](t *testing.T, docs []doc, args ...string) []T {
	t.Helper()
	in, err := writeJSONL(docs)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(in)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	cmd := exec.Command(testenv.LookPath(t, "node"), append(append([]string{filepath.Join("testdata", "normalize.js")}, args...), in, out)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+testenv.NodeModules(t))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oracle %v: %v\n%s", args, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res []T
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		res = append(res, v)
	}
	if len(res) != len(docs) {
		t.Fatalf("oracle returned %d results for %d documents", len(res), len(docs))
	}
	return res
}

// regexDocs are the edge documents plus texts aimed at the constructs the
// translation rewrites (categories of newer Unicode versions, \w with
// spacing marks, scripts, hex digits, contractions, lookaround).
func regexDocs() []doc {
	docs := edgeDocs()
	add := func(name, text string) { docs = append(docs, doc{"regex:" + name, text}) }
	add("marks", "क़ि काम करो ा ि ी মা ் ಾ ॐ Ǆ ǅ ǆ ǈ ᾈ ᾼ A\u0301 a\u0903b")
	add("u16", "\U000105C0\U000105C1 \U00016D40\U00016D41 \U0001E5D0 \u1C89\u1C8A \U00011380\U00011381 \U00010D40\U00010D41 1\U0001CCF0")
	add("scripts", "漢字かなカナ한글 ελληνικά русский עברית العربية 𠀀𠀁")
	add("hex", "0xDEADbeef cafe 12ab zz GG 0x1F600")
	add("contractions", "I'LL we'Ve it's ſt DON'T 'S 's'S")
	add("spaces", "a \u00a0\u2003\u3000 b\t\n\r\v\f\u0085\u2028\u2029 c  ")
	add("emoji", "\U0001F600\U0001F44D\U0001F3FD 😀 ok")
	return docs
}

// TestOnigRegexParity holds the translated-Oniguruma matcher to the
// oracle's Split pre-tokenizer, pattern by pattern, on the edge documents.
func TestOnigRegexParity(t *testing.T) {
	docs := regexDocs()
	patterns := []struct{ re, behavior string }{
		{`\w+`, "Isolated"},
		{`\W+`, "Isolated"},
		{`\d+|\s+`, "Isolated"},
		{`\D+`, "Removed"},
		{`\s+(?!\S)|\s+`, "Isolated"},
		{`(?<=a)b|(?<!x)y`, "Isolated"},
		{`\p{Han}+|\p{Hiragana}+|\p{Katakana}+|\p{Hangul}+`, "Isolated"},
		{`\P{L}+`, "Isolated"},
		{`\p{Lu}\p{Ll}*|\p{Lt}|\p{Lm}+|\p{Lo}+`, "Isolated"},
		{`[\p{L}\p{M}]+|\p{N}{1,3}|[\p{P}\p{S}]+`, "MergedWithPrevious"},
		{`\p{Mn}+|\p{Mc}+|\p{Me}`, "Isolated"},
		{`\P{Mn}+`, "Isolated"},
		{`[^\s\p{L}\p{N}]+`, "MergedWithNext"},
		{`\h+|\x{1F600}`, "Isolated"},
		{`(?i:'s|'t|'re|'ve|'m|'ll|'d)`, "Isolated"},
		{`(?>a+)b|\p{Zs}`, "Contiguous"},
		{`[\w&&[^\d]]`, ""}, // refused: intersection
		{`\p{N}`, "Removed"},
		{`x*|\s*`, "MergedWithNext"},
		{`a*`, "Contiguous"},
	}
	for _, p := range patterns {
		t.Run(p.re, func(t *testing.T) {
			m, err := newPatternMatcher(p.re, false)
			if p.behavior == "" {
				if err == nil {
					t.Fatal("accepted a pattern it cannot translate faithfully")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			beh, _ := parseBehavior(p.behavior)
			sp := &splitPre{m: m, behavior: beh}
			for _, invert := range []bool{false, true} {
				sp.invert = invert
				want := oracleJSON[[]string](t, docs, "split", p.re, p.behavior, map[bool]string{false: "false", true: "true"}[invert])
				bad := 0
				for i, d := range docs {
					got := sp.split(d.text, true, nil)
					if strings.Join(got, "\x00") != strings.Join(want[i], "\x00") {
						if bad++; bad < 3 {
							k := 0
							for k < len(got) && k < len(want[i]) && got[k] == want[i][k] {
								k++
							}
							t.Errorf("invert=%v doc %s: pieces differ from piece %d\n ours   %+q\n oracle %+q", invert, d.source, k, got[k:min(len(got), k+3)], want[i][k:min(len(want[i]), k+3)])
						}
					}
				}
			}
		})
	}
}

// TestNormalizersParity holds NFC, NFD, NFKC and NFKD to the oracle's
// (Rust unicode-normalization) on the edge documents, which include runs of
// more than 30 combining marks and marks of newer Unicode versions than
// the oracle's tables.
func TestNormalizersParity(t *testing.T) {
	docs := regexDocs()
	docs = append(docs,
		doc{"zalgo", "Z" + strings.Repeat("\u0334\u0301\u0316\u0335\u0300\u031b\u0338", 12) + "a\u0308\u0301 e\u0301"},
		doc{"new-marks", "a\u0898\u0316\u0301 \u0899\u0334 \u1ABF\u0301x \u0C3C\u0C4D"},
		doc{"hangul", "한국어 \u1100\u1161\u11A8 \u1100\u1161 \uAC00\u11A8"})
	for _, f := range []struct {
		name string
		form norm.Form
	}{{"nfc", norm.NFC}, {"nfd", norm.NFD}, {"nfkc", norm.NFKC}, {"nfkd", norm.NFKD}} {
		t.Run(f.name, func(t *testing.T) {
			want := oracleJSON[string](t, docs, "norm", f.name)
			bad := 0
			for i, d := range docs {
				if got := normalizeForm(f.form, d.text); got != want[i] {
					gr, wr := []rune(got), []rune(want[i])
					k := 0
					for k < len(gr) && k < len(wr) && gr[k] == wr[k] {
						k++
					}
					if bad++; bad < 4 {
						t.Errorf("doc %s: first difference at rune %d: ours %U, oracle %U", d.source, k, gr[k:min(len(gr), k+4)], wr[k:min(len(wr), k+4)])
					}
				}
			}
		})
	}
}

// FuzzOnigPattern: any pattern (a tokenizer.json is outside input) is
// either refused with an error or compiled into a matcher whose matches
// are in order, inside the text and on rune boundaries; nothing panics.
func FuzzOnigPattern(f *testing.F) {
	for _, p := range []string{`\w+`, `[^\s\p{L}\p{N}]?\p{Lu}+`, `(?<=a)b`, `[\d\p{Mn}x-z]+`, `\p{Han}|\P{L}`, `[^\w]`, `\x{1F600}`, `a++`, `[`} {
		f.Add(p, "héllo wörld 123 ½ 漢字 \u0898\u0301 😀")
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		m, err := compileOnig(pattern)
		if err != nil {
			return
		}
		// A random pattern can backtrack for ages on a random text;
		// production matchers have no timeout (tokenizer.json patterns are
		// real ones), the fuzzer bounds each match to a second and takes a
		// timeout as "too slow", not as a wrong answer. (MatchTimeout 0
		// is not "none" in regexp2: it timed out at random, a flaky crash.)
		m.re.MatchTimeout = time.Second
		defer func() {
			if r := recover(); r != nil && !strings.Contains(fmt.Sprint(r), "match timeout") {
				panic(r)
			}
		}()
		prev := 0
		for _, loc := range m.matches(text, nil) {
			if loc[0] < prev || loc[1] < loc[0] || loc[1] > len(text) {
				t.Fatalf("pattern %q on %q: match %v after %d", pattern, text, loc, prev)
			}
			prev = loc[1]
		}
	})
}

// TestOnigLongRuns: a run far longer than regexp2's default backtracking
// stack allows (it returned an error, which panicked) splits like the
// scanner-free oracle would: one piece per run.
func TestOnigLongRuns(t *testing.T) {
	m, err := compileOnig(`\s+(?!\S)|\s+|\p{L}+`)
	if err != nil {
		t.Fatal(err)
	}
	text := "a" + strings.Repeat(" ", 1<<20) + "b" + strings.Repeat("x", 1<<20)
	got := m.matches(text, nil)
	want := [][2]int{{0, 1}, {1, 1 + 1<<20 - 1}, {1 << 20, 1<<20 + 1}, {1<<20 + 1, len(text)}}
	if len(got) != 4 || got[0] != want[0] || got[3] != want[3] {
		t.Fatalf("matches %v", got)
	}
}
