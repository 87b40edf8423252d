package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestTrainBPEParity(t *testing.T) {
	docs, _ := parityCorpus(t)
	var texts []string
	size := 0
	for _, d := range docs {
		texts = append(texts, d.text)
		size += len(d.text)
		if size > 1_500_000 {
			break
		}
	}
	data, err := TrainBPE(slices.Values(texts), TrainOptions{VocabSize: 3000, Specials: []string{"<pad>", "<bos>", "<eos>", "<|user|>"}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatalf("trained tokenizer.json does not load: %v", err)
	}
	if tok.VocabSize() != 3000 {
		t.Errorf("vocab size %d, want 3000", tok.VocabSize())
	}
	for i, s := range []string{"<pad>", "<bos>", "<eos>", "<|user|>"} {
		if id, ok := tok.TokenID(s); !ok || id != int32(i) || !tok.IsSpecial(id) {
			t.Errorf("special %q: id %d ok %v special %v, want id %d", s, id, ok, tok.IsSpecial(id), i)
		}
	}
	if ids := tok.Encode("hello<|user|>", true); ids[0] != 1 || ids[len(ids)-1] != 3 {
		t.Errorf("Encode with specials = %v, want <bos> first and <|user|> last", ids)
	}
	// Merges must compress: real text needs far fewer tokens than bytes.
	n := 0
	for _, s := range texts[:50] {
		n += len(tok.Encode(s, false))
	}
	b := 0
	for _, s := range texts[:50] {
		b += len(s)
	}
	if float64(b)/float64(n) < 2 {
		t.Errorf("%.2f bytes per token after training, want >= 2", float64(b)/float64(n))
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := docs[:min(len(docs), 400)]
	f, err := writeJSONL(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f)
	for _, special := range []bool{false, true} {
		want := runOracle(t, path, f, special)
		got := make([][]int32, len(sub))
		for i, d := range sub {
			got[i] = tok.Encode(d.text, special)
		}
		compareIDs(t, tok, sub, got, want)
	}
}

func TestTrainBPEErrors(t *testing.T) {
	texts := slices.Values([]string{"some text"})
	if _, err := TrainBPE(texts, TrainOptions{VocabSize: 100}); err == nil {
		t.Error("vocab size below specials+256 accepted")
	}
	if _, err := TrainBPE(texts, TrainOptions{Specials: []string{"<a>", "<a>"}}); err == nil {
		t.Error("repeated special accepted")
	}
	if _, err := TrainBPE(slices.Values([]string{""}), TrainOptions{}); err == nil {
		t.Error("empty corpus accepted")
	}
}

func TestTrainBPEDeterministic(t *testing.T) {
	texts := []string{"the cat sat on the mat", "the dog sat on the log", "aaaa aaaa aaaa", "ab ab abab ababab"}
	a, err := TrainBPE(slices.Values(texts), TrainOptions{VocabSize: 280, MinFrequency: 1, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := TrainBPE(slices.Values(texts), TrainOptions{VocabSize: 280, MinFrequency: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Error("training depends on the number of workers")
	}
	tok, err := Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	// " sat" and "the" occur twice: they must be single tokens.
	for _, w := range []string{"the", " sat", " on"} {
		if ids := tok.Encode(w, false); len(ids) != 1 {
			t.Errorf("%q encodes to %d tokens, want 1", w, len(ids))
		}
	}
	for _, s := range texts {
		if got := tok.Decode(tok.Encode(s, false), false); got != s {
			t.Errorf("round trip %q → %q", s, got)
		}
	}
}
