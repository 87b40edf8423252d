package train

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// benchStep runs one full training step (forward, sampled softmax,
// backward, AdamW) of config c on rows×rowLen random tokens.
func benchStep(b *testing.B, c *Config, rows, rowLen, nNeg int) {
	p := NewParams[float32](ParamSpecs(c, 0))
	p.Init(c, 1)
	m := NewModel(c, p)
	opt := NewAdamW(p, 0.1)
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]int32, rows*rowLen)
	for i := range ids {
		ids[i] = int32(3 + rng.IntN(c.VocabSize-3))
		if i%1024 == 0 {
			ids[i] = bosID
		}
	}
	tg := make([]int32, len(ids))
	Targets(ids, rowLen, tg, nil)
	logq := make([]float64, c.VocabSize)
	for i := range logq {
		logq[i] = -math.Log(float64(c.VocabSize))
	}
	negs := make([]int32, nNeg)
	for i := range negs {
		negs[i] = int32(rng.IntN(c.VocabSize))
	}
	step := func() {
		p.ZeroGrad()
		hf := m.Forward(ids, rowLen)
		_, _, dhf := SampledSoftmax(m, hf, tg, negs, logq)
		m.Backward(dhf)
		opt.Update(p, 1e-3, 1)
	}
	step() // warm-up: first-touch page faults of the activation buffers
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.ReportMetric(float64(b.N*len(ids))/b.Elapsed().Seconds(), "tok/s")
	// CPU time is what one core can do when the machine is shared
	b.ReportMetric(float64(b.N*len(ids))/(cpuSeconds()-cpu0), "tok/cpu-s")
}

// BenchmarkTrainStepDense is the side-by-side shape (bench/side_by_side.sh
// train; bench/torch_train.py defaults): 16 windows × 256 tokens, 512
// negatives, as `onecore train pretrain --batch 16 --seq-len 256`.
func BenchmarkTrainStepDense(b *testing.B) {
	c := DefaultConfig()
	benchStep(b, &c, 16, 256, 512)
}

// BenchmarkTrainStepDense1024: bench/torch_train.py --batch 4 --seq 1024
// --negatives 1024 (SWA chunks see the previous chunk's keys).
func BenchmarkTrainStepDense1024(b *testing.B) {
	c := DefaultConfig()
	benchStep(b, &c, 4, 1024, 1024)
}

// BenchmarkTrainStepMoE: bench/torch_train.py --moe (16 × 256, 512 negatives).
func BenchmarkTrainStepMoE(b *testing.B) {
	c := DefaultConfig()
	c.MoELayers = []int{0, 3, 5}
	benchStep(b, &c, 16, 256, 512)
}

// BenchmarkTrainHead: the linear-probe head fit (train classify's first
// phase) on 20,000 documents' random features, d 256, 45 labels (WordNet
// supersenses' shape), 3 full-batch steps per op, on GOMAXPROCS workers.
func BenchmarkTrainHead(b *testing.B) {
	const n, d, l = 20000, 256, 45
	rng := rand.New(rand.NewPCG(3, 4))
	feats := make([]float32, n*d)
	for i := range feats {
		feats[i] = float32(rng.NormFloat64())
	}
	docs := make([]labeledDoc, n)
	for i := range docs {
		docs[i].label = rng.IntN(l)
	}
	p := NewParams[float32]([]TensorSpec{{"head.cls.w", []int{d, l}}, {"head.cls.b", []int{l}}})
	workers := runtime.GOMAXPROCS(0)
	b.ResetTimer()
	for range b.N {
		trainHead("multiclass", p, feats, docs, l, 3, 0.05, 0, workers)
	}
}
