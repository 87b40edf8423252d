package train

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wideTok is byteTok shifted past 65536, so its caches store 4-byte tokens.
type wideTok struct{}

func (wideTok) Encode(s string) []int32 {
	ids := byteTok{}.Encode(s)
	for i := range ids {
		ids[i] += 70000
	}
	return ids
}

func (wideTok) Decode([]int32) string { return "" }

// jitterTok is byteTok that sleeps on some documents, so that workers
// finish batches out of order; hook, when set, runs before each document.
type jitterTok struct{ hook func() }

func (j jitterTok) Encode(s string) []int32 {
	if j.hook != nil {
		j.hook()
	}
	h := fnv.New32a()
	h.Write([]byte(s))
	if h.Sum32()%5 == 0 {
		time.Sleep(200 * time.Microsecond)
	}
	return byteTok{}.Encode(s)
}

func (jitterTok) Decode([]int32) string { return "" }

// writeCorpus writes a small mixed corpus under dir: plain text files in a
// tree (with a binary file and a dot-directory the walk skips) and a JSONL
// file of many short documents with two malformed rows.
func writeCorpus(t *testing.T, dir string) []string {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "txt", "sub"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "txt", ".hidden"), 0o755))
	for i := 0; i < 30; i++ {
		must(os.WriteFile(filepath.Join(dir, "txt", "sub", fmt.Sprintf("doc%02d.txt", i)),
			[]byte(strings.Repeat(fmt.Sprintf("text file %d says hello. ", i), 1+i%7)), 0o644))
	}
	must(os.WriteFile(filepath.Join(dir, "txt", "bin.dat"), []byte{1, 0, 2}, 0o644))
	must(os.WriteFile(filepath.Join(dir, "txt", ".hidden", "x.txt"), []byte("hidden"), 0o644))
	var jl strings.Builder
	for i := 0; i < 700; i++ {
		fmt.Fprintf(&jl, "{\"text\": \"row %d: the quick brown fox %s\"}\n", i, strings.Repeat("jumps ", i%13))
		if i == 100 || i == 500 {
			jl.WriteString("{not json\n")
		}
	}
	must(os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(jl.String()), 0o644))
	return []string{filepath.Join(dir, "txt"), filepath.Join(dir, "rows.jsonl")}
}

func cacheOpts(dir string, paths []string, tok Tokenizer, vocab, workers int) TokenCacheOptions {
	return TokenCacheOptions{Dir: dir, Paths: paths, TextField: "text", Tokenizer: tok,
		Vocab: vocab, ValPermille: 100, Workers: workers, LogEvery: time.Millisecond}
}

func openCache(t *testing.T, o TokenCacheOptions) *TokenCache {
	t.Helper()
	c, err := OpenTokenCache(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sameCorpus fails unless a (file-backed) and b (in memory) hold the same
// documents.
func sameCorpus(t *testing.T, name string, a, b *Corpus) {
	t.Helper()
	if !slices.Equal(a.Offs, b.Offs) {
		t.Fatalf("%s: offsets differ: %d docs vs %d", name, a.Docs(), b.Docs())
	}
	for i := 0; i < a.Docs(); i++ {
		if !slices.Equal(a.Doc(i), b.Doc(i)) {
			t.Fatalf("%s: document %d differs", name, i)
		}
	}
}

// packRows returns n rows of rowLen from a packer over c, resumed from a
// copy of its cursor halfway (as --resume does).
func packRows(c *Corpus, rowLen, n int) [][]int32 {
	p := &Packer{C: c, RowLen: rowLen, Seed: 5}
	var rows [][]int32
	for r := 0; r < n; r++ {
		if r == n/2 {
			p = &Packer{C: c, RowLen: rowLen, Seed: 5, Cur: p.Cur}
		}
		row := make([]int32, rowLen)
		p.Next(row, nil)
		rows = append(rows, row)
	}
	return rows
}

// refPackRows is packRows with the Packer.Next of before the token cache
// (slicing in-memory documents), kept as the reference the rows of every
// corpus must still equal, so a resumed run stays bit-identical.
func refPackRows(c *Corpus, rowLen, n int) [][]int32 {
	p := &Packer{C: c, RowLen: rowLen, Seed: 5}
	var rows [][]int32
	for r := 0; r < n; r++ {
		row := make([]int32, rowLen)
		k := 0
		for k < len(row) {
			ord := p.epochOrder()
			if p.Cur.Pos >= len(ord) {
				p.Cur = Cursor{Epoch: p.Cur.Epoch + 1}
				continue
			}
			doc := c.Tokens[c.Offs[ord[p.Cur.Pos]]:c.Offs[ord[p.Cur.Pos]+1]][p.Cur.Off:]
			space := len(row) - k
			if len(doc) <= space || k == 0 || len(doc) > len(row) {
				m := min(len(doc), space)
				copy(row[k:], doc[:m])
				k += m
				if m == len(doc) {
					p.Cur.Pos++
					p.Cur.Off = 0
				} else {
					p.Cur.Off += int64(m)
				}
				continue
			}
			break
		}
		rows = append(rows, row)
	}
	return rows
}

func TestTokenCacheMatchesLoadCorpus(t *testing.T) {
	paths := writeCorpus(t, t.TempDir())
	for _, tc := range []struct {
		name  string
		tok   Tokenizer
		vocab int
		width int
	}{{"uint16", byteTok{}, 259, 2}, {"uint32", wideTok{}, 70259, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			refTrain, refVal, refRejects, err := LoadCorpus(paths, "text", tc.tok, 100)
			if err != nil {
				t.Fatal(err)
			}
			refCounts, err := refTrain.Counts(tc.vocab)
			if err != nil {
				t.Fatal(err)
			}
			c := openCache(t, cacheOpts(t.TempDir(), paths, tc.tok, tc.vocab, 3))
			if !c.Built || c.Train.file.width != tc.width {
				t.Fatalf("built %v, width %d", c.Built, c.Train.file.width)
			}
			if c.Rejects != refRejects || refRejects != 2 {
				t.Errorf("rejects %d, reference %d, want 2", c.Rejects, refRejects)
			}
			if refVal.Docs() == 0 || refTrain.Docs() < 600 {
				t.Fatalf("test corpus too small: %d train, %d val docs", refTrain.Docs(), refVal.Docs())
			}
			sameCorpus(t, "train", c.Train, refTrain)
			sameCorpus(t, "val", c.Val, refVal)
			if !slices.Equal(c.Counts, refCounts) {
				t.Error("unigram counts differ")
			}
			if got, err := c.Train.Counts(tc.vocab); err != nil || !slices.Equal(got, refCounts) {
				t.Errorf("Counts of the cached corpus differ (%v)", err)
			}
			// rows over more than two epochs, resumed halfway
			rowLen := 48
			n := int(2*refTrain.Len()/int64(rowLen)) + 40
			want := refPackRows(refTrain, rowLen, n)
			for name, got := range map[string][][]int32{"cache": packRows(c.Train, rowLen, n), "memory": packRows(refTrain, rowLen, n)} {
				for r := range want {
					if !slices.Equal(got[r], want[r]) {
						t.Fatalf("%s: row %d: %v, reference %v", name, r, got[r], want[r])
					}
				}
			}
		})
	}
}

func TestTokenCacheWorkersDoNotChangeIt(t *testing.T) {
	defer func(d int) { batchDocs = d }(batchDocs)
	batchDocs = 7 // ~100 batches, finished out of order by jitterTok
	paths := writeCorpus(t, t.TempDir())
	var dirs []string
	for _, w := range []int{1, 4} {
		c := openCache(t, cacheOpts(t.TempDir(), paths, jitterTok{}, 259, w))
		dirs = append(dirs, c.Dir)
	}
	if filepath.Base(dirs[0]) != filepath.Base(dirs[1]) {
		t.Errorf("fingerprints differ: %s vs %s", dirs[0], dirs[1])
	}
	for _, f := range []string{"train.tok", "train.off", "val.tok", "val.off", "counts.bin"} {
		a, err1 := os.ReadFile(filepath.Join(dirs[0], f))
		b, err2 := os.ReadFile(filepath.Join(dirs[1], f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s differs between 1 and 4 workers (%v %v, %d vs %d bytes)", f, err1, err2, len(a), len(b))
		}
	}
}

func TestTokenCacheReuseAndInvalidation(t *testing.T) {
	data := t.TempDir()
	paths := writeCorpus(t, data)
	root := t.TempDir()
	o := cacheOpts(root, paths, byteTok{}, 259, 2)
	first := openCache(t, o)
	if !first.Built {
		t.Fatal("first open did not build")
	}
	again := openCache(t, o)
	if again.Built || again.Dir != first.Dir {
		t.Errorf("second open rebuilt (%v) or moved (%s vs %s)", again.Built, again.Dir, first.Dir)
	}
	// a changed input file: new fingerprint, rebuilt, new content
	f := filepath.Join(data, "txt", "sub", "doc03.txt")
	if err := os.WriteFile(f, []byte("a changed document that is new"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(f, later, later)
	changed := openCache(t, o)
	if !changed.Built || changed.Dir == first.Dir {
		t.Fatalf("changed input: built %v, dir %s (was %s)", changed.Built, changed.Dir, first.Dir)
	}
	refTrain, refVal, _, err := LoadCorpus(paths, "text", byteTok{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameCorpus(t, "train", changed.Train, refTrain)
	sameCorpus(t, "val", changed.Val, refVal)
	// another val split is another cache
	o2 := o
	o2.ValPermille = 300
	if c := openCache(t, o2); !c.Built || c.Val.Docs() <= changed.Val.Docs() {
		t.Errorf("val split 300‰: built %v, %d val docs (100‰: %d)", c.Built, c.Val.Docs(), changed.Val.Docs())
	}
	// a damaged cache (truncated token file) is rebuilt, not read
	tokPath := filepath.Join(changed.Dir, "train.tok")
	st, _ := os.Stat(tokPath)
	if err := os.Truncate(tokPath, st.Size()-2); err != nil {
		t.Fatal(err)
	}
	if c := openCache(t, o); !c.Built {
		t.Error("truncated cache was reused")
	} else {
		sameCorpus(t, "rebuilt train", c.Train, refTrain)
	}
}

func TestTokenCacheInterruptedBuildIsNotUsed(t *testing.T) {
	defer func(d int) { batchDocs = d }(batchDocs)
	batchDocs = 16
	paths := writeCorpus(t, t.TempDir())
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	tok := jitterTok{hook: func() {
		if n.Add(1) == 300 {
			cancel()
		}
	}}
	o := cacheOpts(root, paths, tok, 259, 2)
	if _, err := OpenTokenCache(ctx, o); err == nil {
		t.Fatal("build cancelled halfway succeeded")
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("interrupted build left %v", ents)
	}
	// a build killed with SIGKILL leaves its build directory (named after a
	// process that no longer runs); and a cache directory without meta.json
	// cannot be a finished one
	o.Tokenizer = byteTok{}
	files, _ := listInputs(paths)
	fp, _ := o.fingerprint(files)
	stale := filepath.Join(root, "."+fp+".building-999999999")
	half := filepath.Join(root, fp)
	for _, d := range []string{stale, half} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "train.tok"), []byte{1, 2, 3}, 0o644)
	}
	c := openCache(t, o)
	if !c.Built {
		t.Fatal("half-written cache directory was used")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale build directory kept: %v", err)
	}
	refTrain, _, _, _ := LoadCorpus(paths, "text", byteTok{}, 100)
	sameCorpus(t, "train", c.Train, refTrain)
}

func TestTokenCacheVocabCheck(t *testing.T) {
	paths := writeCorpus(t, t.TempDir())
	root := t.TempDir()
	_, err := OpenTokenCache(context.Background(), cacheOpts(root, paths, byteTok{}, 100, 1))
	if err == nil || !strings.Contains(err.Error(), "out of the model's vocabulary") {
		t.Fatalf("ids beyond the vocabulary: %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("failed build left %v", ents)
	}
}
