package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/onecore-dev/onecore/amx"
)

// Op is a category of the per-op time breakdown.
type Op int

// The categories: weight GEMMs (projections, MLP, experts, readout);
// attention cores (SWA and linear attention, including their small
// per-chunk GEMMs and packing); norms and other elementwise passes
// (embedding, RMSNorm, RoPE, bf16 conversion); everything else (MoE
// routing and gathers, sampling, log-softmax).
const (
	OpGEMM Op = iota
	OpAttention
	OpElementwise
	OpOther
	numOps
)

var opNames = [numOps]string{"gemm", "attention", "norm/elementwise", "other"}

// String names the category.
func (o Op) String() string { return opNames[o] }

// Profile accumulates thread CPU time per category and weight-GEMM FLOPs.
type Profile struct {
	Time      [numOps]time.Duration
	GEMMFlops float64
	// AttnFlops are the FLOPs of the attention cores' GEMMs (scores, P·V,
	// the linear attention's chunk products), masked work included: over
	// the attention time (softmax, masks and packing included) they say
	// how near the kernel's peak the attention op runs.
	AttnFlops float64
	// PeakGFlops, when set, is the GEMM kernel's multiply-add ceiling on
	// this core (amx.PeakLoop, measured in the same run): String then says
	// what fraction of it the weight GEMMs reach.
	PeakGFlops float64
}

// Reset clears the counters.
func (p *Profile) Reset() { *p = Profile{} }

// Total is the sum over categories.
func (p *Profile) Total() time.Duration {
	var t time.Duration
	for _, d := range p.Time {
		t += d
	}
	return t
}

// Shares returns each category's fraction of the total, by name.
func (p *Profile) Shares() map[string]float64 {
	out := map[string]float64{}
	tot := p.Total().Seconds()
	for i, d := range p.Time {
		if tot > 0 {
			out[opNames[i]] = d.Seconds() / tot
		}
	}
	return out
}

// String formats the breakdown on one line.
func (p *Profile) String() string {
	var b strings.Builder
	tot := p.Total()
	for i, d := range p.Time {
		if i > 0 {
			b.WriteString("  ")
		}
		share := 0.0
		if tot > 0 {
			share = 100 * d.Seconds() / tot.Seconds()
		}
		fmt.Fprintf(&b, "%s %.1f%%", opNames[i], share)
	}
	if r := p.GFlops(OpGEMM); r > 0 {
		if p.PeakGFlops > 0 {
			fmt.Fprintf(&b, "  (gemm %.1f GFLOP/s, %.0f%% of the kernel's %.1f peak)", r, 100*r/p.PeakGFlops, p.PeakGFlops)
		} else {
			fmt.Fprintf(&b, "  (gemm %.1f GFLOP/s)", r)
		}
	}
	if r := p.GFlops(OpAttention); r > 0 {
		if p.PeakGFlops > 0 {
			fmt.Fprintf(&b, "  (attention %.1f GFLOP/s, %.0f%%)", r, 100*r/p.PeakGFlops)
		} else {
			fmt.Fprintf(&b, "  (attention %.1f GFLOP/s)", r)
		}
	}
	return b.String()
}

// GFlops is the counted FLOPs of op (OpGEMM: the weight GEMMs;
// OpAttention: the attention cores' GEMMs) per second of its time; 0 when
// none were counted.
func (p *Profile) GFlops(op Op) float64 {
	s := p.Time[op].Seconds()
	var f float64
	switch op {
	case OpGEMM:
		f = p.GEMMFlops
	case OpAttention:
		f = p.AttnFlops
	}
	if s <= 0 || f <= 0 {
		return 0
	}
	return f / s / 1e9
}

// tick starts timing an op: the thread's CPU time, so the breakdown is
// not skewed by other processes (the instance's goroutine should be
// locked to its thread, as engine workers are).
func (in *Instance) tick() time.Duration {
	if in.Prof == nil {
		return 0
	}
	return ThreadCPU()
}

func (in *Instance) tock(op Op, t0 time.Duration) {
	if in.Prof != nil {
		in.Prof.Time[op] += ThreadCPU() - t0
	}
}

// attnMatMul is amx.MatMul inside an attention core, its FLOPs counted.
func (in *Instance) attnMatMul(m int, a []amx.BF16, lda int, b *amx.Matrix, c []float32, ldc int, ep *amx.Epilogue) {
	amx.MatMul(m, a, lda, b, c, ldc, ep)
	if in.Prof != nil {
		in.Prof.AttnFlops += amx.FLOPs(m, b.K, b.N)
	}
}

func (in *Instance) tockGEMM(t0 time.Duration, m int, b *amx.Matrix) {
	if in.Prof != nil {
		in.Prof.Time[OpGEMM] += ThreadCPU() - t0
		in.Prof.GEMMFlops += amx.FLOPs(m, b.K, b.N)
	}
}
