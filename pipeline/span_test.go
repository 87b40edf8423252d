package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/jobs"
)

// writeSpanModel writes the tiny model with a random span head (and no
// classifier head or extract template): every answer is then some span
// or an abstention, which is all the invariance and offset checks need.
// endNext scores ends at the next row (generation.json span_end_next).
func writeSpanModel(t testing.TB, dir string, endNext bool) {
	t.Helper()
	writeTinyModelHead(t, dir, false)
	ck, err := engine.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 14))
	w := make([]float32, 2*ck.Config.DModel)
	for i := range w {
		w[i] = float32(rng.NormFloat64()) * 2
	}
	ck.Tensors[engine.HeadSpanW] = w
	ck.Generation.Templates = nil
	ck.Generation.SpanEndNext = endNext
	if err := engine.SaveCheckpoint(dir, ck.Config, ck.Tensors, ck.Generation); err != nil {
		t.Fatal(err)
	}
}

// TestRealSpanExtract runs task extract with a span-head checkpoint on the
// real stack: every answer is exactly the document's characters
// [answer_start, answer_end) (multi-byte characters split across tokens,
// documents truncated at max_tokens), abstentions have null offsets, and
// rows are identical for 1 vs 2 workers, other pack sizes (a document
// alone in its pack, or packed with others) and a shuffled resplit; for
// ends scored at their own row and at the next one (over an appended
// <eos>).
func TestRealSpanExtract(t *testing.T) {
	for _, endNext := range []bool{false, true} {
		t.Run(fmt.Sprintf("endNext=%v", endNext), func(t *testing.T) { testRealSpanExtract(t, endNext) })
	}
}

func testRealSpanExtract(t *testing.T, endNext bool) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeSpanModel(t, model, endNext)
	docs := genDocs(60, 4)
	inA := filepath.Join(tmp, "a")
	writeShards(t, inA, docs, 3)
	shuffled := append([]genDoc(nil), docs...)
	rand.New(rand.NewPCG(8, 9)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	inB := filepath.Join(tmp, "b")
	writeShards(t, inB, shuffled, 4)
	run := func(in string, workers, pack int) map[string]map[string]any {
		out := filepath.Join(t.TempDir(), "out")
		cfg := realConfig(t, model, in, out, jobs.TaskExtract, workers)
		cfg.Job.MaxSpan = 8
		cfg.PackTok = pack
		sum, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if sum.RowsOut != int64(len(docs)) || sum.Rejected != 0 {
			t.Fatalf("summary %+v", sum)
		}
		return byID(t, readRows(t, out))
	}
	ref := run(inA, 1, 1)
	text := map[string]string{}
	for _, d := range docs {
		text[d.id] = d.text
	}
	answered, truncated := 0, 0
	for id, r := range ref {
		a := r["answer"].(string)
		if r["abstained"].(bool) {
			if a != "" || r["answer_start"] != nil || r["answer_end"] != nil {
				t.Fatalf("%s: abstained with answer %q offsets %v %v", id, a, r["answer_start"], r["answer_end"])
			}
			continue
		}
		answered++
		if r["truncated"].(bool) {
			truncated++
		}
		s, e := int(r["answer_start"].(float64)), int(r["answer_end"].(float64))
		rs := []rune(text[id])
		if s < 0 || e <= s || e > len(rs) || string(rs[s:e]) != a {
			t.Fatalf("%s: answer %q is not the text's characters [%d,%d)", id, a, s, e)
		}
		if lp := r["answer_logprob"].(float64); lp >= 0 {
			t.Fatalf("%s: log-prob %v", id, lp)
		}
	}
	if answered < len(docs)/2 || truncated == 0 {
		t.Fatalf("%d of %d answered (%d truncated): the test does not exercise spans", answered, len(docs), truncated)
	}
	for name, got := range map[string]map[string]map[string]any{
		"2 workers, pack 300":     run(inA, 2, 300),
		"resplit, shuffled, 2 w.": run(inB, 2, 4096),
	} {
		for id, r := range ref {
			if fmt.Sprint(r) != fmt.Sprint(got[id]) {
				t.Fatalf("%s: document %s differs:\n%v\n%v", name, id, r, got[id])
			}
		}
	}
}

// TestExtractRefusesClassifier: a classifier checkpoint with neither span
// head nor extract template cannot run task extract.
func TestExtractRefusesClassifier(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "model")
	writeTinyModel(t, model)
	ck, err := engine.LoadCheckpoint(model)
	if err != nil {
		t.Fatal(err)
	}
	ck.Generation.Templates = nil
	if err := engine.SaveCheckpoint(model, ck.Config, ck.Tensors, ck.Generation); err != nil {
		t.Fatal(err)
	}
	writeShards(t, filepath.Join(tmp, "in"), genDocs(3, 1), 1)
	cfg := realConfig(t, model, filepath.Join(tmp, "in"), filepath.Join(tmp, "out"), jobs.TaskExtract, 1)
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "classifier") {
		t.Fatalf("err %v, want a refusal naming the classifier", err)
	}
}

// plainLM is the fake model without an extract template; spanLM says it
// has a span head.
type plainLM struct{ *fakeModel }

func (plainLM) Template(string) string { return "" }

type spanLM struct{ *fakeModel }

func (spanLM) SpanHead() (bool, SpanOptions) {
	return true, SpanOptions{Threshold: 0.75, WholeWords: true, OneLine: true}
}

// TestExtractModelChecks: which extract a model gets, and what is warned
// about or refused: a plain language model decodes with a warning, a
// classifier without template is refused, a span head is used and says
// which generative settings it ignores.
func TestExtractModelChecks(t *testing.T) {
	job := func(mod func(*jobs.Job)) *jobs.Job {
		j := &jobs.Job{Task: jobs.TaskExtract, Question: "q?"}
		if mod != nil {
			mod(j)
		}
		if err := j.Normalize(); err != nil {
			t.Fatal(err)
		}
		return j
	}
	warns := func(tk task) string {
		if w, ok := tk.(warner); ok {
			return strings.Join(w.warnings(), "\n")
		}
		return ""
	}
	tk, _, err := newTask(job(nil), plainLM{&fakeModel{}}, byteTok{})
	if _, gen := tk.(*extractTask); err != nil || !gen || !strings.Contains(warns(tk), "no span head") {
		t.Fatalf("plain LM: %T %v, warnings %q", tk, err, warns(tk))
	}
	if tk, _, err := newTask(job(nil), &fakeModel{}, byteTok{}); err != nil || warns(tk) != "" {
		t.Fatalf("model with an extract template: %v, warnings %q", err, warns(tk))
	}
	if _, _, err := newTask(job(nil), plainLM{&fakeModel{labels: []string{"a", "b"}}}, byteTok{}); err == nil || !strings.Contains(err.Error(), "classifier") {
		t.Fatalf("classifier: %v, want a refusal", err)
	}
	// a job template makes the classifier's decoding the user's explicit choice
	if _, _, err := newTask(job(func(j *jobs.Job) { j.Template = "{text} Q: {question} A:" }), plainLM{&fakeModel{labels: []string{"a", "b"}}}, byteTok{}); err != nil {
		t.Fatalf("classifier with a job template: %v", err)
	}
	tk, _, err = newTask(job(func(j *jobs.Job) { j.Extractive, j.Template, j.Window = true, "{text}", 64 }), spanLM{&fakeModel{labels: []string{"a", "b"}}}, byteTok{})
	if st, ok := tk.(*spanTask); err != nil || !ok || st.maxSpan != jobs.DefaultMaxSpan || !strings.Contains(warns(tk), "ignoring template, extractive, window") {
		t.Fatalf("span head: %T %v, warnings %q", tk, err, warns(tk))
	}
	// the job's span_threshold shifts the one the model was tuned with
	tk, _, err = newTask(job(func(j *jobs.Job) { j.SpanThreshold = -0.25 }), spanLM{&fakeModel{}}, byteTok{})
	if st, ok := tk.(*spanTask); err != nil || !ok || st.threshold != 0.5 {
		t.Fatalf("span threshold: %T %v, want the model's 0.75 shifted by -0.25", tk, err)
	}
	// the checkpoint's decoding rules reach the task
	if st := tk.(*spanTask); !st.whole || !st.oneLine || st.endNext {
		t.Fatalf("span task whole words %v, one line %v, end next %v; want the model's true, true, false", st.whole, st.oneLine, st.endNext)
	}
	// a head trained before span_end_next is decoded as trained, with a
	// warning to retrain; a current one warns of nothing
	if !strings.Contains(warns(tk), "retrain") {
		t.Fatalf("old-layout span head: warnings %q, want a retrain hint", warns(tk))
	}
	tk, _, err = newTask(job(nil), spanLMNext{&fakeModel{}}, byteTok{})
	if st, ok := tk.(*spanTask); err != nil || !ok || !st.endNext || warns(tk) != "" {
		t.Fatalf("current span head: %T %v, warnings %q", tk, err, warns(tk))
	}
}

// spanLMNext has a span head that scores ends at the next row.
type spanLMNext struct{ *fakeModel }

func (spanLMNext) SpanHead() (bool, SpanOptions) {
	return true, SpanOptions{Threshold: 0.75, WholeWords: true, OneLine: true, EndNext: true}
}

// fixedGen is a worker whose every generation is the same tokens.
type fixedGen struct {
	Worker
	toks []int32
}

func (w fixedGen) Generate(prompts [][]int32, _ GenOptions) ([]Generation, error) {
	out := make([]Generation, len(prompts))
	for i := range out {
		out[i] = Generation{Tokens: w.toks, Stopped: true}
	}
	return out, nil
}

// TestExtractAnswerTrimmed: a generative answer's column is the answer,
// without the space its first BPE token carries or a trailing newline;
// abstention still sees a white-space-only answer.
func TestExtractAnswerTrimmed(t *testing.T) {
	for _, c := range []struct{ gen, want string }{
		{" Stephane Lentz", "Stephane Lentz"},
		{"\tA B \n", "A B"},
		{"x", "x"},
		{" \n", ""},
	} {
		tk := &extractTask{}
		it := &item{seqs: [][]int32{{BOS}}}
		if err := tk.run(fixedGen{toks: byteTok{}.Encode(c.gen)}, byteTok{}, []*item{it}); err != nil {
			t.Fatal(err)
		}
		if it.res.answer != c.want || it.res.abstained != (c.want == "") {
			t.Errorf("generated %q: answer %q abstained %v, want %q", c.gen, it.res.answer, it.res.abstained, c.want)
		}
	}
}
