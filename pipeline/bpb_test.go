package pipeline

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/onecore-dev/onecore/jobs"
)

// TestBitsPerByte: score's bits_per_byte is −Σ log2 p(token) over the
// document's scored tokens divided by the UTF-8 bytes of text they cover:
// the whole text for a document that fits, and only the covered prefix
// (fewer bytes than the text, at least one per token) for a truncated one.
func TestBitsPerByte(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	in := filepath.Join(tmp, "in")
	docs := genDocs(24, 11)
	writeShards(t, in, docs, 1)
	text := map[string]string{}
	for _, d := range docs {
		text[d.id] = d.text
	}
	out := filepath.Join(tmp, "out")
	cfg := realConfig(t, model, in, out, jobs.TaskScore, 1)
	cfg.Job.MaxTokens = 64 // the 400-word documents are cut
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, out)
	if len(rows) != len(docs) {
		t.Fatalf("%d rows", len(rows))
	}
	truncated := 0
	for _, r := range rows {
		id := r["id"].(string)
		n := r["tokens"].(float64) - 1 // scored tokens: after <bos>
		sum := r["mean_logprob"].(float64) * n
		bpb, ok := r["bits_per_byte"].(float64)
		if !ok || bpb <= 0 {
			t.Fatalf("%s: bits_per_byte %v", id, r["bits_per_byte"])
		}
		covered := -sum / math.Ln2 / bpb
		tl := float64(len(text[id]))
		if r["truncated"].(bool) {
			truncated++
			if covered >= tl || covered < n-0.5 {
				t.Errorf("%s truncated to %v tokens: bits_per_byte divides by %.1f bytes of %v", id, n, covered, tl)
			}
		} else if math.Abs(covered-tl) > 1e-6*tl {
			t.Errorf("%s: bits_per_byte divides by %.3f bytes, the text has %v", id, covered, tl)
		}
	}
	if truncated == 0 {
		t.Fatal("no truncated document: the test checks nothing about truncation")
	}
}

// TestCoveredBytes: coveredBytes is the decoded prefix on a byte-level
// tokenizer, and its bisection fallback is within a character of it.
func TestCoveredBytes(t *testing.T) {
	tmp := t.TempDir()
	writeTinyModel(t, tmp)
	_, tok, err := LoadModel(tmp)
	if err != nil {
		t.Fatal(err)
	}
	text := "the naïve cat sat on the über mat — 42 spam! offer"
	ids := tok.Encode(text)
	for k := 1; k < len(ids); k++ {
		want := len(tok.Decode(ids[:k]))
		if got := coveredBytes(tok, text, ids[:k]); got != want {
			t.Errorf("%d tokens: %d bytes, want %d", k, got, want)
		}
		// Bisection cuts between whole characters, and a byte-level token
		// may end inside one: within a character (4 bytes) of the truth.
		if got := coveredBytes(noDecode{tok}, text, ids[:k]); got < want-4 || got > want+4 {
			t.Errorf("%d tokens, by bisection: %d bytes, want %d", k, got, want)
		}
	}
}

// noDecode hides Decode, forcing coveredBytes to bisect.
type noDecode struct{ Tokenizer }

func (noDecode) Decode([]int32) string { return "" }
