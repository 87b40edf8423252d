package models

import (
	"bytes"
	"io/fs"
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

// The bundled base models must load as plain language models (no classifier
// head) with the config their READMEs describe, and share one tokenizer, so
// labeled data prepared for one serves the other.
func TestBundledBasesLoad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dModel int
		layers int
	}{
		{Base, 256, 6},
		{BaseSmall, 128, 4},
	} {
		dir, err := BundledDir(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		ck, err := engine.LoadCheckpoint(dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ck.Config.DModel != tc.dModel || len(ck.Config.Layers) != tc.layers {
			t.Errorf("%s: d_model %d, %d layers; want %d, %d", tc.name, ck.Config.DModel, len(ck.Config.Layers), tc.dModel, tc.layers)
		}
		if n := ck.NumLabels(); n != 0 {
			t.Errorf("%s: a classifier head with %d labels; want a plain language model", tc.name, n)
		}
	}
	a, err := FS(Base)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FS(BaseSmall)
	if err != nil {
		t.Fatal(err)
	}
	ta, errA := fs.ReadFile(a, "tokenizer.json")
	tb, errB := fs.ReadFile(b, "tokenizer.json")
	if errA != nil || errB != nil || !bytes.Equal(ta, tb) {
		t.Errorf("base and base-small tokenizers differ (errors %v, %v)", errA, errB)
	}
}
