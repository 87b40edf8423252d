package train

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestCLIExtractTrainAndRun: `onecore train extract` trains a span head
// (ends scored at the next row) on the synthetic code task from a random
// model, and `onecore extract --task
// extract` with the checkpoint answers unseen documents by span: exact
// match far above chance, every answer exactly the document's characters
// [answer_start, answer_end), the same rows for 1 and 2 workers and other
// packings. A classifier checkpoint (the bundled spam model) is refused.
func TestCLIExtractTrainAndRun(t *testing.T) {
	from, _ := cliSourceCheckpoint(t)
	work := t.TempDir()
	ck := filepath.Join(work, "ck")
	out := run(t, "train", "extract", "--from", from, "--data", writeRecords(t, codeRecords(300, 1)), "--out", ck,
		"--question", "what is the code?", "--epochs", "4", "--lr", "2e-3", "--head-lr", "1e-2", "--batch-tokens", "1024",
		"--max-tokens", "128", "--val-permille", "200", "--eval-every", "0", "--samples", "2", "--workers", "2")
	if !strings.Contains(out, "held-out: exact match") || !strings.Contains(out, "extract sample") {
		t.Fatalf("train extract output lacks the evaluation:\n%s", out)
	}
	// a new head scores ends at the row after the span, and extract reads
	// them there (the exact match below fails otherwise)
	if g, err := os.ReadFile(filepath.Join(ck, "generation.json")); err != nil || !strings.Contains(string(g), `"span_end_next": true`) {
		t.Fatalf("generation.json without span_end_next (%v):\n%s", err, g)
	}

	// unseen documents, with ids
	test := codeRecords(60, 99)
	var lines []string
	for i, r := range test {
		r["id"] = fmt.Sprintf("t%02d", i)
		b, _ := json.Marshal(r)
		lines = append(lines, string(b))
	}
	in := filepath.Join(work, "test.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	extract := func(name string, extra ...string) map[string]map[string]any {
		res := filepath.Join(work, name+".jsonl")
		run(t, append([]string{"extract", "--task", "extract", "--model", ck, "--in", in, "--out", res, "--question", "what is the code?", "--progress", "none"}, extra...)...)
		b, err := os.ReadFile(res)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]map[string]any{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			rows[m["id"].(string)] = m
		}
		return rows
	}
	ref := extract("w1", "--workers", "1")
	exact := 0
	for i, r := range test {
		row := ref[fmt.Sprintf("t%02d", i)]
		gold, present := r["answer"].(string)
		ans := row["answer"].(string)
		if row["abstained"].(bool) {
			if row["answer_start"] != nil || ans != "" {
				t.Fatalf("row %d: abstained with %v", i, row)
			}
			if !present {
				exact++
			}
			continue
		}
		s, e := int(row["answer_start"].(float64)), int(row["answer_end"].(float64))
		if rs := []rune(r["text"].(string)); string(rs[s:e]) != ans {
			t.Fatalf("row %d: answer %q is not text[%d:%d] = %q", i, ans, s, e, string(rs[s:e]))
		}
		if present && ans == gold {
			exact++
		}
	}
	em := float64(exact) / float64(len(test))
	t.Logf("unseen documents: exact match %.3f", em)
	if em < 0.8 {
		t.Errorf("exact match %.3f on unseen documents, want ≥ 0.8 (always abstaining scores about 0.2)", em)
	}
	got := extract("w2", "--workers", "2", "--pack-tokens", "100")
	for id, r := range ref {
		if fmt.Sprint(r) != fmt.Sprint(got[id]) {
			t.Fatalf("%s: 1 worker %v, 2 workers %v", id, r, got[id])
		}
	}

	// int8 weights: still answers that are substrings at their offsets,
	// the same bytes for any packing, nearly the exact model's answers;
	// and a different job, so it never lands in the exact run's output
	q1 := extract("q1", "--workers", "1", "--int8", "--summary", filepath.Join(work, "q1.json"))
	if b, err := os.ReadFile(filepath.Join(work, "q1.json")); err != nil || !strings.Contains(string(b), `"int8": true`) {
		t.Fatalf("--int8 run's summary does not say int8 (%v):\n%s", err, b)
	}
	q2 := extract("q2", "--workers", "2", "--pack-tokens", "100", "--int8")
	same := 0
	for i, r := range test {
		id := fmt.Sprintf("t%02d", i)
		row := q1[id]
		if fmt.Sprint(row) != fmt.Sprint(q2[id]) {
			t.Fatalf("int8 %s: 1 worker %v, 2 workers %v", id, row, q2[id])
		}
		if row["answer"] == ref[id]["answer"] {
			same++
		}
		if row["abstained"].(bool) {
			continue
		}
		s, e := int(row["answer_start"].(float64)), int(row["answer_end"].(float64))
		if rs := []rune(r["text"].(string)); string(rs[s:e]) != row["answer"].(string) {
			t.Fatalf("int8 row %d: answer %q is not text[%d:%d]", i, row["answer"], s, e)
		}
	}
	t.Logf("int8: %d of %d answers as the exact model's", same, len(test))
	if same*10 < len(test)*9 {
		t.Errorf("int8 gives the exact model's answer on %d of %d documents, want ≥ 90 %%", same, len(test))
	}
	cmd := exec.Command(testenv.Binary(t), "extract", "--task", "extract", "--model", ck, "--in", in, "--out", filepath.Join(work, "w1.jsonl"), "--question", "what is the code?", "--int8")
	if b, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(b), "different job") {
		t.Fatalf("--int8 into the exact run's output: %v, want exit 1 naming a different job\n%s", err, b)
	}

	cmd = exec.Command(testenv.Binary(t), "extract", "--task", "extract", "--model", "spam", "--in", in, "--out", filepath.Join(work, "spam.jsonl"), "--question", "q?")
	b, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(b), "classifier") {
		t.Fatalf("extract with the spam classifier: %v, want exit 1 naming the classifier\n%s", err, b)
	}
}

// TestCLIExtractLayers: `train extract --layers 2` of a 3-layer source
// gives a 2-layer checkpoint that `extract` runs (an answer or an
// abstention on every row, the same bytes for 1 and 2 workers and another
// packing); a negative --layers is a usage error (exit 2).
func TestCLIExtractLayers(t *testing.T) {
	from, c := cliSourceCheckpoint(t)
	work := t.TempDir()
	ck := filepath.Join(work, "ck")
	data := writeRecords(t, codeRecords(40, 1))
	run(t, "train", "extract", "--from", from, "--data", data, "--out", ck, "--layers", "2",
		"--question", "what is the code?", "--epochs", "1", "--max-tokens", "128", "--eval-every", "0", "--workers", "1")
	got, err := LoadConfig(filepath.Join(ck, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Layers) != fmt.Sprint(c.Layers[:2]) {
		t.Fatalf("saved layers %v, want %v", got.Layers, c.Layers[:2])
	}
	res := filepath.Join(work, "res.jsonl")
	run(t, "extract", "--task", "extract", "--model", ck, "--in", data, "--out", res, "--question", "what is the code?", "--progress", "none")
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 40 {
		t.Fatalf("%d result rows, want 40", n)
	}
	// batch invariant as the full-depth model: other workers and packing,
	// the same rows byte for byte
	res2 := filepath.Join(work, "res2.jsonl")
	run(t, "extract", "--task", "extract", "--model", ck, "--in", data, "--out", res2, "--question", "what is the code?", "--progress", "none",
		"--workers", "2", "--pack-tokens", "100")
	if b2, err := os.ReadFile(res2); err != nil || string(b2) != string(b) {
		t.Fatalf("2 workers, other packing: rows differ (%v)", err)
	}
	cmd := exec.Command(testenv.Binary(t), "train", "extract", "--from", from, "--data", data, "--out", filepath.Join(work, "neg"), "--layers", "-1")
	if b, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "--layers -1") {
		t.Fatalf("--layers -1: exit %d, want 2\n%s", cmd.ProcessState.ExitCode(), b)
	}
}
