package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// extractRow is one extract result with its gold answer (nil: absent).
type extractRow struct {
	gold, answer *string
	abstained    bool
}

func sp(s string) *string { return &s }

// writeExtractResults writes rows as extract's JSON Lines output with the
// gold answer kept beside it (--keep answer:gold).
func writeExtractResults(t *testing.T, path string, rows []extractRow) {
	t.Helper()
	var b strings.Builder
	for i, r := range rows {
		rec := map[string]any{"id": fmt.Sprint(i), "answer": r.answer, "abstained": r.abstained, "gold": r.gold}
		line, _ := json.Marshal(rec)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEvalExtract: hand-computed metrics of extract results.
//
//	row 0 gold "Ann Lee", answer " Ann Lee " → exact, F1 1
//	row 1 gold "Ann Lee", answer "Ann"       → wrong, F1 2·1·½/1½ = 2/3
//	row 2 gold "Bob",     abstained          → wrong (absent predicted), F1 0
//	row 3 gold null,      abstained          → exact (absent, abstained)
//	row 4 gold null,      answer "Eve"       → wrong (answered, absent)
//	EM 2/5; token F1 (1 + 2/3 + 0)/3 = 5/9; abstention: tp 1, fp 1 (row 2),
//	fn 1 (row 4) → P ½, R ½, F1 ½
func TestEvalExtract(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	writeExtractResults(t, path, []extractRow{
		{sp("Ann Lee"), sp(" Ann Lee "), false},
		{sp("Ann Lee"), sp("Ann"), false},
		{sp("Bob"), sp("none"), true},
		{nil, sp(""), true},
		{nil, sp("Eve"), false},
	})
	var out bytes.Buffer
	jsonOut := filepath.Join(t.TempDir(), "m.json")
	if err := runEval(&out, evalFlags{pred: path, goldColumn: "gold", jsonOut: jsonOut}); err != nil {
		t.Fatal(err)
	}
	var m extractMetrics
	b, _ := os.ReadFile(jsonOut)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if m.Head != headExtract || m.Rows != 5 || m.GoldAbsent != 2 || m.Abstained != 2 || m.AnsweredBad != 1 ||
		!near(m.ExactMatch, 0.4) || !near(m.TokenF1, 5.0/9) || !near(m.AbstainP, 0.5) || !near(m.AbstainR, 0.5) || !near(m.AbstainF1, 0.5) {
		t.Fatalf("metrics %+v", m)
	}
	for _, want := range []string{"exact match   0.4000", "token F1      0.5556", "precision 0.5000"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestEvalExtractMatchesScorePy holds eval's extract metrics to the
// benchmark's scorer (bench/extract/score.py, Python) on random results
// with punctuation, case and non-ASCII letters.
func TestEvalExtractMatchesScorePy(t *testing.T) {
	py := testenv.LookPath(t, "python3")
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"Ann", "ann", "Lee", "Müller", "José", "#1004785", "1004785", "a.b", "(c)", "2008-2022,", "Inc.", "naïve", "x_y", "—", "日本"}
	phrase := func() string {
		n := 1 + rng.IntN(4)
		var p []string
		for range n {
			p = append(p, words[rng.IntN(len(words))])
		}
		return strings.Join(p, " ")
	}
	var rows []extractRow
	for range 300 {
		var r extractRow
		if rng.IntN(5) > 0 {
			r.gold = sp(phrase())
		}
		switch rng.IntN(4) {
		case 0:
			r.answer, r.abstained = sp("none"), true
		case 1:
			if r.gold != nil {
				r.answer = sp(" " + *r.gold)
				break
			}
			r.answer = sp(phrase())
		default:
			r.answer = sp(phrase())
		}
		rows = append(rows, r)
	}
	dir := t.TempDir()
	pred := filepath.Join(dir, "pred.jsonl")
	writeExtractResults(t, pred, rows)
	var gold strings.Builder
	for i, r := range rows {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprint(i), "answer": r.gold})
		gold.Write(line)
		gold.WriteByte('\n')
	}
	goldPath := filepath.Join(dir, "gold.jsonl")
	os.WriteFile(goldPath, []byte(gold.String()), 0o644)
	outPy, err := exec.Command(py, filepath.Join(testenv.RepoRoot(), "bench", "extract", "score.py"), goldPath, pred, "--json").Output()
	if err != nil {
		t.Fatalf("score.py: %v", err)
	}
	var want map[string]float64
	if err := json.Unmarshal(outPy, &want); err != nil {
		t.Fatal(err)
	}
	jsonOut := filepath.Join(dir, "m.json")
	if err := runEval(&bytes.Buffer{}, evalFlags{pred: pred, goldColumn: "gold", jsonOut: jsonOut}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	b, _ := os.ReadFile(jsonOut)
	json.Unmarshal(b, &got)
	for _, k := range []string{"exact_match", "token_f1", "abstain_precision", "abstain_recall", "abstain_f1"} {
		if g, ok := got[k].(float64); !ok || math.Abs(g-want[k]) > 1e-9 {
			t.Errorf("%s: eval %v, score.py %v", k, got[k], want[k])
		}
	}
	if got["rows"].(float64) != want["records"] {
		t.Errorf("rows %v vs records %v", got["rows"], want["records"])
	}
}
