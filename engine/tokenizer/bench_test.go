package tokenizer

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// benchText is ~2 MB of real text (Go sources, Moby-Dick, e-mail).
func benchText(b *testing.B) []string {
	b.Helper()
	var texts []string
	size := 0
	add := func(pattern string) {
		files, _ := filepath.Glob(pattern)
		sort.Strings(files)
		for _, f := range files {
			if size > 2_000_000 {
				return
			}
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			texts = append(texts, string(data))
			size += len(data)
		}
	}
	add(filepath.Join(runtime.GOROOT(), "src", "net", "http", "*.go"))
	nm := filepath.Join(testenv.TestDepsDir(), "node", "node_modules", "@stdlib")
	add(filepath.Join(nm, "datasets-moby-dick", "data", "*.txt"))
	add(filepath.Join(nm, "datasets-sotu", "data", "*.txt"))
	return texts
}

func BenchmarkEncode(b *testing.B) {
	texts := benchText(b)
	size := 0
	for _, t := range texts {
		size += len(t)
	}
	for _, name := range []string{"gpt2", "llama3", "llama2", "bert"} {
		b.Run(name, func(b *testing.B) {
			tok, err := Load(tokenizerFile(b, name))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, t := range texts {
					tok.Encode(t, false)
				}
			}
		})
	}
}

// BenchmarkEncodeBatch measures worker scaling: on an idle machine
// workers=2 should take about half the time of workers=1.
func BenchmarkEncodeBatch(b *testing.B) {
	texts := benchText(b)
	size := 0
	for _, t := range texts {
		size += len(t)
	}
	tok, err := Load(tokenizerFile(b, "gpt2"))
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2, 4} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				tok.EncodeBatch(texts, false, workers)
			}
		})
	}
}
