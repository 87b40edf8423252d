package readers

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// benchJSONL writes n documents of about 2 KB of word text and returns the
// path and the JSONL size.
func benchJSONL(b *testing.B, n int) (string, int64) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 1))
	words := strings.Fields("the quick brown fox jumps over a lazy dog naïve café 日本語 données \"quoted\" back\\slash corpus model token")
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	f, _ := os.Create(path)
	w := bufio.NewWriter(f)
	for i := 0; i < n; i++ {
		var sb strings.Builder
		for sb.Len() < 2000 {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprint("doc-", i), "url": "https://example.com/" + fmt.Sprint(i), "lang": "en", "text": sb.String()})
		w.Write(line)
		w.WriteByte('\n')
	}
	w.Flush()
	f.Close()
	st, _ := os.Stat(path)
	return path, st.Size()
}

// BenchmarkJSONL compares our field-extracting reader with the usual
// bufio.Scanner + encoding/json loop on the same file (bytes = JSONL bytes).
func BenchmarkJSONL(b *testing.B) {
	path, size := benchJSONL(b, 5000)
	b.Run("readers", func(b *testing.B) {
		b.SetBytes(size)
		m := testenv.StartCPU()
		defer m.Report(b, size)
		for range b.N {
			r, err := Open(path, Options{Keep: []string{"url", "lang"}, Borrow: true})
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := r.Next(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
			r.Close()
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(size)
		m := testenv.StartCPU()
		defer m.Report(b, size)
		for range b.N {
			f, _ := os.Open(path)
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			for sc.Scan() {
				var d struct{ ID, Text, URL, Lang string }
				if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
					b.Fatal(err)
				}
			}
			f.Close()
		}
	})
}
