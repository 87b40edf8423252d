package models

import (
	"bytes"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/amx"
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
		{BaseTiny, 64, 2},
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
	ta, err := fs.ReadFile(a, "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{BaseSmall, BaseTiny} {
		b, err := FS(name)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := fs.ReadFile(b, "tokenizer.json")
		if err != nil || !bytes.Equal(ta, tb) {
			t.Errorf("base and %s tokenizers differ (error %v)", name, err)
		}
	}
}

// The bundled models run with int8 weights (engine.ModelOptions.Int8)
// close to their exact selves on real text: the language models' mean
// log-probability per token within 0.05 nats, the spam head's scores
// within 0.05 and its label unchanged.
func TestBundledInt8(t *testing.T) {
	texts := []string{
		"Dear friend, you have been selected to receive a free prize. Click the link below to claim your reward today!",
		"Hi Bob,\n\nthe build on the release branch fails since yesterday's merge; could you have a look at the linker error?\n\nThanks,\nAlice",
		"Copyright: 2008-2012 Jane Doe <jane@example.org>\nLicense: GPL-2+",
		"NAME\n       grep - print lines that match patterns",
	}
	for _, name := range []string{Base, BaseSmall, BaseTiny, Spam} {
		ck, tok := loadBundled(t, name)
		var docs [][]int32
		for _, s := range texts {
			docs = append(docs, tok.Encode(s, true))
		}
		want := engine.Want{LogProbs: true, Classify: ck.NumLabels() > 0}
		var res [2][]engine.Result
		for i, q := range []bool{false, true} {
			m, err := engine.NewModelWith(ck, amx.Selected(), engine.ModelOptions{Int8: q})
			if err != nil {
				t.Fatal(err)
			}
			if res[i], err = engine.NewInstance(m).Prefill(docs, want); err != nil {
				t.Fatal(err)
			}
		}
		for d := range docs {
			a, b := res[0][d], res[1][d]
			var diff float64
			for i := range a.LogProbs {
				diff += float64(b.LogProbs[i]) - float64(a.LogProbs[i])
			}
			diff /= float64(len(a.LogProbs))
			t.Logf("%s doc %d: int8 − exact mean log-prob %+.4f nats/token", name, d, diff)
			if math.Abs(diff) > 0.05 {
				t.Errorf("%s doc %d: int8 mean log-prob differs by %.4f nats/token, want ≤ 0.05", name, d, diff)
			}
			for i := range a.Class {
				if math.Abs(float64(a.Class[i]-b.Class[i])) > 0.05 {
					t.Errorf("%s doc %d: class score %d: exact %.4f, int8 %.4f", name, d, i, a.Class[i], b.Class[i])
				}
			}
			if len(a.Class) > 0 && slices.Index(a.Class, slices.Max(a.Class)) != slices.Index(b.Class, slices.Max(b.Class)) {
				t.Errorf("%s doc %d: label changed under int8: %v vs %v", name, d, a.Class, b.Class)
			}
		}
	}
}

// The bundled bases must be trained language models, not just loadable
// files: on plain English sentences (written for this test, so none is in
// their corpus) each must give the sentences a clearly higher mean
// log-probability per token than the same words shuffled. A checkpoint with
// random or scrambled weights has no such margin (a random tiny.json model:
// −0.08). The margins measured when this test was written: base 3.01,
// base-small 2.35, base-tiny 2.06 nats/token.
func TestBundledBasesPreferEnglish(t *testing.T) {
	texts := []string{
		"The train was late again this morning, so we walked to the office and arrived just before the meeting started.",
		"She opened the window to let in some fresh air, and the sound of children playing in the park filled the room.",
		"If you want to change the settings, open the configuration file in a text editor and restart the service.",
		"After the storm had passed, the farmers went out to count the damaged trees and repair the broken fences.",
		"Please send me the report by Friday so that I have enough time to read it before the board meets next week.",
		"The museum is closed on Mondays, but on every other day of the week it opens at ten and closes at six.",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var shuffled []string
	for _, s := range texts {
		w := strings.Fields(s)
		rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
		shuffled = append(shuffled, strings.Join(w, " "))
	}
	for _, name := range []string{Base, BaseSmall, BaseTiny} {
		ck, tok := loadBundled(t, name)
		m, err := engine.NewModelWith(ck, amx.Selected(), engine.ModelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mean := func(texts []string) float64 {
			var docs [][]int32
			for _, s := range texts {
				docs = append(docs, tok.Encode(s, true))
			}
			res, err := engine.NewInstance(m).Prefill(docs, engine.Want{LogProbs: true})
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			n := 0
			for _, r := range res {
				for _, lp := range r.LogProbs {
					sum += float64(lp)
					n++
				}
			}
			return sum / float64(n)
		}
		english, words := mean(texts), mean(shuffled)
		t.Logf("%s: mean log-prob per token %.3f (English) vs %.3f (shuffled words): margin %.2f nats", name, english, words, english-words)
		if english-words < 1 {
			t.Errorf("%s: English beats its shuffled words by %.2f nats/token, want ≥ 1 (a trained language model)", name, english-words)
		}
	}
}

// loadBundled loads the bundled checkpoint name and its tokenizer.
func loadBundled(t *testing.T, name string) (*engine.Checkpoint, *tokenizer.Tokenizer) {
	t.Helper()
	dir, err := BundledDir(name)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := engine.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir + "/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	return ck, tok
}
