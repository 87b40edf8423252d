package train

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestValSplitNeverEmpty: a corpus of two or more documents whose hashes
// select none for --val-permille still holds one out (the same one
// whatever the file order); --val-permille 0 and a one-document corpus
// hold out none.
func TestValSplitNeverEmpty(t *testing.T) {
	dir := t.TempDir()
	texts := []string{"alpha beta gamma", "delta epsilon", "zeta eta theta iota", "kappa lambda mu"}
	for i, s := range texts {
		os.WriteFile(filepath.Join(dir, string(rune('a'+i))+".txt"), []byte(s), 0o644)
	}
	var hs []uint64
	for _, s := range texts {
		hs = append(hs, textHash(s))
		if textHash(s)%1000 < 1 {
			t.Fatalf("test texts: %q would be held out at 1‰ anyway", s)
		}
	}
	train, val, _, err := LoadCorpus([]string{dir}, "text", byteTok{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if val.Docs() != 1 || train.Docs() != 3 || len(train.Tokens)+len(val.Tokens) != len("alpha beta gammadelta epsilonzeta eta theta iotakappa lambda mu")+8 {
		t.Fatalf("val %d docs, train %d docs (%d+%d tokens); want 1 and 3, every token kept", val.Docs(), train.Docs(), len(val.Tokens), len(train.Tokens))
	}
	held := heldOutSplit(hs, 1)
	for i, h := range held {
		if got := (byteTok{}).Decode(val.Doc(0)[1 : len(val.Doc(0))-1]); h && got != texts[i] {
			t.Errorf("LoadCorpus held out %q, heldOutSplit chose %q", got, texts[i])
		}
	}
	for i := range train.Offs[1:] {
		if d := train.Doc(i); d[0] != bosID || d[len(d)-1] != eosID {
			t.Errorf("training document %d is not <bos> … <eos> after the removal: %v", i, d)
		}
	}
	// the choice does not depend on the order
	rev := []uint64{hs[3], hs[2], hs[1], hs[0]}
	hr := heldOutSplit(rev, 1)
	for i := range held {
		if held[i] != hr[3-i] {
			t.Errorf("held-out choice depends on the order: %v vs reversed %v", held, hr)
		}
	}
	// the token cache (what pretrain reads) holds out the same document
	o := cacheOpts(t.TempDir(), []string{dir}, byteTok{}, 300, 2)
	o.ValPermille = 1
	c := openCache(t, o)
	sameCorpus(t, "cache train", c.Train, train)
	sameCorpus(t, "cache val", c.Val, val)
	want, _ := train.Counts(300)
	if !slices.Equal(c.Counts, want) {
		t.Error("cache counts include the held-out document")
	}
	if _, val, _, _ := LoadCorpus([]string{dir}, "text", byteTok{}, 0); val.Docs() != 0 {
		t.Errorf("--val-permille 0 held out %d documents", val.Docs())
	}
	one := filepath.Join(dir, "a.txt")
	if _, val, _, _ := LoadCorpus([]string{one}, "text", byteTok{}, 10); val.Docs() != 0 {
		t.Errorf("a one-document corpus held out %d documents", val.Docs())
	}
}

// TestWarmupCapped: warmup is cut to a tenth of the run, never below 1.
func TestWarmupCapped(t *testing.T) {
	for _, c := range []struct{ warmup, total, want int64 }{{200, 97, 9}, {5, 97, 5}, {0, 97, 0}, {200, 5, 1}, {200, 100000, 200}} {
		if got := capWarmup(c.warmup, c.total, quietLog()); got != c.want {
			t.Errorf("capWarmup(%d, %d) = %d, want %d", c.warmup, c.total, got, c.want)
		}
	}
}
