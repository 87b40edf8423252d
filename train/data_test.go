package train

import (
	"fmt"
	"testing"
)

func corpusOf(lens ...int) *Corpus {
	c := &Corpus{Offs: []int64{0}}
	for i, n := range lens {
		ids := make([]int32, n)
		for j := range ids {
			ids[j] = int32(10 + i)
		}
		c.add(ids)
	}
	return c
}

func TestPackerRows(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lens   []int // document lengths without <bos>/<eos>
		rowLen int
	}{
		{"fits", []int{2, 3, 1}, 8},
		{"long doc split", []int{20}, 8},
		{"mixed", []int{5, 30, 2, 7, 1}, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := corpusOf(tc.lens...)
			p := &Packer{C: c, RowLen: tc.rowLen, Seed: 1}
			seen := map[int32]int{}
			// rows until the second epoch starts (that row may mix epochs)
			for r := 0; r < 100 && p.Cur.Epoch == 0; r++ {
				row := make([]int32, tc.rowLen)
				p.Next(row, nil)
				for i, id := range row {
					if id >= 10 {
						seen[id]++
					}
					// a document starts with <bos> or at the row start, and a
					// short document is never split across rows
					if i > 0 && id >= 10 && row[i-1] != id && row[i-1] != bosID {
						t.Fatalf("row %v: token %d not preceded by its document", row, id)
					}
				}
				for i := 1; i < len(row); i++ {
					if row[i-1] == padID && row[i] != padID {
						t.Fatalf("row %v: padding inside the row", row)
					}
				}
			}
			for i, n := range tc.lens {
				if seen[int32(10+i)] < n {
					t.Errorf("document %d: %d of %d tokens emitted in the first epoch", i, seen[int32(10+i)], n)
				}
			}
		})
	}
}

func TestPackerDeterministicAndLearnFlags(t *testing.T) {
	c := &Corpus{Offs: []int64{0}}
	for i := 0; i < 20; i++ {
		c.addExample(sftExample{prompt: []int32{3, 4, int32(5 + i%3)}, answer: []int32{7, 8}})
	}
	run := func() string {
		p := &Packer{C: c, RowLen: 16, Seed: 7}
		var out string
		for r := 0; r < 10; r++ {
			row, learn := make([]int32, 16), make([]bool, 16)
			p.Next(row, learn)
			tg := make([]int32, 16)
			Targets(row, 16, tg, learn)
			for i, y := range tg {
				if y >= 0 && y != 7 && y != 8 && y != eosID {
					t.Fatalf("row %v: target %d at %d is not an answer token", row, y, i)
				}
			}
			out += fmt.Sprint(row)
		}
		return out
	}
	if a, b := run(), run(); a != b {
		t.Error("same seed, different rows")
	}
}
