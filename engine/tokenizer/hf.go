//go:build hftokenizers

package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	hf "github.com/daulet/tokenizers"
)

// HFTokenizer is the optional backend: Hugging Face tokenizers itself,
// through github.com/daulet/tokenizers (cgo). It needs that module's Rust
// static library (libtokenizers.a, built with cargo from its source) on the
// linker path, e.g. CGO_LDFLAGS=-L/path/to/lib go build -tags hftokenizers.
// The pure-Go Tokenizer gives the same ids and is the default.
type HFTokenizer struct {
	t      *hf.Tokenizer
	vocab  map[string]int32
	tokens []string
}

var _ Encoder = (*HFTokenizer)(nil)

// LoadHF loads a tokenizer.json with the Hugging Face backend.
func LoadHF(path string) (*HFTokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vocab, err := readVocab(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t, err := hf.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h := &HFTokenizer{t: t, vocab: vocab}
	for tok, id := range vocab {
		for int(id) >= len(h.tokens) {
			h.tokens = append(h.tokens, "")
		}
		h.tokens[id] = tok
	}
	runtime.SetFinalizer(h, func(h *HFTokenizer) { h.t.Close() })
	return h, nil
}

// readVocab reads the model vocabulary (object or Unigram list) and the
// added tokens, with Hugging Face's id assignment for the latter.
func readVocab(data []byte) (map[string]int32, error) {
	var f struct {
		AddedTokens []addedToken `json:"added_tokens"`
		Model       struct {
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %v", err)
	}
	vocab := map[string]int32{}
	if err := json.Unmarshal(f.Model.Vocab, &vocab); err != nil {
		var list [][2]any
		if err2 := json.Unmarshal(f.Model.Vocab, &list); err2 != nil {
			return nil, fmt.Errorf("model.vocab: %v", err)
		}
		for i, e := range list {
			s, _ := e[0].(string)
			vocab[s] = int32(i)
		}
	}
	n, maxAdded := int32(len(vocab)), int32(-1)
	for _, a := range f.AddedTokens {
		id, ok := vocab[a.Content]
		if !ok {
			id = max(n, maxAdded+1)
			vocab[a.Content] = id
		}
		maxAdded = max(maxAdded, id)
	}
	return vocab, nil
}

// Encode returns the ids of text.
func (h *HFTokenizer) Encode(text string, addSpecial bool) []int32 {
	ids, _ := h.t.Encode(text, addSpecial)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// EncodeBatch encodes texts on workers goroutines.
func (h *HFTokenizer) EncodeBatch(texts []string, addSpecial bool, workers int) [][]int32 {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([][]int32, len(texts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(texts); i = int(next.Add(1) - 1) {
				out[i] = h.Encode(texts[i], addSpecial)
			}
		}()
	}
	wg.Wait()
	return out
}

// Decode turns ids back into text.
func (h *HFTokenizer) Decode(ids []int32, skipSpecial bool) string {
	u := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if id >= 0 {
			u = append(u, uint32(id))
		}
	}
	return h.t.Decode(u, skipSpecial)
}

// VocabSize returns the number of ids, added tokens included.
func (h *HFTokenizer) VocabSize() int { return int(h.t.VocabSize()) }

// TokenID returns the id of a token string.
func (h *HFTokenizer) TokenID(tok string) (int32, bool) {
	id, ok := h.vocab[tok]
	return id, ok
}

// IDToken returns the token string of id.
func (h *HFTokenizer) IDToken(id int32) string {
	if id < 0 || int(id) >= len(h.tokens) {
		return ""
	}
	return h.tokens[id]
}
