package engine

import (
	"runtime"
	"testing"
)

func benchModel(b *testing.B, preset string) *Model {
	cfg, _ := Preset(preset)
	m, err := NewModel(&Checkpoint{Config: &cfg, Tensors: InitTensors(&cfg, 1)})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func benchPrefill(b *testing.B, preset string) {
	m := benchModel(b, preset)
	docs := randDocs(1, m.Cfg.VocabSize, repeat(256, 4)...)
	in := NewInstance(m)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	in.setup(docs)
	in.forward()
	b.ResetTimer()
	c0 := ThreadCPU()
	for i := 0; i < b.N; i++ {
		in.setup(docs)
		in.forward()
	}
	// Per second of this thread's CPU time: on a shared core, what the
	// core does while it runs this (wall time also counts other processes).
	b.ReportMetric(float64(b.N*1024)/(ThreadCPU()-c0).Seconds(), "tok/cpu-s")
	b.ReportMetric(float64(b.N*1024)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkPrefillDense measures the prefill body of dense-3m (1024 tokens per op).
func BenchmarkPrefillDense(b *testing.B) { benchPrefill(b, "dense-3m") }

// BenchmarkPrefillMoE measures the prefill body of moe-3m.
func BenchmarkPrefillMoE(b *testing.B) { benchPrefill(b, "moe-3m") }
