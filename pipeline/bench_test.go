package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/jobs"
)

// BenchmarkScore measures, side by side in one process on the default
// dense-3m shape (random weights), scoring throughput of:
//
//	engine:   Instance.Prefill(LogProbs) on prepared token ids, one pinned core
//	readout:  the same prefill with the readout logits only (no log-softmax),
//	          as `onecore bench engine` reports prefill_readout_tok_s
//	pipe-w1:  the whole pipeline (read JSONL, tokenize, pack, engine, collect,
//	          write Parquet) with one engine worker
//	pipe-w2:  the same with two workers
//
// Run: go test ./pipeline -run '^$' -bench BenchmarkScore -benchtime 1x
// (the metric is tok/s; compare the sub-benchmarks' ratios).
func BenchmarkScore(b *testing.B) {
	tmp := b.TempDir()
	model := filepath.Join(tmp, "model")
	c := engine.DefaultConfig()
	if err := engine.SaveCheckpoint(model, &c, engine.InitTensors(&c, 1), nil); err != nil {
		b.Fatal(err)
	}
	writeTokenizer(b, filepath.Join(model, "tokenizer.json"))
	// 96 documents of exactly 256 tokens (the byte-level tokenizer without
	// merges of these characters: one token per byte).
	var docs []genDoc
	for i := range 96 {
		docs = append(docs, genDoc{id: fmt.Sprintf("b%03d", i), text: strings.Repeat(fmt.Sprintf("%c", 'k'+i%10), 255)})
	}
	in := filepath.Join(tmp, "in")
	writeShards(b, in, docs, 4)
	m, tok, err := LoadModel(model)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([][]int32, len(docs))
	for i, d := range docs {
		ids[i] = append([]int32{BOS}, tok.Encode(d.text)...)
	}
	total := float64(len(docs) * 256)
	direct := func(want engine.Want) func(b *testing.B) {
		return func(b *testing.B) {
			engine.PinThread(engine.AllowedCPUs()[0])
			defer runtime.UnlockOSThread()
			inst := engine.NewInstance(m.M)
			b.ResetTimer()
			for range b.N {
				for i := 0; i < len(ids); i += 4 {
					if _, err := inst.Prefill(ids[i:i+4], want); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(total*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		}
	}
	b.Run("engine", direct(engine.Want{LogProbs: true}))
	b.Run("readout", direct(engine.Want{Logits: engine.LogitsAll}))
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("pipe-w%d", w), func(b *testing.B) {
			var busy float64
			for range b.N {
				j := &jobs.Job{Task: jobs.TaskScore, MaxTokens: 256}
				j.Normalize()
				shards, _ := ExpandInputs([]string{in})
				cfg := Config{Job: j, Shards: shards, Source: ReaderSource{}, Tokenizer: tok, Model: m, ModelID: "b",
					Create: CreateWriter, Out: filepath.Join(b.TempDir(), "out"), Workers: w, Pin: true}
				sum, err := Run(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				busy += sum.BusyS["engine"]
			}
			b.ReportMetric(total*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			b.ReportMetric(busy/b.Elapsed().Seconds()/float64(w), "engine-busy-frac")
		})
	}
}
