package engine

import (
	"math"
	"slices"
	"sort"
	"testing"
)

func TestTopKTies(t *testing.T) {
	for _, tc := range []struct {
		x    []float32
		k    int
		want []int
	}{
		{[]float32{1, 3, 3, 2}, 2, []int{1, 2}},
		{[]float32{5, 5, 5, 5}, 3, []int{0, 1, 2}},
		{[]float32{0, -1, 7, 7, 1}, 1, []int{2}},
		{[]float32{float32(math.NaN()), 1, 0}, 2, []int{1, 2}},
	} {
		if got := topK(tc.x, tc.k, nil); !slices.Equal(got, tc.want) {
			t.Errorf("topK(%v, %d) = %v, want %v", tc.x, tc.k, got, tc.want)
		}
	}
}

func TestRouteGates(t *testing.T) {
	m := testModel(t, nil, 21)
	in := NewInstance(m)
	lw := &m.layers[2]
	K, E := m.Cfg.TopK, m.Cfg.Experts
	exps, gates := make([]int32, K), make([]float32, K)
	// Block 0: the bias alone decides.
	in.route(lw, nil, exps, gates)
	b := lw.routerB
	order := make([]int, E)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return b[order[i]] > b[order[j]] })
	want := append([]int(nil), order[:K]...)
	sort.Ints(want)
	var sum float64
	for k := range exps {
		if int(exps[k]) != want[k] {
			t.Fatalf("block 0 experts %v, want %v (bias %v)", exps, want, b)
		}
		sum += float64(gates[k])
	}
	if math.Abs(sum-1) > 1e-6 {
		t.Fatalf("gates %v do not sum to 1", gates)
	}
	// The gate ratio is exp of the logit difference.
	if r := float64(gates[0] / gates[1]); math.Abs(r-math.Exp(float64(b[exps[0]]-b[exps[1]]))) > 1e-4*r {
		t.Fatalf("gate ratio %v, want exp(%v)", r, b[exps[0]]-b[exps[1]])
	}
	// Ties go to the lower index.
	saved := append([]float32(nil), lw.routerB...)
	defer copy(lw.routerB, saved)
	for e := range lw.routerB {
		lw.routerB[e] = 0.5
	}
	in.route(lw, nil, exps, gates)
	if exps[0] != 0 || exps[1] != 1 || gates[0] != 0.5 {
		t.Fatalf("tied logits chose %v gates %v, want experts 0,1 with 0.5", exps, gates)
	}
}

// TestRoutingFromPreviousBlock recomputes, in float64 from the norm2
// outputs, which experts every route block should use (mean of the
// previous block of the same document; zero for block 0) and checks the
// engine's routing and expert load against it.
func TestRoutingFromPreviousBlock(t *testing.T) {
	cfg := smallConfig()
	m := testModel(t, cfg, 22)
	in := NewInstance(m)
	docs := randDocs(23, cfg.VocabSize, 40, 5, 17)
	in.setup(docs)
	li := 2 // the MoE layer
	for l := 0; l < li; l++ {
		in.layer(l)
	}
	lw := &m.layers[li]
	in.norm(lw.norm1, false)
	in.linPrefill(li, lw)
	in.norm(lw.norm2, true)
	in.routePrefill(li)
	D, K, E, RB := cfg.DModel, cfg.TopK, cfg.Experts, cfg.RouteBlock
	checked := 0
	for _, s := range in.segs {
		for b0 := 0; b0 < s.n; b0 += RB {
			logit := make([]float64, E)
			for e := range logit {
				logit[e] = float64(lw.routerB[e])
			}
			if b0 > 0 {
				for d := 0; d < D; d++ {
					var mean float64
					for r := s.start + b0 - RB; r < s.start+b0; r++ {
						mean += float64(in.xf[r*D+d])
					}
					mean /= float64(RB)
					for e := range logit {
						logit[e] += mean * float64(lw.routerW[d*E+e])
					}
				}
			}
			idx := make([]int, E)
			for i := range idx {
				idx[i] = i
			}
			sort.SliceStable(idx, func(i, j int) bool { return logit[idx[i]] > logit[idx[j]] })
			if logit[idx[K-1]]-logit[idx[K]] < 1e-3 {
				continue // a near-tie may legitimately round either way
			}
			want := append([]int(nil), idx[:K]...)
			sort.Ints(want)
			for r := s.start + b0; r < s.start+min(b0+RB, s.n); r++ {
				for k := 0; k < K; k++ {
					if int(in.rexp[r*K+k]) != want[k] {
						t.Fatalf("row %d (block at %d): experts %v, want %v", r, b0, in.rexp[r*K:(r+1)*K], want)
					}
				}
			}
			checked++
		}
	}
	if checked < 6 {
		t.Fatalf("only %d blocks checked", checked)
	}
	in.moe(li)
	var load int64
	for _, c := range in.Load[li] {
		load += c
	}
	if load != int64(in.n*K) {
		t.Fatalf("expert load %d, want %d tokens × top_k", load, in.n*K)
	}
}
