package tokenizer

import (
	"os"
	"testing"
	"time"
)

func TestDumpScratch(t *testing.T) {
	out := os.Getenv("DUMP")
	if out == "" {
		t.Skip()
	}
	docs, f := parityCorpus(t)
	b, _ := os.ReadFile(f)
	os.WriteFile(out, b, 0o644)
	for _, name := range []string{"gpt2", "llama3", "llama2", "bert"} {
		tok, _ := Load(tokenizerFile(t, name))
		t0 := time.Now()
		n := 0
		for _, d := range docs {
			n += len(tok.Encode(d.text, false))
		}
		t.Logf("%s: %v %d tokens", name, time.Since(t0), n)
	}
}
