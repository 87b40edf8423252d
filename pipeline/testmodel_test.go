package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/onecore-dev/onecore/engine"
)

// byteLevelAlphabet is GPT-2's bytes_to_unicode: printable bytes map to
// themselves, the rest to code points from 256 up.
func byteLevelAlphabet() []string {
	var bs []int
	for b := '!'; b <= '~'; b++ {
		bs = append(bs, int(b))
	}
	for b := 0xA1; b <= 0xAC; b++ {
		bs = append(bs, b)
	}
	for b := 0xAE; b <= 0xFF; b++ {
		bs = append(bs, b)
	}
	in := map[int]bool{}
	for _, b := range bs {
		in[b] = true
	}
	out := make([]string, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if in[b] {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// writeTokenizer writes a byte-level BPE tokenizer.json: <pad> <bos> <eos>,
// the 256 byte symbols and a few merges.
func writeTokenizer(t testing.TB, path string) int {
	t.Helper()
	vocab := map[string]int{"<pad>": 0, "<bos>": 1, "<eos>": 2}
	for i, s := range byteLevelAlphabet() {
		vocab[s] = 3 + i
	}
	merges := [][2]string{{"t", "h"}, {"Ġ", "th"}, {"e", "r"}, {"Ġ", "a"}, {"i", "n"}, {"Ġth", "e"}}
	for _, m := range merges {
		vocab[m[0]+m[1]] = len(vocab)
	}
	added := []map[string]any{}
	for i, s := range []string{"<pad>", "<bos>", "<eos>"} {
		added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	bl := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	var ms []string
	for _, m := range merges {
		ms = append(ms, m[0]+" "+m[1])
	}
	tj := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": nil, "pre_tokenizer": bl, "post_processor": nil, "decoder": bl,
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "vocab": vocab, "merges": ms},
	}
	b, _ := json.Marshal(tj)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return len(vocab)
}

// writeTinyModel writes a small random-init checkpoint (hybrid layers, a
// classifier head, generation.json) with a byte-level tokenizer into dir.
func writeTinyModel(t testing.TB, dir string) { writeTinyModelHead(t, dir, true) }

// writeTinyModelHead is writeTinyModel with or without the classifier head.
func writeTinyModelHead(t testing.TB, dir string, head bool) {
	t.Helper()
	c := engine.DefaultConfig()
	c.VocabSize = 288
	c.DModel = 64
	c.Layers = []string{"lin", "swa", "lin"}
	c.SWAHeads, c.SWAHeadDim = 2, 32
	c.Window = 64
	c.LinHeads, c.DState, c.LinHeadDim = 2, 16, 32
	c.DFF = 128
	ts := engine.InitTensors(&c, 11)
	ts[engine.HeadClsW] = make([]float32, c.DModel*2)
	for i := range ts[engine.HeadClsW] {
		ts[engine.HeadClsW][i] = float32((i*37)%23-11) / 10
	}
	ts[engine.HeadClsB] = []float32{0.1, -0.1}
	gen := &engine.Generation{StopIDs: []int32{engine.EosID, 13 /* "\n" */}, Labels: []string{"spam", "ham"},
		Templates: map[string]string{"extract": "{text}\nQ: {question}\nA:"}}
	if !head {
		delete(ts, engine.HeadClsW)
		delete(ts, engine.HeadClsB)
		gen.Labels = nil
	}
	if err := engine.SaveCheckpoint(dir, &c, ts, gen); err != nil {
		t.Fatal(err)
	}
	if n := writeTokenizer(t, filepath.Join(dir, "tokenizer.json")); n > c.VocabSize {
		t.Fatalf("tokenizer %d > vocab %d", n, c.VocabSize)
	}
}

func TestTinyModelLoads(t *testing.T) {
	dir := t.TempDir()
	writeTinyModel(t, dir)
	m, tok, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode("the cat <bos> sat")
	for _, id := range ids {
		if id <= engine.EosID {
			t.Fatalf("special id %d inside a document", id)
		}
	}
	if got := tok.Decode(ids); got != "the cat <bos> sat" { // literal text kept, not a boundary
		t.Fatalf("round trip %q", got)
	}
	if l := m.Labels(); len(l) != 2 || l[0] != "spam" {
		t.Fatalf("labels %v", l)
	}
}
