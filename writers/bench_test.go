package writers

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/readers"
)

// benchRecords builds batches of ~2 KB word-text documents.
func benchRecords(b *testing.B) ([]arrow.RecordBatch, int64) {
	rng := rand.New(rand.NewPCG(2, 2))
	words := strings.Fields("the quick brown fox jumps over a lazy dog naïve café 日本語 données corpus model token pipeline")
	db, _ := NewDocBuilder([]string{"lang"})
	var recs []arrow.RecordBatch
	var text int64
	for i := 0; i < 20000; i++ {
		var sb strings.Builder
		for sb.Len() < 2000 {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		db.Append(&readers.Document{ID: fmt.Sprint("doc-", i), Text: sb.String(), Keep: []readers.Value{{S: "en", Valid: true}}})
		text += int64(sb.Len())
		if db.Len() == 2000 {
			recs = append(recs, db.NewRecord())
		}
	}
	return recs, text
}

// BenchmarkParquetWrite compares our Parquet writer (the string fast path,
// and our pqarrow-based encoder) with pqarrow used with its defaults
// (buffered row groups, zstd default level, dictionaries and statistics on
// every column), on the same records (bytes = text bytes).
func BenchmarkParquetWrite(b *testing.B) {
	recs, text := benchRecords(b)
	dir := b.TempDir()
	ours := func(generic bool) func(b *testing.B) {
		return func(b *testing.B) {
			genericParquet = generic
			defer func() { genericParquet = false }()
			b.SetBytes(text)
			m := testenv.StartCPU()
			defer m.Report(b, text)
			for range b.N {
				w, err := Create(filepath.Join(dir, "a.parquet"), Parquet, recs[0].Schema(), Options{Plain: DocPlainColumns})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if err := w.Write(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// the page-parallel string encoder (what DocSchema files get)
	b.Run("writers", ours(false))
	// the same options through the general pqarrow encoder
	b.Run("writers-pqarrow", ours(true))
	b.Run("pqarrow-defaults", func(b *testing.B) {
		b.SetBytes(text)
		m := testenv.StartCPU()
		defer m.Report(b, text)
		for range b.N {
			f, _ := os.Create(filepath.Join(dir, "b.parquet"))
			fw, err := pqarrow.NewFileWriter(recs[0].Schema(), f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range recs {
				if err := fw.WriteBuffered(r); err != nil {
					b.Fatal(err)
				}
			}
			if err := fw.Close(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
