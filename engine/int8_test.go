package engine

import (
	"math"
	"testing"

	"github.com/onecore-dev/onecore/amx"
)

// TestInt8BatchInvariance: with int8 weights (ModelOptions.Int8) a
// document's outputs are still bit-identical alone, packed in any order,
// split in passes and on two instances (activations are quantized per
// row), with every kernel this CPU has, MoE layers included.
func TestInt8BatchInvariance(t *testing.T) {
	for _, kern := range amx.Available() {
		t.Run(kern.String(), func(t *testing.T) {
			m := testModelWith(t, nil, 1, kern, ModelOptions{Int8: true})
			if !m.Int8 || !m.layers[0].wqkv.Int8() {
				t.Fatal("ModelOptions.Int8 did not quantize the layers")
			}
			testBatchInvariance(t, m)
		})
	}
}

// TestInt8CloseToExact: the int8 model's hidden states, log-probabilities
// and span logits stay close to the exact model's on random weights (a
// wrong scale or a dropped compensation would be off by far more), and
// its next-token choice mostly agrees.
func TestInt8CloseToExact(t *testing.T) {
	kern := amx.Selected()
	exact := testModelWith(t, nil, 7, kern, ModelOptions{})
	q8 := testModelWith(t, nil, 7, kern, ModelOptions{Int8: true})
	docs := randDocs(11, exact.Cfg.VocabSize, 120, 40, 90, 7)
	want := Want{Hidden: true, LogProbs: true, Logits: LogitsAll, Span: true}
	a, err := NewInstance(exact).Prefill(docs, want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewInstance(q8).Prefill(docs, want)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(x, y []float32) float64 {
		var d, n float64
		for i := range x {
			d += (float64(x[i]) - float64(y[i])) * (float64(x[i]) - float64(y[i]))
			n += float64(x[i]) * float64(x[i])
		}
		return math.Sqrt(d / n)
	}
	agree, total := 0, 0
	for i := range docs {
		for _, f := range []struct {
			name string
			x, y []float32
			max  float64
		}{{"hidden", a[i].Hidden, b[i].Hidden, 0.08}, {"logprobs", a[i].LogProbs, b[i].LogProbs, 0.08}, {"span", a[i].Span, b[i].Span, 0.08}} {
			if r := rel(f.x, f.y); r > f.max || math.IsNaN(r) {
				t.Errorf("doc %d: %s relative RMS difference %.4f, want < %.2f", i, f.name, r, f.max)
			} else {
				t.Logf("doc %d: %s relative RMS difference %.4f", i, f.name, r)
			}
		}
		V := exact.Cfg.VocabSize
		for p := 0; p+V <= len(a[i].Logits); p += V {
			total++
			if argmax(a[i].Logits[p:p+V]) == argmax(b[i].Logits[p:p+V]) {
				agree++
			}
		}
	}
	if agree*10 < total*9 {
		t.Errorf("next-token argmax agrees at %d of %d positions, want ≥ 90 %%", agree, total)
	}
	t.Logf("next-token argmax agrees at %d of %d positions", agree, total)
}
