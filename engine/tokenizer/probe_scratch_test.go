package tokenizer

import (
	"os"
	"testing"
)

func TestProbeScratch(t *testing.T) {
	name := os.Getenv("PROBE")
	if name == "" {
		t.Skip()
	}
	var docs []doc
	for r := rune(0); r < 0x110000; r++ {
		if r >= 0x32000 && r < 0xE0000 || r >= 0xE01F0 && r%97 != 0 {
			continue
		}
		if r >= 0xD800 && r < 0xE000 {
			continue
		}
		docs = append(docs, doc{string(r), "a" + string(r) + "b " + string(r) + " x" + string(r)})
	}
	f, err := writeJSONL(docs)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f)
	path := tokenizerFile(t, name)
	tok, _ := Load(path)
	want := runOracle(t, path, f, false)
	n := 0
	for i, d := range docs {
		g := tok.Encode(d.text, false)
		if !equalIDs(g, want[i]) {
			n++
			if n < 40 {
				t.Logf("U+%04X %q ours %v oracle %v", []rune(d.source)[0], d.source, g, want[i])
			}
		}
	}
	t.Logf("%d differ", n)
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
