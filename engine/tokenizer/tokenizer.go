// Package tokenizer reads Hugging Face tokenizer.json files and encodes text
// to exactly the ids Hugging Face tokenizers produces, in pure Go: byte-level
// BPE (GPT-2, Llama-3), SentencePiece-style BPE with byte fallback
// (Llama-2, Mistral) and WordPiece (BERT), with their added tokens,
// normalizers, pre-tokenizers, post-processors and decoders. Components it
// does not implement are rejected at load time, never silently approximated.
// TrainBPE builds a new byte-level BPE tokenizer.json from a corpus.
//
// Text is UTF-8; an invalid byte is treated as one character of its own
// (pre-tokenized like U+FFFD) and, in byte-level and byte-fallback models,
// encoded as that raw byte, so Decode(Encode(x)) == x for every string.
package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// model turns one pre-tokenized piece into ids (appended to dst).
type model interface {
	tokenize(dst []int32, piece string, sc *scratch) []int32
}

// scratch holds per-call buffers, pooled so Encode allocates little.
type scratch struct {
	syms   []symbol
	heap   []mergeEntry
	pieces []string
	spans  []span
	spans2 []span
	l1     [l1Size]*cacheEntry // see wordCache
}

// Tokenizer encodes and decodes text. It is safe for concurrent use.
type Tokenizer struct {
	vocab    map[string]int32 // model vocabulary plus added tokens
	tokens   []string         // id → token ("" for unused ids)
	special  []bool           // id → special added token
	added    addedSet         // all added tokens
	ordinary addedSet         // the added tokens that are not special
	norm     normalizer
	pre      preTokenizer
	model    model
	post     postProcessor
	dec      decoder
	pool     sync.Pool
}

// Load reads a Hugging Face tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads the contents of a Hugging Face tokenizer.json.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %v", err)
	}
	pm, err := parseModel(f.Model)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{model: pm.m, vocab: make(map[string]int32, len(pm.vocab)+len(f.AddedTokens))}
	for tok, id := range pm.vocab {
		t.vocab[tok] = id
	}
	if !isNull(f.Normalizer) {
		if t.norm, err = parseNormalizer(f.Normalizer, "normalizer"); err != nil {
			return nil, err
		}
	}
	if !isNull(f.PreTokenizer) {
		var byteLevel bool
		if t.pre, byteLevel, err = parsePreTokenizer(f.PreTokenizer, "pre_tokenizer"); err != nil {
			return nil, err
		}
		if byteLevel {
			if pm.bpe == nil {
				return nil, fmt.Errorf("pre_tokenizer: unsupported ByteLevel with a non-BPE model")
			}
			pm.bpe.setByteLevel()
		}
	}
	if !isNull(f.PostProcessor) {
		if t.post, err = parsePostProcessor(f.PostProcessor, "post_processor"); err != nil {
			return nil, err
		}
	}
	if !isNull(f.Decoder) {
		if t.dec, err = parseDecoder(f.Decoder, "decoder"); err != nil {
			return nil, err
		}
	}
	// Ids of added tokens are assigned as Hugging Face does when loading
	// (the "id" fields are only checked there): a token already in the
	// vocabulary keeps that id, a new one gets the next free id after the
	// model vocabulary.
	added := map[string]int32{}
	maxAdded := int32(-1)
	var raw, normd []addedToken
	for i := range f.AddedTokens {
		a := &f.AddedTokens[i]
		if a.Content == "" {
			return nil, fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		if id, ok := added[a.Content]; ok {
			a.ID = id
		} else if id, ok := pm.vocab[a.Content]; ok {
			a.ID = id
		} else {
			a.ID = int32(len(pm.vocab))
			if maxAdded >= a.ID {
				a.ID = maxAdded + 1
			}
		}
		added[a.Content] = a.ID
		maxAdded = max(maxAdded, a.ID)
		t.vocab[a.Content] = a.ID
		m := *a
		if a.Normalized && t.norm != nil {
			// Matched after normalization, so against its normalized form.
			m.Content = t.norm.normalize(a.Content)
			normd = append(normd, m)
		} else {
			raw = append(raw, m)
		}
	}
	t.added = addedSet{newAddedMatcher(raw), newAddedMatcher(normd)}
	notSpecial := func(toks []addedToken) (out []addedToken) {
		for _, a := range toks {
			if !a.Special {
				out = append(out, a)
			}
		}
		return out
	}
	t.ordinary = addedSet{newAddedMatcher(notSpecial(raw)), newAddedMatcher(notSpecial(normd))}
	n := 0
	for _, id := range t.vocab {
		n = max(n, int(id)+1)
	}
	if n > maxID {
		return nil, fmt.Errorf("added_tokens: id %d above the limit %d", n-1, maxID)
	}
	t.tokens = make([]string, n)
	t.special = make([]bool, n)
	for tok, id := range pm.vocab {
		t.tokens[id] = tok
	}
	for _, a := range f.AddedTokens {
		t.tokens[a.ID] = a.Content
		t.special[a.ID] = a.Special
	}
	if err := checkPostIDs(t.post, n); err != nil {
		return nil, err
	}
	t.pool.New = func() any { return new(scratch) }
	return t, nil
}

// checkPostIDs makes sure the post-processor only adds existing ids.
func checkPostIDs(p postProcessor, n int) error {
	switch p := p.(type) {
	case seqPost:
		for _, q := range p {
			if err := checkPostIDs(q, n); err != nil {
				return err
			}
		}
	case templatePost:
		for _, id := range append(append([]int32{}, p.before...), p.after...) {
			if id < 0 || int(id) >= n {
				return fmt.Errorf("post_processor: special token id %d outside the vocabulary [0, %d)", id, n)
			}
		}
	}
	return nil
}

// VocabSize returns the number of ids (largest id + 1, added tokens included).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenID returns the id of a token string (model vocabulary or added token).
func (t *Tokenizer) TokenID(tok string) (int32, bool) {
	id, ok := t.vocab[tok]
	return id, ok
}

// IDToken returns the token string of id, or "" when id is out of range.
func (t *Tokenizer) IDToken(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// IsSpecial reports whether id is a special added token (skipped by
// Decode with skipSpecial).
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.special) && t.special[id]
}

// Encode returns the ids of text. addSpecial applies the post-processor
// (e.g. BERT's [CLS] … [SEP]); without it the result equals Hugging Face's
// encode(text, add_special_tokens=False). Added tokens in the text are
// recognized either way.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	sc := t.pool.Get().(*scratch)
	ids := t.encodeWith(text, addSpecial, &t.added, sc)
	t.pool.Put(sc)
	return ids
}

// EncodeOrdinary encodes text with special tokens written in it treated as
// ordinary text ("<|endoftext|>" becomes the tokens of those characters),
// like Hugging Face with encode_special_tokens=True: no document can fake
// a special token. Non-special added tokens are still recognized; no
// post-processing.
func (t *Tokenizer) EncodeOrdinary(text string) []int32 {
	sc := t.pool.Get().(*scratch)
	ids := t.encodeWith(text, false, &t.ordinary, sc)
	t.pool.Put(sc)
	return ids
}

// addedSet holds the added-token matchers of one encoding mode.
type addedSet struct {
	raw  *addedMatcher // matched on raw text
	norm *addedMatcher // matched after normalization
}

func (t *Tokenizer) encodeWith(text string, addSpecial bool, a *addedSet, sc *scratch) []int32 {
	ids := t.encode(make([]int32, 0, len(text)/4+4), text, a, sc)
	if addSpecial && t.post != nil {
		ids = t.post.process(ids)
	}
	return ids
}

func (t *Tokenizer) encode(ids []int32, text string, a *addedSet, sc *scratch) []int32 {
	if a.raw == nil {
		return t.encodeSegment(ids, text, true, a, sc)
	}
	spans := a.raw.split(text, sc.spans[:0])
	for _, s := range spans {
		if s.id >= 0 {
			ids = append(ids, s.id)
			continue
		}
		ids = t.encodeSegment(ids, text[s.start:s.end], s.start == 0, a, sc)
	}
	sc.spans = spans[:0]
	return ids
}

// encodeSegment encodes text between added tokens: normalize, split on
// normalized added tokens, pre-tokenize, run the model on each piece.
func (t *Tokenizer) encodeSegment(ids []int32, seg string, first bool, a *addedSet, sc *scratch) []int32 {
	if t.norm != nil {
		seg = t.norm.normalize(seg)
	}
	if a.norm == nil {
		return t.encodePieces(ids, seg, first, sc)
	}
	spans := a.norm.split(seg, sc.spans2[:0])
	for _, s := range spans {
		if s.id >= 0 {
			ids = append(ids, s.id)
			continue
		}
		ids = t.encodePieces(ids, seg[s.start:s.end], first && s.start == 0, sc)
	}
	sc.spans2 = spans[:0]
	return ids
}

func (t *Tokenizer) encodePieces(ids []int32, s string, first bool, sc *scratch) []int32 {
	if t.pre == nil {
		return t.model.tokenize(ids, s, sc)
	}
	pieces := t.pre.split(s, first, sc.pieces[:0])
	for _, p := range pieces {
		ids = t.model.tokenize(ids, p, sc)
	}
	clear(pieces) // don't pin the text
	sc.pieces = pieces[:0]
	return ids
}

// EncodeBatch encodes texts on workers goroutines (GOMAXPROCS when
// workers <= 0); out[i] holds the ids of texts[i].
func (t *Tokenizer) EncodeBatch(texts []string, addSpecial bool, workers int) [][]int32 {
	return t.encodeBatch(texts, addSpecial, &t.added, workers)
}

// EncodeBatchOrdinary is EncodeBatch with EncodeOrdinary's rule: special
// tokens written in the texts are encoded as plain text. Corpus documents
// go through this, so no document can fake a boundary.
func (t *Tokenizer) EncodeBatchOrdinary(texts []string, workers int) [][]int32 {
	return t.encodeBatch(texts, false, &t.ordinary, workers)
}

func (t *Tokenizer) encodeBatch(texts []string, addSpecial bool, a *addedSet, workers int) [][]int32 {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([][]int32, len(texts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(texts)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := t.pool.Get().(*scratch)
			defer t.pool.Put(sc)
			for j := int(next.Add(1) - 1); j < len(texts); j = int(next.Add(1) - 1) {
				out[j] = t.encodeWith(texts[j], addSpecial, a, sc)
			}
		}()
	}
	wg.Wait()
	return out
}

// Decode turns ids back into text through the tokenizer's decoder. Ids out
// of range are skipped; skipSpecial also drops special added tokens.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) || t.tokens[id] == "" {
			continue
		}
		if skipSpecial && t.special[id] {
			continue
		}
		toks = append(toks, t.tokens[id])
	}
	if t.dec == nil {
		return strings.Join(toks, " ")
	}
	return strings.Join(t.dec.decode(toks), "")
}
