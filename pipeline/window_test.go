package pipeline

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/onecore-dev/onecore/jobs"
)

func TestExtractWindows(t *testing.T) {
	for _, c := range []struct {
		n, w int
		want string
	}{
		{0, 4, "[[0 0]]"},
		{4, 4, "[[0 4]]"},
		{3, 0, "[[0 3]]"},
		{10, 4, "[[0 4] [2 6] [4 8] [6 10]]"},
		{11, 4, "[[0 4] [2 6] [4 8] [6 10] [8 11]]"},
		{12, 5, "[[0 5] [2 7] [4 9] [6 11] [8 12]]"},
		{5, 1, "[[0 1] [1 2] [2 3] [3 4] [4 5]]"},
	} {
		if got := fmt.Sprint(extractWindows(c.n, c.w)); got != c.want {
			t.Errorf("extractWindows(%d, %d) = %s, want %s", c.n, c.w, got, c.want)
		}
	}
	// every token is in some window, every window but the last is full
	for n := 1; n < 60; n++ {
		for w := 1; w < 20; w++ {
			ws := extractWindows(n, w)
			covered := make([]bool, n)
			for i, x := range ws {
				if x[0] < 0 || x[1] > n || x[0] >= x[1] || (i < len(ws)-1 && x[1]-x[0] != w) {
					t.Fatalf("n=%d w=%d: bad window %v in %v", n, w, x, ws)
				}
				for k := x[0]; k < x[1]; k++ {
					covered[k] = true
				}
			}
			if slices.Contains(covered, false) || ws[len(ws)-1][1] != n {
				t.Fatalf("n=%d w=%d: %v does not cover the document", n, w, ws)
			}
		}
	}
}

// scriptWorker answers each prompt (byte tokens) with the "a=ANSWER/p=N"
// marker it finds in it, log-probability −N, or with "none" (log-prob
// −0.25 per window, so abstentions would win if they counted); for
// extractive decoding it checks the allowed first tokens are exactly the
// window's own.
type scriptWorker struct {
	t       *testing.T
	windows [][]int32 // the document tokens of each prompt, when checked
}

var marker = regexp.MustCompile(`a=([a-z]+)/p=([0-9])`)

func (w *scriptWorker) Forward([][]int32, Want) ([]Output, error) { return nil, nil }
func (w *scriptWorker) Close() error                              { return nil }
func (w *scriptWorker) Generate(prompts [][]int32, opt GenOptions) ([]Generation, error) {
	var tk0 byteTok
	out := make([]Generation, len(prompts))
	for i, p := range prompts {
		text := tk0.Decode(p)
		if opt.Allow != nil && w.windows != nil {
			allowed := opt.Allow(i, nil)
			want := map[int32]bool{EOS: true}
			for _, id := range w.windows[i] {
				want[id] = true
			}
			if len(allowed) != len(want) {
				w.t.Errorf("prompt %d: %d allowed first tokens, want the window's %d (+stop)", i, len(allowed), len(want)-1)
			}
			for _, id := range allowed {
				if !want[id] {
					w.t.Errorf("prompt %d: token %q allowed but not in its window", i, tk0.Decode([]int32{id}))
				}
			}
		}
		if m := marker.FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[2])
			out[i] = Generation{Tokens: byteTok{}.Encode(" " + m[1]), LogProb: -float32(n), Stopped: true}
		} else {
			out[i] = Generation{Tokens: byteTok{}.Encode(" none"), LogProb: -0.25, Stopped: true}
		}
	}
	return out, nil
}

// TestWindowedExtractPicksBest: a long document is prompted window by
// window (the question after each), and its answer is the most probable
// window answer that does not abstain; a document whose every window
// abstains abstains; a short one is one prompt.
func TestWindowedExtractPicksBest(t *testing.T) {
	j := &jobs.Job{Task: jobs.TaskExtract, Question: "q?", Abstain: []string{"none"}, Window: 24, MaxTokens: 1024}
	if err := j.Normalize(); err != nil {
		t.Fatal(err)
	}
	tk, _, err := newTask(j, &fakeModel{}, byteTok{})
	if err != nil {
		t.Fatal(err)
	}
	task := tk.(*extractTask)
	filler := "................................"
	docs := []string{
		"a=far/p=5" + filler + "a=best/p=1" + filler + "a=mid/p=3" + filler,
		filler + filler + filler,
		"a=only/p=7 short",
	}
	var pack []*item
	for _, d := range docs {
		it := &item{tokens: append([]int32{BOS}, byteTok{}.Encode(d)...)}
		if err := task.prepare(it, byteTok{}); err != nil {
			t.Fatal(err)
		}
		pack = append(pack, it)
	}
	if n := len(pack[0].seqs); n != len(extractWindows(len(docs[0]), 24)) || n < 5 {
		t.Fatalf("%d prompts for a %d-token document", n, len(docs[0]))
	}
	if len(pack[2].seqs) != 1 {
		t.Fatalf("a short document made %d prompts", len(pack[2].seqs))
	}
	const tail = "\nQuestion: q?\nAnswer:"
	var tk0 byteTok
	for _, s := range pack[0].seqs {
		if got := tk0.Decode(s[len(s)-len(tail):]); got != tail {
			t.Fatalf("window prompt ends %q", got)
		}
	}
	if err := task.run(&scriptWorker{t: t}, byteTok{}, pack); err != nil {
		t.Fatal(err)
	}
	type result struct {
		answer    string
		logp      float32
		abstained bool
	}
	for i, want := range []result{{"best", -1, false}, {"none", -0.25, true}, {"only", -7, false}} {
		r := pack[i].res
		if r.answer != want.answer || r.answerLogp != want.logp || r.abstained != want.abstained {
			t.Errorf("document %d: answer %q logp %v abstained %v, want %+v", i, r.answer, r.answerLogp, r.abstained, want)
		}
	}

	// --extractive by token ids: each window's answer may use only that
	// window's tokens
	j.Extractive = true
	tk, _, err = newTask(j, &fakeModel{}, byteTok{})
	if err != nil {
		t.Fatal(err)
	}
	task = tk.(*extractTask)
	it := &item{tokens: append([]int32{BOS}, byteTok{}.Encode("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ")...)}
	if err := task.prepare(it, byteTok{}); err != nil {
		t.Fatal(err)
	}
	sw := &scriptWorker{t: t}
	for _, w := range it.windows {
		sw.windows = append(sw.windows, it.tokens[1+w[0]:1+w[1]])
	}
	if len(sw.windows) < 3 {
		t.Fatalf("%d windows", len(sw.windows))
	}
	if err := task.run(sw, byteTok{}, []*item{it}); err != nil {
		t.Fatal(err)
	}
}
