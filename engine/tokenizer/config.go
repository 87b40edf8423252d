package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// fileJSON is the top level of a Hugging Face tokenizer.json. Truncation and
// padding are ignored: Encode never truncates or pads.
type fileJSON struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"`
}

// component is the fields every component may carry; each parser reads
// the ones it needs.
type component struct {
	Type string `json:"type"`

	// Sequences.
	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	Processors    []json.RawMessage `json:"processors"`

	// Pattern-based (Split, Replace).
	Pattern  *patternJSON `json:"pattern"`
	Content  *string      `json:"content"`
	Behavior string       `json:"behavior"`
	Invert   bool         `json:"invert"`

	// Normalizers.
	Prepend          string `json:"prepend"`
	CleanText        *bool  `json:"clean_text"`
	HandleChinese    *bool  `json:"handle_chinese_chars"`
	StripAccents     *bool  `json:"strip_accents"`
	Lowercase        *bool  `json:"lowercase"`
	StripLeft        bool   `json:"strip_left"`
	StripRight       bool   `json:"strip_right"`
	PrecompiledChars string `json:"precompiled_charsmap"`

	// ByteLevel, Metaspace.
	AddPrefixSpace *bool  `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
	Replacement    string `json:"replacement"`
	PrependScheme  string `json:"prepend_scheme"`
	Split          *bool  `json:"split"`

	// Digits, CharDelimiterSplit.
	IndividualDigits bool   `json:"individual_digits"`
	Delimiter        string `json:"delimiter"`

	// Decoders.
	Start   int    `json:"start"`
	Stop    int    `json:"stop"`
	Prefix  string `json:"prefix"`
	Cleanup *bool  `json:"cleanup"`
	Suffix  string `json:"suffix"`

	// Post-processors.
	Single        []templateItem                 `json:"single"`
	SpecialTokens map[string]templateSpecialJSON `json:"special_tokens"`
	Sep           []any                          `json:"sep"`
	Cls           []any                          `json:"cls"`
}

type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type templateItem struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type templateSpecialJSON struct {
	IDs []int32 `json:"ids"`
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func parseComponent(raw json.RawMessage, field string) (*component, error) {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", field, err)
	}
	return &c, nil
}

func (p *patternJSON) get(field string) (pat string, literal bool, err error) {
	switch {
	case p == nil:
		return "", false, fmt.Errorf("%s: missing pattern", field)
	case p.String != nil:
		return *p.String, true, nil
	case p.Regex != nil:
		return *p.Regex, false, nil
	}
	return "", false, fmt.Errorf("%s: pattern needs String or Regex", field)
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func parseNormalizer(raw json.RawMessage, field string) (normalizer, error) {
	c, err := parseComponent(raw, field)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var q seqNormalizer
		for i, r := range c.Normalizers {
			n, err := parseNormalizer(r, fmt.Sprintf("%s.normalizers[%d]", field, i))
			if err != nil {
				return nil, err
			}
			q = append(q, n)
		}
		return q, nil
	case "NFC":
		return unicodeNormalizer{norm.NFC}, nil
	case "NFD":
		return unicodeNormalizer{norm.NFD}, nil
	case "NFKC":
		return unicodeNormalizer{norm.NFKC}, nil
	case "NFKD":
		return unicodeNormalizer{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNormalizer{}, nil
	case "StripAccents":
		return stripAccentsNormalizer{}, nil
	case "Strip":
		return stripNormalizer{c.StripLeft, c.StripRight}, nil
	case "Prepend":
		return prependNormalizer{c.Prepend}, nil
	case "Replace":
		pat, literal, err := c.Pattern.get(field)
		if err != nil {
			return nil, err
		}
		n := replaceNormalizer{literal: pat, content: deref(c.Content)}
		if !literal {
			if n.re, err = newPatternMatcher(pat, false); err != nil {
				return nil, fmt.Errorf("%s: Replace: %v", field, err)
			}
		}
		return n, nil
	case "BertNormalizer":
		lower := boolOr(c.Lowercase, true)
		return bertNormalizer{
			cleanText:    boolOr(c.CleanText, true),
			chineseChars: boolOr(c.HandleChinese, true),
			stripAccents: boolOr(c.StripAccents, lower),
			lowercase:    lower,
		}, nil
	case "Precompiled":
		if c.PrecompiledChars == "" {
			return seqNormalizer{}, nil
		}
	}
	return nil, fmt.Errorf("%s: unsupported normalizer type %q", field, c.Type)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// parsePreTokenizer parses a pre-tokenizer. byteLevel reports a ByteLevel
// step, which must come last (the model maps bytes to its alphabet).
func parsePreTokenizer(raw json.RawMessage, field string) (p preTokenizer, byteLevel bool, err error) {
	c, err := parseComponent(raw, field)
	if err != nil {
		return nil, false, err
	}
	switch c.Type {
	case "Sequence":
		var q seqPre
		for i, r := range c.PreTokenizers {
			if byteLevel {
				return nil, false, fmt.Errorf("%s.pretokenizers[%d]: unsupported: a pre-tokenizer after ByteLevel", field, i)
			}
			sub, bl, err := parsePreTokenizer(r, fmt.Sprintf("%s.pretokenizers[%d]", field, i))
			if err != nil {
				return nil, false, err
			}
			byteLevel = bl
			// ByteLevel without regex or prefix space changes nothing in the
			// raw-byte representation.
			if b, ok := sub.(byteLevelPre); ok && !b.useRegex && !b.addPrefixSpace {
				continue
			}
			q = append(q, sub)
		}
		if len(q) == 1 {
			return q[0], byteLevel, nil
		}
		return q, byteLevel, nil
	case "ByteLevel":
		return byteLevelPre{addPrefixSpace: boolOr(c.AddPrefixSpace, true), useRegex: boolOr(c.UseRegex, true)}, true, nil
	case "Split":
		pat, literal, err := c.Pattern.get(field)
		if err != nil {
			return nil, false, err
		}
		m, err := newPatternMatcher(pat, literal)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %v", field, err)
		}
		beh, err := parseBehavior(c.Behavior)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %v", field, err)
		}
		return &splitPre{m: m, behavior: beh, invert: c.Invert, isolated: beh == behIsolated && !c.Invert}, false, nil
	case "Metaspace":
		m := metaspacePre{replacement: c.Replacement, prepend: c.PrependScheme, splitOn: boolOr(c.Split, true)}
		if m.replacement == "" {
			m.replacement = "▁"
		}
		if m.prepend == "" {
			m.prepend = "always"
			if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
				m.prepend = "never"
			}
		}
		if m.prepend != "always" && m.prepend != "never" && m.prepend != "first" {
			return nil, false, fmt.Errorf("%s: unsupported Metaspace prepend_scheme %q", field, m.prepend)
		}
		return m, false, nil
	case "BertPreTokenizer":
		return funcPre{remove: unicode.IsSpace, isolate: isBertPunct}, false, nil
	case "WhitespaceSplit":
		return funcPre{remove: unicode.IsSpace}, false, nil
	case "Punctuation":
		if c.Behavior != "" && c.Behavior != "Isolated" {
			return nil, false, fmt.Errorf("%s: unsupported Punctuation behavior %q", field, c.Behavior)
		}
		return funcPre{isolate: isBertPunct}, false, nil
	case "CharDelimiterSplit":
		d, size := utf8.DecodeRuneInString(c.Delimiter)
		if size == 0 || size != len(c.Delimiter) {
			return nil, false, fmt.Errorf("%s: CharDelimiterSplit delimiter %q must be one character", field, c.Delimiter)
		}
		return funcPre{remove: func(r rune) bool { return r == d }}, false, nil
	case "Whitespace": // \w+|[^\w\s]+
		return charClassPre{func(r rune) int {
			switch {
			case isOnigWord(r):
				return 1
			case unicode.IsSpace(r):
				return 0
			}
			return 2
		}}, false, nil
	case "Digits":
		individual := c.IndividualDigits
		return charClassPre{func(r rune) int {
			if unicode.IsNumber(r) {
				if individual {
					return -1
				}
				return 2
			}
			return 1
		}}, false, nil
	}
	return nil, false, fmt.Errorf("%s: unsupported pre_tokenizer type %q", field, c.Type)
}

func parseDecoder(raw json.RawMessage, field string) (decoder, error) {
	c, err := parseComponent(raw, field)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var q seqDecoder
		for i, r := range c.Decoders {
			d, err := parseDecoder(r, fmt.Sprintf("%s.decoders[%d]", field, i))
			if err != nil {
				return nil, err
			}
			q = append(q, d)
		}
		return q, nil
	case "ByteLevel":
		return byteLevelDecoder{}, nil
	case "Replace":
		pat, literal, err := c.Pattern.get(field)
		if err != nil {
			return nil, err
		}
		if !literal {
			return nil, fmt.Errorf("%s: unsupported Replace decoder with a Regex pattern", field)
		}
		return replaceDecoder{pat, deref(c.Content)}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Strip":
		return stripDecoder{deref(c.Content), c.Start, c.Stop}, nil
	case "WordPiece":
		prefix := c.Prefix
		if prefix == "" {
			prefix = "##"
		}
		return wordPieceDecoder{prefix, boolOr(c.Cleanup, true)}, nil
	case "Metaspace":
		rep := c.Replacement
		if rep == "" {
			rep = "▁"
		}
		prepend := c.PrependScheme != "never"
		if c.PrependScheme == "" && c.AddPrefixSpace != nil {
			prepend = *c.AddPrefixSpace
		}
		return metaspaceDecoder{rep, prepend}, nil
	case "BPEDecoder":
		s := c.Suffix
		if s == "" {
			s = "</w>"
		}
		return bpeDecoder{s}, nil
	}
	return nil, fmt.Errorf("%s: unsupported decoder type %q", field, c.Type)
}

func parsePostProcessor(raw json.RawMessage, field string) (postProcessor, error) {
	c, err := parseComponent(raw, field)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var q seqPost
		for i, r := range c.Processors {
			p, err := parsePostProcessor(r, fmt.Sprintf("%s.processors[%d]", field, i))
			if err != nil {
				return nil, err
			}
			q = append(q, p)
		}
		return q, nil
	case "ByteLevel":
		return templatePost{}, nil
	case "TemplateProcessing":
		var p templatePost
		seen := false
		for i, it := range c.Single {
			switch {
			case it.Sequence != nil:
				if seen || it.Sequence.ID != "A" {
					return nil, fmt.Errorf("%s.single[%d]: unsupported sequence %q in a single template", field, i, it.Sequence.ID)
				}
				seen = true
			case it.SpecialToken != nil:
				sp, ok := c.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("%s.single[%d]: special token %q missing from special_tokens", field, i, it.SpecialToken.ID)
				}
				if seen {
					p.after = append(p.after, sp.IDs...)
				} else {
					p.before = append(p.before, sp.IDs...)
				}
			default:
				return nil, fmt.Errorf("%s.single[%d]: unknown template item", field, i)
			}
		}
		return p, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := tokenPair(c.Cls, field+".cls")
		if err != nil {
			return nil, err
		}
		sep, err := tokenPair(c.Sep, field+".sep")
		if err != nil {
			return nil, err
		}
		return templatePost{before: []int32{cls}, after: []int32{sep}}, nil
	}
	return nil, fmt.Errorf("%s: unsupported post_processor type %q", field, c.Type)
}

// tokenPair reads ["[CLS]", 101] and returns the id.
func tokenPair(v []any, field string) (int32, error) {
	if len(v) != 2 {
		return 0, fmt.Errorf("%s: want [token, id]", field)
	}
	f, ok := v[1].(float64)
	if !ok || f < 0 || f != float64(int32(f)) {
		return 0, fmt.Errorf("%s: bad id %v", field, v[1])
	}
	return int32(f), nil
}

// modelJSON is the "model" object (BPE, WordPiece; the type field is
// optional in older files).
type modelJSON struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Dropout                 *float64        `json:"dropout"`
	MaxInputCharsPerWord    *int            `json:"max_input_chars_per_word"`
}

func (m *modelJSON) kind() string {
	if m.Type != "" {
		return m.Type
	}
	switch {
	case !isNull(m.Merges):
		return "BPE"
	case m.MaxInputCharsPerWord != nil || m.ContinuingSubwordPrefix != nil:
		return "WordPiece"
	case bytes.HasPrefix(bytes.TrimSpace(m.Vocab), []byte("[")):
		return "Unigram"
	}
	return "WordLevel"
}

// maxID bounds token ids (16M, far above any real vocabulary) so that a
// corrupt file cannot make the loader allocate gigabytes.
const maxID = 1 << 24

// parsedModel is a model plus its vocabulary.
type parsedModel struct {
	m     model
	vocab map[string]int32
	bpe   *bpeModel // non-nil for BPE
}

func parseModel(raw json.RawMessage) (*parsedModel, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("model: missing")
	}
	var mj modelJSON
	if err := json.Unmarshal(raw, &mj); err != nil {
		return nil, fmt.Errorf("model: %v", err)
	}
	kind := mj.kind()
	var vocab map[string]int32
	if kind == "BPE" || kind == "WordPiece" || kind == "WordLevel" {
		if err := json.Unmarshal(mj.Vocab, &vocab); err != nil {
			return nil, fmt.Errorf("model.vocab: %v", err)
		}
		for tok, id := range vocab {
			if id < 0 || id >= maxID {
				return nil, fmt.Errorf("model.vocab: token %q has id %d outside [0, %d)", tok, id, maxID)
			}
		}
	}
	unk := func() (int32, error) {
		if mj.UnkToken == nil {
			return -1, nil
		}
		id, ok := vocab[*mj.UnkToken]
		if !ok {
			return 0, fmt.Errorf("model.unk_token %q not in vocab", *mj.UnkToken)
		}
		return id, nil
	}
	switch kind {
	case "BPE":
		merges, err := parseMerges(mj.Merges)
		if err != nil {
			return nil, err
		}
		if mj.Dropout != nil && *mj.Dropout > 0 {
			return nil, fmt.Errorf("model: unsupported BPE dropout %v (training-time only)", *mj.Dropout)
		}
		b, err := newBPE(vocab, merges)
		if err != nil {
			return nil, err
		}
		if b.unkID, err = unk(); err != nil {
			return nil, err
		}
		b.fuseUnk, b.byteFallback, b.ignoreMerges = mj.FuseUnk, mj.ByteFallback, mj.IgnoreMerges
		b.prefix, b.suffix = deref(mj.ContinuingSubwordPrefix), deref(mj.EndOfWordSuffix)
		b.initMetaSplit()
		return &parsedModel{m: b, vocab: vocab, bpe: b}, nil
	case "WordPiece":
		w := &wordPieceModel{vocab: vocab, prefix: "##", maxChars: 100, cache: newWordCache()}
		if mj.ContinuingSubwordPrefix != nil {
			w.prefix = *mj.ContinuingSubwordPrefix
		}
		if mj.MaxInputCharsPerWord != nil {
			w.maxChars = *mj.MaxInputCharsPerWord
		}
		if mj.UnkToken == nil {
			s := "[UNK]"
			mj.UnkToken = &s
		}
		var err error
		if w.unkID, err = unk(); err != nil {
			return nil, err
		}
		for tok := range vocab {
			w.maxLen = max(w.maxLen, len(tok))
		}
		return &parsedModel{m: w, vocab: vocab}, nil
	}
	return nil, fmt.Errorf("model: unsupported model type %q", kind)
}

func parseMerges(raw json.RawMessage) ([][2]string, error) {
	var asStrings []string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		out := make([][2]string, len(asStrings))
		for i, s := range asStrings {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("model.merges[%d] %q: want two tokens separated by one space", i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("model.merges: want [\"a b\", ...] or [[\"a\", \"b\"], ...]: %v", err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: want 2 tokens, got %d", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}
