package train

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// trainStateBytes returns train_state/optimizer.safetensors (master
// weights and AdamW moments, fp32) of a run.
func trainStateBytes(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "train_state", "optimizer.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shortPretrain is smallOptions cut to 30 steps with a checkpoint every 10,
// MoE on one layer (expert loads and the balance loss go through the
// micro-batch sums too).
func shortPretrain(out string, workers int) PretrainOptions {
	o := smallOptions(out)
	o.Config.MoELayers = []int{1}
	o.Tokens, o.Batch, o.Warmup = 64*4*30, 4, 5
	o.EvalEvery, o.CkptEvery, o.LogEvery = 0, 64*4*10, 0
	o.Workers = workers
	o.Log = quietLog()
	return o
}

// TestWorkersBitIdentical: the weights, optimizer moments and metrics after
// 30 steps are bit-identical for 1, 2 and 3 workers, and for two runs
// with 2 workers.
func TestWorkersBitIdentical(t *testing.T) {
	var ref []byte
	var refMetrics string
	for i, w := range []int{2, 2, 1, 3} {
		dir := t.TempDir()
		if err := Pretrain(context.Background(), shortPretrain(dir, w)); err != nil {
			t.Fatal(err)
		}
		got := trainStateBytes(t, dir)
		mb, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		// tok_s and tok_cpu_s are timings; everything else must agree
		metrics := stripTimings(string(mb))
		if !strings.Contains(metrics, `"expert_load"`) {
			t.Fatalf("no expert loads in metrics:\n%s", metrics)
		}
		if i == 0 {
			ref, refMetrics = got, metrics
			continue
		}
		if !bytes.Equal(got, ref) {
			t.Errorf("run %d (--workers %d): weights/moments differ from the first run (--workers 2)", i, w)
		}
		if metrics != refMetrics {
			t.Errorf("run %d (--workers %d): metrics differ:\n%s\nvs\n%s", i, w, metrics, refMetrics)
		}
	}
}

// stripTimings drops the fields of metrics.jsonl that measure time.
func stripTimings(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, k := range []string{`"tok_s"`, `"tok_cpu_s"`} {
			if i := strings.Index(l, k); i >= 0 {
				j := strings.IndexAny(l[i:], ",}")
				l = l[:i] + l[i+j+1:]
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestWorkersResumeBitIdentical: 2 workers stopped after 17 steps (last
// checkpoint at 10), resumed with 2 and, separately, with 1 worker, end
// with the uninterrupted run's weights and moments, bit for bit.
func TestWorkersResumeBitIdentical(t *testing.T) {
	full := t.TempDir()
	if err := Pretrain(context.Background(), shortPretrain(full, 2)); err != nil {
		t.Fatal(err)
	}
	want := trainStateBytes(t, full)
	for _, resumeWorkers := range []int{2, 1} {
		part := t.TempDir()
		o := shortPretrain(part, 2)
		o.StopAfterSteps = 17
		if err := Pretrain(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		o.StopAfterSteps, o.Resume, o.Workers = 0, true, resumeWorkers
		if err := Pretrain(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(trainStateBytes(t, part), want) {
			t.Errorf("killed at step 17 and resumed with %d workers: weights differ from the uninterrupted run", resumeWorkers)
		}
	}
}

// TestReducedGradientIsOrderedSum: the data-parallel gradient (3 workers)
// of 5 micro-batches equals the micro-batch gradients, each computed alone,
// summed in micro-batch order, bit for bit; its norm is GradNorm's. Both
// the sparse (sampled-softmax: touched embedding rows only) and the dense
// (full-vocabulary loss) embedding paths are checked, over two steps so
// the buffers' clearing is exercised.
func TestReducedGradientIsOrderedSum(t *testing.T) {
	c := smallConfig()
	c.MoELayers = []int{2}
	p := NewParams[float32](ParamSpecs(c, 0))
	p.Init(c, 7)
	const M, S = 5, 48
	rng := rand.New(rand.NewPCG(1, 2))
	negs := make([]int32, 32)
	logq := make([]float64, c.VocabSize)
	for i := range logq {
		logq[i] = -5.5
	}
	dp := newDataParallel(c, p, 3, 0.01/M, quietLog())
	defer dp.close()
	for _, dense := range []bool{false, true, false} {
		ids := make([]int32, M*S)
		for i := range ids {
			ids[i] = int32(3 + rng.IntN(60)) // few distinct rows: most are untouched
			if i%S == 0 {
				ids[i] = bosID
			}
		}
		for i := range negs {
			negs[i] = int32(3 + rng.IntN(200))
		}
		tg := make([]int32, len(ids))
		Targets(ids, S, tg, nil)
		nTgt := 0
		for _, y := range tg {
			if y >= 0 {
				nTgt++
			}
		}
		step := func(m *Model[float32], k int) {
			a, b := k*S, (k+1)*S
			hf := m.Forward(ids[a:b], S)
			var dhf []float32
			if dense {
				_, _, dhf = fullCE(m, hf, tg[a:b], true, nTgt)
			} else {
				_, _, dhf = sampledSoftmax(m, hf, tg[a:b], negs, logq, nTgt)
			}
			m.Backward(dhf)
		}
		dp.micro(M, func(w *dpWorker, k int) {
			step(w.m, k)
			if dense {
				w.touchAll()
			} else {
				w.touch(ids[k*S : (k+1)*S])
				w.touch(negs)
			}
		})
		gn := dp.reduce(M)

		// reference: one model, one micro-batch at a time
		ref := NewParams[float32](p.Specs)
		ref.Data = p.Data
		m := NewModel(c, ref)
		m.AuxCoef = 0.01 / M
		want := make([]float32, len(p.Grad))
		for k := 0; k < M; k++ {
			ref.ZeroGrad()
			step(m, k)
			if k == 0 {
				copy(want, ref.Grad)
				continue
			}
			for i, g := range ref.Grad {
				want[i] += g
			}
		}
		bad := 0
		for i := range want {
			if want[i] != p.Grad[i] {
				if bad < 5 {
					t.Errorf("dense=%v: grad[%d] = %v, ordered sum %v", dense, i, p.Grad[i], want[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Fatalf("dense=%v: %d of %d gradient elements differ", dense, bad, len(want))
		}
		ref.Grad = want
		if g := GradNorm(ref); g != gn {
			t.Errorf("dense=%v: reduced norm %v, GradNorm %v", dense, gn, g)
		}
		// an update moves the weights before the next round
		dp.update(NewAdamW(p, 0.1), 1e-3, 1)
	}
}

// TestSFTResumeBitIdentical: SFT with 2 workers, stopped after 7 steps
// (checkpoint every 5), resumed with 1 worker, ends bit-identical to the
// uninterrupted run.
func TestSFTResumeBitIdentical(t *testing.T) {
	var recs []map[string]string
	for i := 0; i < 60; i++ {
		recs = append(recs, map[string]string{"prompt": fmt.Sprintf("say %c (%d):", 'a'+i%5, i), "answer": strings.Repeat(string(rune('a'+i%5)), 3)})
	}
	data := writeJSONL(t, recs)
	from := randomCheckpoint(t)
	opts := func(out string) SFTOptions {
		return SFTOptions{From: from, Out: out, Data: []string{data}, PromptField: "prompt", AnswerField: "answer",
			Tokenizer: byteTok{}, Epochs: 3, SeqLen: 64, Batch: 3, LR: 3e-3, MinLR: 3e-4, Warmup: 3,
			Clip: 1, Seed: 1, ValPermille: 100, Samples: 1, Workers: 2, CkptEvery: 5, Log: quietLog()}
	}
	full := t.TempDir()
	if err := SFT(context.Background(), opts(full)); err != nil {
		t.Fatal(err)
	}
	part := t.TempDir()
	o := opts(part)
	o.StopAfterSteps = 7
	if err := SFT(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if err := SFT(context.Background(), o); err == nil {
		t.Fatal("a second run into the same --out without --resume succeeded")
	}
	o.StopAfterSteps, o.Resume, o.Workers = 0, true, 1
	if err := SFT(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(trainStateBytes(t, part), trainStateBytes(t, full)) {
		t.Error("SFT stopped at step 7 and resumed: weights differ from the uninterrupted run")
	}
	o.LR *= 2
	if err := SFT(context.Background(), o); err == nil || !strings.Contains(err.Error(), "different options") {
		t.Errorf("resume with a different --lr: %v", err)
	}
}

// TestClassifyResumeBitIdentical: classifier fine-tuning with 2 workers,
// stopped after 5 steps (checkpoint every 3), resumed with 3 workers, ends
// bit-identical to the uninterrupted run, with the same report; and an
// interrupted context saves a checkpoint that --resume continues.
func TestClassifyResumeBitIdentical(t *testing.T) {
	var recs []map[string]string
	for i := 0; i < 90; i++ {
		label := []string{"x", "y", "z"}[i%3]
		recs = append(recs, map[string]string{"text": strings.Repeat(label+" q ", 2+i%9) + fmt.Sprint(i), "label": label})
	}
	data := writeJSONL(t, recs)
	from := randomCheckpoint(t)
	opts := func(out string) ClassifyOptions {
		return ClassifyOptions{From: from, Out: out, Data: []string{data}, TextField: "text", LabelField: "label",
			Tokenizer: byteTok{}, MaxTokens: 40, ValPermille: 200, HeadEpochs: 20, HeadLR: 0.05,
			Finetune: true, Epochs: 3, LR: 5e-4, BatchTokens: 200, Seed: 1, Workers: 2, CkptEvery: 3, Log: quietLog()}
	}
	full := t.TempDir()
	want, err := Classify(context.Background(), opts(full))
	if err != nil {
		t.Fatal(err)
	}
	part := t.TempDir()
	o := opts(part)
	o.StopAfterSteps = 5
	if _, err := Classify(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	o.StopAfterSteps, o.Resume, o.Workers = 0, true, 3
	got, err := Classify(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(trainStateBytes(t, part), trainStateBytes(t, full)) {
		t.Error("classify stopped at step 5 and resumed: weights differ from the uninterrupted run")
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("report after resume %+v, uninterrupted %+v", got, want)
	}

	// SIGINT/SIGTERM: a cancelled context checkpoints and says so
	intr := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	o = opts(intr)
	var n int
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	o.onStep = func() {
		if n++; n == 4 {
			cancel()
		}
	}
	if _, err := Classify(ctx, o); err != ErrInterrupted {
		t.Fatalf("cancelled classify: %v, want ErrInterrupted", err)
	}
	o.Resume, o.onStep = true, nil
	if _, err := Classify(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(trainStateBytes(t, intr), trainStateBytes(t, full)) {
		t.Error("classify interrupted after step 4 and resumed: weights differ from the uninterrupted run")
	}
}
