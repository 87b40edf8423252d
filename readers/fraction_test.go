package readers_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/onecore-dev/onecore/readers"
)

// TestFraction: a reader reports how much of its shard it has consumed by
// what the shard really holds — Parquet rows of the footer's row count,
// JSON Lines bytes of the (compressed) file — so progress on a zstd Parquet
// file no longer reads 100 % after a tenth of its rows. It never decreases
// and ends at 1.
func TestFraction(t *testing.T) {
	for _, name := range []string{"part-0000.parquet", "part-0001.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			r, err := readers.Open(filepath.Join("..", "testdata", "sample", name), readers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var fracs []float64
			for {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				fracs = append(fracs, r.Fraction())
			}
			if got := r.Fraction(); got != 1 {
				t.Fatalf("after EOF: %v, want 1", got)
			}
			for i := 1; i < len(fracs); i++ {
				if fracs[i] < fracs[i-1] {
					t.Fatalf("fraction went back at row %d: %v -> %v", i, fracs[i-1], fracs[i])
				}
			}
			if mid := fracs[len(fracs)/4]; mid <= 0 || mid >= 0.9 {
				t.Fatalf("a quarter of the rows in: fraction %v", mid)
			}
			if name == "part-0000.parquet" && fracs[len(fracs)/2] != float64(len(fracs)/2+1)/float64(len(fracs)) {
				t.Fatalf("Parquet: fraction %v after %d of %d rows", fracs[len(fracs)/2], len(fracs)/2+1, len(fracs))
			}
		})
	}
}
