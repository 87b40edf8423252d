package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

func TestLoadErrors(t *testing.T) {
	const bpe = `"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}`
	tests := []struct {
		name, json, want string
	}{
		{"unigram", `{"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}`, `model type "Unigram"`},
		{"no model", `{}`, "model: missing"},
		{"scripts", `{"pre_tokenizer": {"type": "UnicodeScripts"}, ` + bpe + `}`, `pre_tokenizer: unsupported pre_tokenizer type "UnicodeScripts"`},
		{"precompiled", `{"normalizer": {"type": "Precompiled", "precompiled_charsmap": "AAAA"}, ` + bpe + `}`, `normalizer: unsupported normalizer type "Precompiled"`},
		{"ctc", `{"decoder": {"type": "CTC"}, ` + bpe + `}`, `decoder: unsupported decoder type "CTC"`},
		{"nested", `{"decoder": {"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Nope"}]}, ` + bpe + `}`, `decoder.decoders[1]: unsupported decoder type "Nope"`},
		{"post", `{"post_processor": {"type": "Magic"}, ` + bpe + `}`, `post_processor: unsupported post_processor type "Magic"`},
		{"possessive", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a++b"}, "behavior": "Isolated"}, ` + bpe + `}`, "possessive quantifier"},
		{"intersection", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "[a-z&&[^b]]"}, "behavior": "Isolated"}, ` + bpe + `}`, "class intersection"},
		{"unknown property", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\p{Nope}+"}, "behavior": "Isolated"}, ` + bpe + `}`, `unknown property \p{Nope}`},
		{"bad regex", `{"normalizer": {"type": "Replace", "pattern": {"Regex": "(a"}, "content": "b"}, ` + bpe + `}`, "unsupported regex"},
		{"after bytelevel", `{"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Digits"}]}, ` + bpe + `}`, "after ByteLevel"},
		{"bytelevel wordpiece", `{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}`, "ByteLevel with a non-BPE model"},
		{"merge missing", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`, `model.merges[0] "a" "b": token not in vocab`},
		{"merge result missing", `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}}`, `merged token "ab" not in vocab`},
		{"bad merge", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}}`, "model.merges[0]"},
		{"dropout", `{"model": {"type": "BPE", "dropout": 0.1, "vocab": {"a": 0}, "merges": []}}`, "dropout"},
		{"unk missing", `{"model": {"type": "BPE", "unk_token": "<unk>", "vocab": {"a": 0}, "merges": []}}`, `unk_token "<unk>" not in vocab`},
		{"huge id", `{"model": {"type": "BPE", "vocab": {"a": 2000000000}, "merges": []}}`, "outside"},
		{"template id", `{"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "x"}}, {"Sequence": {"id": "A"}}], "special_tokens": {"x": {"ids": [99]}}}, ` + bpe + `}`, "special token id 99 outside"},
		{"template missing", `{"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "x"}}], "special_tokens": {}}, ` + bpe + `}`, `special token "x" missing`},
		{"behavior", `{"pre_tokenizer": {"type": "Split", "pattern": {"String": "-"}, "behavior": "Sideways"}, ` + bpe + `}`, `split behavior "Sideways"`},
		{"empty added", `{"added_tokens": [{"id": 5, "content": ""}], ` + bpe + `}`, "added_tokens[0]: empty content"},
		{"not json", `{"model": `, "tokenizer.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestScanners(t *testing.T) {
	tests := []struct {
		text        string
		gpt2, llama []string
	}{
		{"Hello world", []string{"Hello", " world"}, []string{"Hello", " world"}},
		{"it's", []string{"it", "'s"}, []string{"it", "'s"}},
		{"IT'S 'LL", []string{"IT", "'", "S", " '", "LL"}, []string{"IT", "'S", " '", "LL"}},
		{"12345", []string{"12345"}, []string{"123", "45"}},
		{"a  b", []string{"a", " ", " b"}, []string{"a", " ", " b"}},
		{"a \n\n b", []string{"a", " \n\n", " b"}, []string{"a", " \n\n", " b"}},
		{"x   ", []string{"x", "   "}, []string{"x", "   "}},
		{"(hello)", []string{"(", "hello", ")"}, []string{"(hello", ")"}},
		{"!!\n\nok", []string{"!!", "\n", "\n", "ok"}, []string{"!!\n\n", "ok"}},
		{"\tword", []string{"\t", "word"}, []string{"\tword"}},
		{"a\xffb", []string{"a", "\xff", "b"}, []string{"a", "\xffb"}},
		{"日本 語", []string{"日本", " 語"}, []string{"日本", " 語"}},
		{"😀😀 x", []string{"😀😀", " x"}, []string{"😀😀", " x"}},
	}
	for _, tc := range tests {
		if got := splitGPT2(tc.text, nil); !slices.Equal(got, tc.gpt2) {
			t.Errorf("GPT-2 split %q = %q, want %q", tc.text, got, tc.gpt2)
		}
		if got := splitLlama3(tc.text, 3, nil); !slices.Equal(got, tc.llama) {
			t.Errorf("Llama-3 split %q = %q, want %q", tc.text, got, tc.llama)
		}
	}
}

// TestSplitBehaviors uses Hugging Face's documented example.
func TestSplitBehaviors(t *testing.T) {
	s := "the-final--countdown"
	ms := literalMatcher("-").matches(s, nil)
	tests := []struct {
		behavior int
		invert   bool
		want     []string
	}{
		{behRemoved, false, []string{"the", "final", "countdown"}},
		{behIsolated, false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{behMergedWithPrevious, false, []string{"the-", "final-", "-", "countdown"}},
		{behMergedWithNext, false, []string{"the", "-final", "-", "-countdown"}},
		{behContiguous, false, []string{"the", "-", "final", "--", "countdown"}},
		{behRemoved, true, []string{"-", "-", "-"}},
	}
	for _, tc := range tests {
		if got := splitByMatches(s, ms, tc.behavior, tc.invert, nil); !slices.Equal(got, tc.want) {
			t.Errorf("behavior %d invert %v: %q, want %q", tc.behavior, tc.invert, got, tc.want)
		}
	}
}

func TestEncodeBatchAndDecode(t *testing.T) {
	tok, err := Load(tokenizerFile(t, "llama3"))
	if err != nil {
		t.Fatal(err)
	}
	texts := slices.Repeat(edgeSamples, 4)
	got := tok.EncodeBatch(texts, true, 4)
	for i, s := range texts {
		if want := tok.Encode(s, true); !slices.Equal(got[i], want) {
			t.Fatalf("EncodeBatch[%d] differs from Encode", i)
		}
	}
	ids := tok.Encode("<|begin_of_text|>Hi there<|end_of_text|>", false)
	if ids[0] != 128000 || ids[len(ids)-1] != 128001 {
		t.Fatalf("special tokens in text not recognized: %v", ids)
	}
	if got := tok.Decode(ids, true); got != "Hi there" {
		t.Errorf("Decode(skipSpecial) = %q", got)
	}
	if got := tok.Decode(append(ids, -1, 1<<30), false); got != "<|begin_of_text|>Hi there<|end_of_text|>" {
		t.Errorf("Decode = %q (out-of-range ids must be skipped)", got)
	}
	if id, ok := tok.TokenID("Hello"); !ok || tok.IDToken(id) != "Hello" {
		t.Errorf("TokenID/IDToken round trip failed: %d %v", id, ok)
	}
	if tok.VocabSize() != 128256 || tok.IDToken(-1) != "" {
		t.Errorf("VocabSize %d", tok.VocabSize())
	}
}

// TestLongWord: BPE on one 200 KB "word" (Llama-2 has no pre-tokenizer)
// must stay fast (the heap merge loop is O(n log n)); a quadratic loop
// would take minutes.
func TestLongWord(t *testing.T) {
	tok, err := Load(tokenizerFile(t, "llama2"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("abracadabra", 20000)
	ids := tok.Encode(s, false)
	if got := tok.Decode(ids, false); got != s {
		t.Fatal("long word does not round-trip")
	}
	if len(ids) > len(s)/2 {
		t.Errorf("%d tokens for %d bytes: merges not applied", len(ids), len(s))
	}
}

func TestCrossesMeta(t *testing.T) {
	for s, want := range map[string]bool{"": false, "▁": false, "▁▁a": false, "a": false, "a▁": true, "▁a▁b": true, "▁▁": false, "<0x0A>▁": true} {
		if got := crossesMeta(s); got != want {
			t.Errorf("crossesMeta(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestMetaSplitExact: cutting before ▁ must not change ids; compare with
// the same model with the optimization off, on text with ▁ runs.
func TestMetaSplitExact(t *testing.T) {
	tok, err := Load(tokenizerFile(t, "llama2"))
	if err != nil {
		t.Fatal(err)
	}
	b := tok.model.(*bpeModel)
	if !b.metaSplit {
		t.Fatal("Llama-2 should qualify for metaSplit")
	}
	var texts []string
	for _, s := range edgeSamples {
		texts = append(texts, s, strings.ReplaceAll(s, " ", "  "), "▁"+s+"▁▁x▁")
	}
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, false)
	}
	b.metaSplit = false
	b.cache = newWordCache()
	for i, s := range texts {
		if got := tok.Encode(s, false); !slices.Equal(got, want[i]) {
			t.Errorf("%q: split %v, whole %v", s, want[i], got)
		}
	}
}
