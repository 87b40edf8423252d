package train

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/onecore-dev/onecore/engine"
)

// TestGradSpanHead holds the span loss's gradient, through the head and
// the whole body (MoE, linear attention, SWA), against finite differences:
// packed documents with a span target, a null target and a one-token
// answer, with ends scored at their own row and at the next one (the
// last document token's end at the appended <eos>).
func TestGradSpanHead(t *testing.T) {
	c := tinyConfig(true)
	p := NewParams[float64](ExtractParamSpecs(c))
	ref := randomParams64(c, 4)
	for _, s := range ParamSpecs(c, 0) {
		copy(p.W(s.Name), ref.W(s.Name))
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range p.W(engine.HeadSpanW) {
		p.W(engine.HeadSpanW)[i] = rng.NormFloat64()
	}
	m := NewModel(c, p)
	m.AuxCoef = 0
	m.linChunk, m.linSub = 2, 1
	batch := []spanDoc{
		{ids: []int32{1, 5, 6, 7, 9, 10, 11}, promptLen: 3, ts: 1, te: 3},
		{ids: []int32{1, 5, 8, 4, 4}, promptLen: 3, ts: SpanNull, te: SpanNull},
		{ids: []int32{1, 5, 6, 12, 3, 14}, promptLen: 2, ts: 2, te: 2},
		// ends scored at the next row, over an appended <eos>: a span
		// ending at the document's last token, and a null
		{ids: []int32{1, 5, 6, 7, 9, engine.EosID}, promptLen: 3, endNext: true, ts: 0, te: 1},
		{ids: []int32{1, 5, 7, 8, engine.EosID}, promptLen: 2, endNext: true, ts: SpanNull, te: SpanNull},
		{ids: []int32{1, 5, 6, 13, 9, 10, engine.EosID}, promptLen: 2, endNext: true, ts: 0, te: 0},
	}
	var ids []int32
	for _, d := range batch {
		ids = append(ids, d.ids...)
	}
	checkGrads(t, p, func(grad bool) float64 {
		hf := m.Forward(ids, 0)
		l, dhf := spanHeadLoss(p, hf, batch, 0)
		if grad {
			m.Backward(dhf)
		}
		return l
	})
}

// codeRecords generates the synthetic extraction task: a few clauses
// "the <key> is <code>" in random order, codes of two capitals and two
// digits; the answer is the code after "code", absent in about one record
// in five (then only distractor keys appear).
func codeRecords(n int, seed uint64) []map[string]any {
	rng := rand.New(rand.NewPCG(seed, 7))
	code := func() string {
		return fmt.Sprintf("%c%c%d%d", 'A'+rng.IntN(26), 'A'+rng.IntN(26), rng.IntN(10), rng.IntN(10))
	}
	keys := []string{"id", "pin", "tag", "ref"}
	var recs []map[string]any
	for i := 0; i < n; i++ {
		var clauses []string
		for _, k := range rng.Perm(len(keys))[:2] {
			clauses = append(clauses, fmt.Sprintf("the %s is %s.", keys[k], code()))
		}
		rec := map[string]any{}
		if rng.IntN(5) != 0 {
			ans := code()
			at := rng.IntN(len(clauses) + 1)
			clauses = append(clauses[:at], append([]string{fmt.Sprintf("the code is %s.", ans)}, clauses[at:]...)...)
			rec["answer"] = ans
		}
		rec["text"] = strings.Join(clauses, " ") + fmt.Sprintf(" #%d", i)
		recs = append(recs, rec)
	}
	return recs
}

// askedRecords is the code task with a question per record: documents
// hold "the <key> is <code>." clauses for three of four keys, and the
// question asks for the code or the pin, so the answer depends on the
// question (absent when the asked key is not in the document).
func askedRecords(n int, seed uint64) []map[string]any {
	rng := rand.New(rand.NewPCG(seed, 8))
	code := func() string {
		return fmt.Sprintf("%c%c%d%d", 'A'+rng.IntN(26), 'A'+rng.IntN(26), rng.IntN(10), rng.IntN(10))
	}
	keys := []string{"code", "pin", "id", "tag"}
	var recs []map[string]any
	for i := 0; i < n; i++ {
		asked := keys[rng.IntN(2)]
		rec := map[string]any{"question": "what is the " + asked + "?"}
		var clauses []string
		for _, k := range rng.Perm(len(keys))[:3] {
			v := code()
			clauses = append(clauses, fmt.Sprintf("the %s is %s.", keys[k], v))
			if keys[k] == asked {
				rec["answer"] = v
			}
		}
		rec["text"] = strings.Join(clauses, " ") + fmt.Sprintf(" #%d", i)
		recs = append(recs, rec)
	}
	return recs
}

func writeRecords(t *testing.T, recs []map[string]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.jsonl")
	var b strings.Builder
	for _, r := range recs {
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func extractTestOptions(from, out, data string) ExtractOptions {
	return ExtractOptions{
		From: from, Out: out, Data: []string{data}, TextField: "text", QuestionField: "question", AnswerField: "answer",
		Question: "what is the code?", Tokenizer: byteTok{}, MaxTokens: 128, ValPermille: 200,
		Epochs: 4, LR: 2e-3, HeadLR: 1e-2, BatchTokens: 1024, MaxSpan: 16, Seed: 1, Workers: 2, Samples: 3,
	}
}

// TestExtractFollowsQuestion: with the question before the document, the
// head learns to answer the question asked (code or pin, both in most
// documents) rather than a fixed key.
func TestExtractFollowsQuestion(t *testing.T) {
	from := randomCheckpoint(t)
	o := extractTestOptions(from, t.TempDir(), writeRecords(t, askedRecords(400, 2)))
	o.Question, o.Epochs = "", 6
	rep, err := Extract(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("held-out: EM %.3f F1 %.3f abstain P %.3f R %.3f (%d)", rep.ExactMatch, rep.F1, rep.AbstainPrecision, rep.AbstainRecall, rep.N)
	// answering the other key's code, or always abstaining, scores ≤ 0.5
	if rep.ExactMatch < 0.8 {
		t.Errorf("exact match %.3f, want ≥ 0.8", rep.ExactMatch)
	}
}

// TestExtractLearnsSpans trains a span head (and the body) on the
// synthetic code task from a random model: held-out exact match must be
// far above chance (always abstaining scores about 0.2, a random span
// about 0), and every predicted answer is a substring of its document.
func TestExtractLearnsSpans(t *testing.T) {
	from := randomCheckpoint(t)
	out := t.TempDir()
	o := extractTestOptions(from, out, writeRecords(t, codeRecords(300, 1)))
	var logs strings.Builder
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	rep, err := Extract(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "extract eval") || strings.Contains(l, "extract sample") {
			t.Log(l)
		}
	}
	t.Logf("held-out: EM %.3f F1 %.3f abstain P %.3f R %.3f (%d)", rep.ExactMatch, rep.F1, rep.AbstainPrecision, rep.AbstainRecall, rep.N)
	if rep.ExactMatch < 0.8 {
		t.Errorf("exact match %.3f, want ≥ 0.8", rep.ExactMatch)
	}
	ck, err := engine.LoadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	if s := ck.Shapes[engine.HeadSpanW]; fmt.Sprint(s) != "[64 2]" {
		t.Errorf("saved head.span.w shape %v", s)
	}
	// the tuned threshold is what the checkpoint carries, and it never
	// does worse on the split it was tuned on
	if ck.Generation == nil || ck.Generation.SpanThreshold != rep.Threshold {
		t.Errorf("generation.json %+v, want span_threshold %g", ck.Generation, rep.Threshold)
	}
	if rep.CalibratedExactMatch < rep.ExactMatch {
		t.Errorf("calibrated exact match %.3f below the untuned %.3f", rep.CalibratedExactMatch, rep.ExactMatch)
	}
	// every code is a whole word of its document, on one line
	if !ck.Generation.SpanWholeWords {
		t.Error("generation.json span_whole_words false for answers that are all whole words")
	}
	if !ck.Generation.SpanOneLine {
		t.Error("generation.json span_one_line false for answers that are all on one line")
	}
}

// TestExtractDecodingFlagsFromData: the data decides generation.json's
// span_whole_words and span_one_line — one training answer inside a word
// ("AB12" of "vAB12") keeps answers as the head's tokens give them, one
// across a line break lets answers span lines, and neither flag moves the
// other.
func TestExtractDecodingFlagsFromData(t *testing.T) {
	for _, tc := range []struct {
		name                string
		rec                 map[string]any
		wholeWords, oneLine bool
	}{
		{"inside a word", map[string]any{"text": "the code is vAB12. the id is QZ41.", "answer": "AB12"}, false, true},
		{"two lines", map[string]any{"text": "the codes are\nAB12\nQZ41 here.", "answer": "AB12\nQZ41"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			o := extractTestOptions(randomCheckpoint(t), out, writeRecords(t, append(codeRecords(60, 5), tc.rec)))
			o.Freeze, o.Epochs = true, 1
			if _, err := Extract(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			ck, err := engine.LoadCheckpoint(out)
			if err != nil {
				t.Fatal(err)
			}
			if g := ck.Generation; g.SpanWholeWords != tc.wholeWords || g.SpanOneLine != tc.oneLine {
				t.Errorf("span_whole_words %v, span_one_line %v; want %v, %v", g.SpanWholeWords, g.SpanOneLine, tc.wholeWords, tc.oneLine)
			}
		})
	}
}

// FuzzParseExtractRecord: no record line makes the parser or the answer
// mapping panic; a record that parses gives an answer that is either
// absent or a non-empty byte range of its text that starts and ends on
// character boundaries (for valid UTF-8 text), and a string answer is
// found where it is.
func FuzzParseExtractRecord(f *testing.F) {
	for _, s := range []string{
		`{"text":"the code is AB12.","answer":"AB12"}`,
		`{"text":"Jörg: QX7","question":"who?","answer":[0,4]}`,
		`{"text":"x","question":null,"answer":null}`,
		`{"text":"abc","answer":{"start":1,"end":3}}`,
		`{"text":"abc"}`,
		`{"text":7,"answer":"a"}`,
		`{"text":"a\u00e9b","answer":[1,2]}`,
		`[1,2]`, `{"text":"abc","answer":[2,1]}`, `{"text":"abc","answer":"zz"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseExtractRecord(line, "text", "question", "answer")
		if err != nil {
			return
		}
		as, ae, present, err := ParseSpanAnswer(r.Text, r.Answer)
		if err != nil || !present {
			return
		}
		if as < 0 || ae <= as || ae > len(r.Text) {
			t.Fatalf("answer %s of %q: byte range [%d,%d)", r.Answer, r.Text, as, ae)
		}
		if utf8.ValidString(r.Text) && (!utf8.RuneStart(r.Text[as]) || (ae < len(r.Text) && !utf8.RuneStart(r.Text[ae]))) {
			t.Fatalf("answer %s of %q: [%d,%d) splits a character", r.Answer, r.Text, as, ae)
		}
		var a string
		if json.Unmarshal(r.Answer, &a) == nil && r.Text[as:ae] != a {
			t.Fatalf("string answer %q found as %q", a, r.Text[as:ae])
		}
	})
}

// TestExtractFreezeKeepsBody: with Freeze only head.span.w moves; every
// body weight is bit for bit the source's, weight decay included.
func TestExtractFreezeKeepsBody(t *testing.T) {
	from := randomCheckpoint(t)
	out := t.TempDir()
	o := extractTestOptions(from, out, writeRecords(t, codeRecords(60, 5)))
	o.Freeze, o.Epochs, o.WeightDecay = true, 1, 0.1
	if _, err := Extract(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	src, err := engine.LoadCheckpoint(from)
	if err != nil {
		t.Fatal(err)
	}
	got, err := engine.LoadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range src.Tensors {
		w := got.Tensors[name]
		for i := range v {
			if math.Float32bits(v[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s[%d] moved: %v → %v", name, i, v[i], w[i])
			}
		}
	}
	moved := false
	for _, x := range got.Tensors[engine.HeadSpanW] {
		moved = moved || x != 0
	}
	if !moved {
		t.Fatal("head.span.w did not move")
	}
}

// TestExtractWarnsAmbiguousAnswers: string answers that occur more than
// once in their text are counted in a warning (they train their first
// occurrence); the same answers given as offsets are not.
func TestExtractWarnsAmbiguousAnswers(t *testing.T) {
	from := randomCheckpoint(t)
	recs := codeRecords(40, 5)
	recs = append(recs,
		map[string]any{"text": "the id is QZ41. the code is QZ41.", "answer": "QZ41"},
		map[string]any{"text": "the tag is AB12. the code is AB12.", "answer": "AB12"},
		map[string]any{"text": "the pin is CD34. the code is CD34.", "answer": map[string]int{"start": 28, "end": 32}})
	o := extractTestOptions(from, t.TempDir(), writeRecords(t, recs))
	o.Freeze, o.Epochs = true, 1
	var logs strings.Builder
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := Extract(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var warn string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "occur more than once") {
			warn = l
		}
	}
	if !strings.Contains(warn, "level=WARN") || !strings.Contains(warn, "records=2") {
		t.Fatalf("want a warning counting 2 ambiguous string answers, got %q", warn)
	}
}

// TestExtractAbsenceChecks: data without a single null answer trains with
// a warning that the head will not learn to abstain; data whose every
// answer is null is refused.
func TestExtractAbsenceChecks(t *testing.T) {
	from := randomCheckpoint(t)
	var present, absent []map[string]any
	for _, r := range codeRecords(60, 5) {
		if r["answer"] != nil {
			present = append(present, r)
		} else {
			absent = append(absent, r)
		}
	}
	o := extractTestOptions(from, t.TempDir(), writeRecords(t, present))
	o.Freeze, o.Epochs = true, 1
	var logs strings.Builder
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := Extract(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "will not learn to abstain") {
		t.Errorf("no warning for data without a null answer:\n%s", logs.String())
	}
	o = extractTestOptions(from, t.TempDir(), writeRecords(t, absent))
	o.Freeze, o.Epochs = true, 1
	if _, err := Extract(context.Background(), o); err == nil || !strings.Contains(err.Error(), "every record says the answer is not present") {
		t.Errorf("data without any answer: %v, want a refusal", err)
	}
}
