package amx

import (
	"slices"
	"testing"
)

// TestCopyRowsMatchesGeneric: the selected CopyRows and AddRows write exactly the
// block (guard cells around and between rows untouched) on ragged shapes.
func TestCopyRowsMatchesGeneric(t *testing.T) {
	for _, c := range []struct{ rows, cols, ldd, lds int }{
		{1, 1, 1, 1}, {3, 15, 15, 40}, {4, 16, 20, 16}, {5, 17, 17, 33}, {64, 32, 32, 256}, {7, 64, 256, 64}, {2, 100, 101, 100},
	} {
		src := make([]float32, (c.rows-1)*c.lds+c.cols+3)
		for i := range src {
			src[i] = float32(i) + 0.5
		}
		got := make([]float32, (c.rows-1)*c.ldd+c.cols+3)
		want := make([]float32, len(got))
		for i := range got {
			got[i], want[i] = -1, -1
		}
		CopyRows(got, c.ldd, src, c.lds, c.rows, c.cols)
		copyRowsGeneric(want, c.ldd, src, c.lds, c.rows, c.cols)
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: CopyRows differs from the generic loop", c)
		}
		AddRows(got, c.ldd, src, c.lds, c.rows, c.cols)
		addRowsGeneric(want, c.ldd, src, c.lds, c.rows, c.cols)
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: AddRows differs from the generic loop", c)
		}
	}
}
