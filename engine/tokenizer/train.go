package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sort"
	"strconv"
	"sync"
)

// TrainOptions configures TrainBPE.
type TrainOptions struct {
	// VocabSize is the total number of ids: specials, the 256 byte tokens
	// and the learned merges. Default 16384.
	VocabSize int
	// Specials are added special tokens with ids 0, 1, ... in this order.
	// Default <pad>, <bos>, <eos>. Append more (e.g. chat markers) here.
	Specials []string
	// MinFrequency stops training when the most frequent pair occurs fewer
	// times. Default 2.
	MinFrequency int
	// MaxTokenBytes caps the length of a learned token in bytes (0: no cap).
	MaxTokenBytes int
	// Workers pre-tokenize and count in parallel (default GOMAXPROCS).
	Workers int
	// Progress, when set, is called now and then with the number of merges
	// learned so far and the target.
	Progress func(merges, target int)
}

// DefaultSpecials are the special tokens of onecore models: <pad>=0,
// <bos>=1 (starts every document), <eos>=2 (end of text / end of turn).
var DefaultSpecials = []string{"<pad>", "<bos>", "<eos>"}

// TrainBPE learns a byte-level BPE tokenizer from texts and returns its
// tokenizer.json. The tokenizer pre-tokenizes with the Llama-3 regex
// (digits in groups of up to three) and the ByteLevel alphabet, so every
// byte string is encodable; the specials are added tokens with the first
// ids, and the post-processor puts <bos> (the second special) in front
// when encoding with special tokens. Hugging Face tokenizers loads the
// result and produces the same ids as Tokenizer.
//
// Pieces are counted once (word-frequency deduplication), then merges are
// learned with incremental pair counts and a lazy max-heap, so a merge
// costs time proportional to the words that contain the pair.
func TrainBPE(texts iter.Seq[string], opts TrainOptions) ([]byte, error) {
	if opts.VocabSize == 0 {
		opts.VocabSize = 16384
	}
	if opts.Specials == nil {
		opts.Specials = DefaultSpecials
	}
	if opts.MinFrequency == 0 {
		opts.MinFrequency = 2
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	seen := map[string]bool{}
	for _, s := range opts.Specials {
		if s == "" || seen[s] {
			return nil, fmt.Errorf("train tokenizer: special token %q empty or repeated", s)
		}
		seen[s] = true
	}
	base := len(opts.Specials) + 256
	if opts.VocabSize < base {
		return nil, fmt.Errorf("train tokenizer: vocab size %d below %d (specials + 256 bytes)", opts.VocabSize, base)
	}
	counts := countPieces(texts, opts.Workers)
	if len(counts) == 0 {
		return nil, errors.New("train tokenizer: no text")
	}
	tr := newTrainer(counts, opts.Specials)
	tr.learn(opts.VocabSize, int64(opts.MinFrequency), opts.MaxTokenBytes, opts.Progress)
	return tr.tokenizerJSON(opts.Specials)
}

// countPieces pre-tokenizes texts on workers goroutines and counts pieces.
func countPieces(texts iter.Seq[string], workers int) map[string]int64 {
	ch := make(chan string, 4*workers)
	results := make([]map[string]int64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := map[string]int64{}
			var pieces []string
			for text := range ch {
				pieces = splitLlama3(text, 3, pieces[:0])
				for _, p := range pieces {
					if c, ok := m[p]; ok {
						m[p] = c + 1
					} else {
						m[string([]byte(p))] = 1 // don't pin the whole text
					}
				}
			}
			results[w] = m
		}()
	}
	for t := range texts {
		ch <- t
	}
	close(ch)
	wg.Wait()
	total := results[0]
	for _, m := range results[1:] {
		for k, v := range m {
			total[k] += v
		}
	}
	return total
}

// trainer holds the words (unique pieces as symbol ids) and pair statistics.
type trainer struct {
	words    [][]int32
	wcount   []int64
	tokens   [][]byte // id → raw bytes (specials have none)
	merges   [][2]int32
	pairs    map[uint64]int64   // pair → occurrences weighted by word count
	where    map[uint64][]int32 // pair → words that may contain it
	heap     pairHeap
	visited  []int32 // per word: last merge index that processed it
	nSpecial int
	ids      map[string]int32 // byte-level spelling → id, specials included
}

func newTrainer(counts map[string]int64, specials []string) *trainer {
	nSpecial := len(specials)
	tr := &trainer{pairs: map[uint64]int64{}, where: map[uint64][]int32{}, nSpecial: nSpecial, ids: map[string]int32{}}
	tr.tokens = make([][]byte, nSpecial, nSpecial+256)
	for i, s := range specials {
		tr.ids[s] = int32(i)
	}
	// Byte tokens in the order of their byte-level runes, as Hugging Face's
	// trainer sorts its alphabet.
	order := make([]int, 256)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return byteToRune[order[i]] < byteToRune[order[j]] })
	var byteID [256]int32
	for _, b := range order {
		byteID[b] = int32(len(tr.tokens))
		tr.ids[string(byteToRune[b])] = byteID[b]
		tr.tokens = append(tr.tokens, []byte{byte(b)})
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic word order
	tr.words = make([][]int32, len(keys))
	tr.wcount = make([]int64, len(keys))
	tr.visited = make([]int32, len(keys))
	for i, k := range keys {
		w := make([]int32, len(k))
		for j := 0; j < len(k); j++ {
			w[j] = byteID[k[j]]
		}
		tr.words[i], tr.wcount[i], tr.visited[i] = w, counts[k], -1
		for j := 0; j+1 < len(w); j++ {
			p := pairKey(w[j], w[j+1])
			tr.pairs[p] += counts[k]
			if ws := tr.where[p]; len(ws) == 0 || ws[len(ws)-1] != int32(i) {
				tr.where[p] = append(ws, int32(i))
			}
		}
	}
	for p, c := range tr.pairs {
		tr.heap.push(pairEntry{p, c})
	}
	return tr
}

func (tr *trainer) learn(vocabSize int, minFreq int64, maxBytes int, progress func(int, int)) {
	target := vocabSize - len(tr.tokens)
	for len(tr.tokens) < vocabSize && len(tr.heap) > 0 {
		top := tr.heap.pop()
		cur := tr.pairs[top.pair]
		if cur != top.count {
			if cur > 0 {
				tr.heap.push(pairEntry{top.pair, cur})
			}
			continue
		}
		if cur < minFreq {
			break
		}
		a, b := int32(top.pair>>32), int32(uint32(top.pair))
		if maxBytes > 0 && len(tr.tokens[a])+len(tr.tokens[b]) > maxBytes {
			delete(tr.pairs, top.pair) // never merge it
			continue
		}
		tr.merge(a, b)
		if progress != nil && len(tr.merges)%256 == 0 {
			progress(len(tr.merges), target)
		}
	}
	if progress != nil {
		progress(len(tr.merges), target)
	}
}

// merge adds token a+b (reusing the id of an equal token, as Hugging Face
// does) and rewrites every word containing the pair, updating the counts of
// the neighbouring pairs.
func (tr *trainer) merge(a, b int32) {
	raw := append(append([]byte{}, tr.tokens[a]...), tr.tokens[b]...)
	spelled := byteLevelString(string(raw))
	id, ok := tr.ids[spelled]
	if !ok {
		id = int32(len(tr.tokens))
		tr.tokens = append(tr.tokens, raw)
		tr.ids[spelled] = id
	}
	tr.merges = append(tr.merges, [2]int32{a, b})
	mi := int32(len(tr.merges))
	p := pairKey(a, b)
	changed := map[uint64]bool{}
	add := func(x, y int32, delta int64, wi int32) {
		k := pairKey(x, y)
		tr.pairs[k] += delta
		changed[k] = true
		if delta > 0 {
			if ws := tr.where[k]; len(ws) == 0 || ws[len(ws)-1] != wi {
				tr.where[k] = append(ws, wi)
			}
		}
	}
	for _, wi := range tr.where[p] {
		if tr.visited[wi] == mi {
			continue
		}
		tr.visited[wi] = mi
		w, c := tr.words[wi], tr.wcount[wi]
		out := w[:0]
		for i := 0; i < len(w); i++ {
			if i+1 < len(w) && w[i] == a && w[i+1] == b {
				if len(out) > 0 {
					prev := out[len(out)-1]
					add(prev, a, -c, wi)
					add(prev, id, c, wi)
				}
				if i+2 < len(w) {
					next := w[i+2]
					add(b, next, -c, wi)
					add(id, next, c, wi)
				}
				out = append(out, id)
				i++
				continue
			}
			out = append(out, w[i])
		}
		tr.words[wi] = out
	}
	delete(tr.pairs, p)
	delete(tr.where, p)
	for k := range changed {
		if c := tr.pairs[k]; c > 0 {
			tr.heap.push(pairEntry{k, c})
		} else {
			delete(tr.pairs, k)
			delete(tr.where, k)
		}
	}
}

// tokenizerJSON writes the trained tokenizer in Hugging Face's format.
func (tr *trainer) tokenizerJSON(specials []string) ([]byte, error) {
	var b bytes.Buffer
	str := func(s string) {
		enc, _ := json.Marshal(s)
		b.Write(enc)
	}
	spell := func(id int32) string {
		if int(id) < tr.nSpecial {
			return specials[id]
		}
		return byteLevelString(string(tr.tokens[id]))
	}
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, s := range specials {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    {\"id\": %d, \"content\": ", i)
		str(s)
		b.WriteString(", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}")
	}
	b.WriteString("\n  ],\n  \"normalizer\": null,\n  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [")
	b.WriteString("{\"type\": \"Split\", \"pattern\": {\"Regex\": ")
	str(llama3Pattern)
	b.WriteString("}, \"behavior\": \"Isolated\", \"invert\": false}, ")
	b.WriteString("{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]},\n")
	bos := specials[min(1, len(specials)-1)]
	if len(specials) > 1 {
		b.WriteString("  \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": ")
		str(bos)
		b.WriteString(", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [{\"SpecialToken\": {\"id\": ")
		str(bos)
		b.WriteString(", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": ")
		str(bos)
		b.WriteString(", \"type_id\": 1}}, {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}], \"special_tokens\": {")
		str(bos)
		b.WriteString(": {\"id\": ")
		str(bos)
		b.WriteString(", \"ids\": [1], \"tokens\": [")
		str(bos)
		b.WriteString("]}}},\n")
	} else {
		b.WriteString("  \"post_processor\": null,\n")
	}
	b.WriteString("  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": true},\n")
	b.WriteString("  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n    \"vocab\": {")
	for id := range tr.tokens {
		if id > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n      ")
		str(spell(int32(id)))
		b.WriteString(": " + strconv.Itoa(id))
	}
	b.WriteString("\n    },\n    \"merges\": [")
	for i, m := range tr.merges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n      [")
		str(spell(m[0]))
		b.WriteString(", ")
		str(spell(m[1]))
		b.WriteByte(']')
	}
	b.WriteString("\n    ]\n  }\n}\n")
	return b.Bytes(), nil
}

// pairEntry is a heap entry: most frequent pair first, ties to the
// smaller pair (as Hugging Face's trainer orders them).
type pairEntry struct {
	pair  uint64
	count int64
}

type pairHeap []pairEntry

func (a pairEntry) before(b pairEntry) bool {
	return a.count > b.count || (a.count == b.count && a.pair < b.pair)
}

func (h *pairHeap) push(e pairEntry) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *pairHeap) pop() pairEntry {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && s[r].before(s[l]) {
			c = r
		}
		if !s[c].before(s[i]) {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	*h = s
	return top
}
