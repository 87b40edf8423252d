package tokenizer

// Encoder is the tokenizer interface the pipeline and trainer use. The
// pure-Go *Tokenizer implements it; so does *HFTokenizer, the optional
// Hugging Face (Rust, cgo) backend built with -tags hftokenizers.
type Encoder interface {
	// Encode returns the ids of text; addSpecial applies the post-processor.
	Encode(text string, addSpecial bool) []int32
	// EncodeBatch encodes texts on workers goroutines, in order.
	EncodeBatch(texts []string, addSpecial bool, workers int) [][]int32
	// Decode turns ids back into text.
	Decode(ids []int32, skipSpecial bool) string
	// VocabSize returns the number of ids.
	VocabSize() int
	// TokenID returns the id of a token string.
	TokenID(tok string) (int32, bool)
	// IDToken returns the token string of an id ("" if out of range).
	IDToken(id int32) string
}

var _ Encoder = (*Tokenizer)(nil)
