package engine

import "testing"

// TestNoSteadyStateAllocation: once scratch has grown, a forward pass and a
// decode step allocate nothing.
func TestNoSteadyStateAllocation(t *testing.T) {
	m := testModel(t, nil, 61)
	in := NewInstance(m)
	docs := randDocs(62, m.Cfg.VocabSize, 150, 9, 70)
	in.setup(docs)
	in.forward()
	if n := testing.AllocsPerRun(5, func() {
		in.setup(docs)
		in.forward()
	}); n > 0 {
		t.Errorf("forward pass: %v allocations per run", n)
	}
	dec := in.NewDecoder()
	for _, d := range docs {
		dec.Add(Request{Prompt: d, StopIDs: []int32{}, Sampling: Sampling{Temperature: 0.7, TopP: 0.9}})
	}
	dec.Step()
	if n := testing.AllocsPerRun(5, func() { dec.Step() }); n > 0 {
		t.Errorf("decode step: %v allocations per run", n)
	}
}
