package models

import (
	"slices"
	"testing"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/engine/tokenizer"
)

// The bundled checkpoint must load in the engine unchanged, carry the
// spam/ham classifier head with its labels, and come with a tokenizer whose
// vocabulary matches the config.
func TestBundledDefaultLoads(t *testing.T) {
	dir, err := DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	ck, err := engine.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Generation == nil || !slices.Equal(ck.Generation.Labels, []string{"ham", "spam"}) {
		t.Fatalf("generation.json labels = %v, want [ham spam]", ck.Generation)
	}
	if n := ck.NumLabels(); n != 2 {
		t.Fatalf("head.cls has %d labels, want 2", n)
	}
	tok, err := tokenizer.Load(dir + "/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != ck.Config.VocabSize {
		t.Fatalf("tokenizer has %d ids, config vocab_size %d", tok.VocabSize(), ck.Config.VocabSize)
	}
	for id, want := range []string{"<pad>", "<bos>", "<eos>"} {
		if got := tok.IDToken(int32(id)); got != want {
			t.Errorf("token %d = %q, want %q", id, got, want)
		}
	}
	t.Setenv(EnvVar, "")
	if Resolved, src, err := Resolve("", Spam); err != nil || src != SourceDefault || Resolved != dir {
		t.Errorf("Resolve(\"\") with no env = %q, %q, %v", Resolved, src, err)
	}
}
