package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/onecore-dev/onecore/jobs"
	"github.com/onecore-dev/onecore/readers"
	"github.com/onecore-dev/onecore/writers"
)

// genDoc is one generated input document.
type genDoc struct{ id, text, url string }

// genDocs makes n documents of varied length (a few over 256 tokens).
func genDocs(n int, seed uint64) []genDoc {
	rng := rand.New(rand.NewPCG(seed, 99))
	words := []string{"the", "cat", "sat", "on", "a", "mat", "winter", "river", "über", "naïve", "42", "—", "\n", "spam!", "offer"}
	docs := make([]genDoc, n)
	for i := range docs {
		k := 1 + rng.IntN(60)
		if i%17 == 5 {
			k = 400 // longer than a 256-token block
		}
		var b strings.Builder
		for j := 0; j < k; j++ {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		docs[i] = genDoc{id: fmt.Sprintf("d%04d", i), text: b.String(), url: fmt.Sprintf("https://x/%d", i)}
	}
	return docs
}

// writeShards writes docs into files under dir, cycling through formats
// (Parquet, JSONL.zst, JSONL), nShards files in all.
func writeShards(t testing.TB, dir string, docs []genDoc, nShards int) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	per := (len(docs) + nShards - 1) / nShards
	for s := 0; s < nShards; s++ {
		lo, hi := s*per, min((s+1)*per, len(docs))
		if lo >= hi {
			break
		}
		part := docs[lo:hi]
		switch s % 3 {
		case 0:
			writeParquetDocs(t, filepath.Join(dir, fmt.Sprintf("s%02d.parquet", s)), part)
		case 1:
			writeJSONL(t, filepath.Join(dir, fmt.Sprintf("s%02d.jsonl.zst", s)), jsonlLines(part), true)
		default:
			writeJSONL(t, filepath.Join(dir, fmt.Sprintf("s%02d.jsonl", s)), jsonlLines(part), false)
		}
	}
}

func jsonlLines(docs []genDoc) []string {
	var lines []string
	for _, d := range docs {
		b, _ := json.Marshal(map[string]string{"id": d.id, "text": d.text, "url": d.url})
		lines = append(lines, string(b))
	}
	return lines
}

func writeJSONL(t testing.TB, path string, lines []string, zst bool) {
	t.Helper()
	data := []byte(strings.Join(lines, "\n") + "\n")
	if zst {
		enc, _ := zstd.NewWriter(nil)
		data = enc.EncodeAll(data, nil)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeParquetDocs(t testing.TB, path string, docs []genDoc) {
	t.Helper()
	b, err := writers.NewDocBuilder([]string{"url"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	w, err := writers.Create(path, writers.Parquet, b.Schema(), writers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		b.Append(&readers.Document{ID: d.id, Text: d.text, Keep: []readers.Value{{S: d.url, Valid: true}}})
	}
	rec := b.NewRecord()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// realConfig is a run over real shards with the real engine and writers.
func realConfig(t testing.TB, model, in, out string, task jobs.Task, workers int) Config {
	t.Helper()
	j := &jobs.Job{Task: task, Keep: []string{"url"}, MaxTokens: 300}
	if task == jobs.TaskExtract {
		j.Question = "what?"
		j.MaxNewTokens = 4
		j.Window = 64 // longer documents are decoded as windows (tasks.go)
	}
	if err := j.Normalize(); err != nil {
		t.Fatal(err)
	}
	m, tok, err := LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := ExpandInputs([]string{in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Job: j, Shards: shards, Source: ReaderSource{}, Tokenizer: tok, Model: m, ModelID: "tiny",
		Create: CreateWriter, Out: out, Format: "jsonl", Workers: workers, Pin: true}
}

// TestRealStackInvariance runs the real readers, tokenizer, engine and
// writers: every row in is out or rejected, and per-document results are
// identical for 1 vs 2 workers, other pack sizes, and a different,
// shuffled split of the same documents into shards.
func TestRealStackInvariance(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	docs := genDocs(90, 1)
	inA := filepath.Join(tmp, "a")
	writeShards(t, inA, docs, 3)
	shuffled := append([]genDoc(nil), docs...)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	inB := filepath.Join(tmp, "b")
	writeShards(t, inB, shuffled, 5)

	for _, task := range jobs.Tasks {
		t.Run(string(task), func(t *testing.T) {
			run := func(in string, workers, pack int) map[string]map[string]any {
				out := filepath.Join(t.TempDir(), "out")
				cfg := realConfig(t, model, in, out, task, workers)
				cfg.PackTok = pack
				sum, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if sum.RowsIn != int64(len(docs)) || sum.RowsOut != sum.RowsIn || sum.Rejected != 0 {
					t.Fatalf("summary %+v", sum)
				}
				return byID(t, readRows(t, out))
			}
			ref := run(inA, 1, 1024)
			for name, got := range map[string]map[string]map[string]any{
				"2 workers, pack 300":     run(inA, 2, 300),
				"resplit, shuffled, 2 w.": run(inB, 2, 700),
			} {
				if len(got) != len(ref) {
					t.Fatalf("%s: %d rows, want %d", name, len(got), len(ref))
				}
				for id, r := range ref {
					if fmt.Sprint(r) != fmt.Sprint(got[id]) {
						t.Fatalf("%s: document %s differs:\n%v\n%v", name, id, r, got[id])
					}
				}
			}
			if task == jobs.TaskClassify && ref["d0001"]["label"] == nil {
				t.Fatalf("no label: %v", ref["d0001"])
			}
		})
	}
}

func TestRealExtractive(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	docs := genDocs(20, 3)
	writeShards(t, filepath.Join(tmp, "in"), docs, 2)
	out := filepath.Join(tmp, "out")
	cfg := realConfig(t, model, filepath.Join(tmp, "in"), out, jobs.TaskExtract, 2)
	cfg.Job.Extractive = true
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	text := map[string]string{}
	for _, d := range docs {
		text[d.id] = d.text
	}
	answered := 0
	for id, r := range byID(t, readRows(t, out)) {
		a := r["answer"].(string)
		if !strings.Contains(text[id], a) {
			t.Fatalf("%s: answer %q is not a span of the document", id, a)
		}
		if r["abstained"] == false {
			answered++
			if r["answer_logprob"].(float64) >= 0 {
				t.Fatalf("%s: log-prob %v", id, r["answer_logprob"])
			}
		}
	}
	t.Logf("%d of %d answered", answered, len(docs))
}
