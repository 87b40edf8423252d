//go:build rwprof

package readers

import (
	"io"
	"os"
	"testing"
)

func TestZZReadAll(t *testing.T) {
	r, err := Open(os.Getenv("RWFILE"), Options{Keep: []string{"url", "lang", "score"}, Borrow: true})
	if err != nil {
		t.Fatal(err)
	}
	var n, b int64
	for {
		d, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		b += int64(len(d.Text))
	}
	t.Log(n, b)
}
