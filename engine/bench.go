package engine

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/onecore-dev/onecore/amx"
)

// BenchOptions configures Bench.
type BenchOptions struct {
	Tokens      int   // prefill tokens per measurement
	DocLen      int   // document length for prefill (tokens, <bos> first)
	DecodeBatch []int // batch sizes for decode
	DecodeSteps int   // steps per decode measurement
	PromptLen   int   // prompt length before decoding
	MinDuration time.Duration
	Seed        uint64
	PassTokens  int // tokens per prefill pass (0: DefaultPassTokens)
}

// BenchResult is what `onecore bench engine` reports.
type BenchResult struct {
	Kernel             string             `json:"kernel"`
	Tokens             int                `json:"tokens"`
	PrefillTokS        float64            `json:"prefill_tok_s"`      // per second of the pinned thread's CPU time
	PrefillWallTokS    float64            `json:"prefill_wall_tok_s"` // per wall-clock second (lower on a busy machine)
	PrefillReadoutTokS float64            `json:"prefill_readout_tok_s"`
	DecodeTokS         map[string]float64 `json:"decode_tok_s"`
	PrefillBreakdown   map[string]float64 `json:"prefill_breakdown"`
	ReadoutBreakdown   map[string]float64 `json:"prefill_readout_breakdown"`
	DecodeBreakdown    map[string]float64 `json:"decode_breakdown"` // at the largest batch
	PrefillGEMMGFlops  float64            `json:"prefill_gemm_gflop_s"`
	// PeakGFlops is the kernel's multiply-add ceiling on this core,
	// measured in the same run on the same thread (what `onecore bench
	// peak` measures); PrefillGEMMPeak is PrefillGEMMGFlops over it.
	PeakGFlops      float64 `json:"kernel_peak_gflop_s"`
	PrefillGEMMPeak float64 `json:"prefill_gemm_peak_fraction"`
	// PrefillAttnPeak is the prefill attention cores' GEMM FLOPs over the
	// attention time, as a fraction of the peak (decode attention is dot
	// products, not counted).
	PrefillAttnPeak float64 `json:"prefill_attention_peak_fraction"`
	// ExpertLoadMaxOverMean is, per MoE layer, the most-loaded expert's
	// token count over the mean (1 = perfectly balanced), from the prefill.
	ExpertLoadMaxOverMean map[string]float64 `json:"expert_load_max_over_mean,omitempty"`
	PrefillProfile        string             `json:"-"`
	ReadoutProfile        string             `json:"-"`
	DecodeProfile         map[int]string     `json:"-"`
}

// Bench measures prefill (body only, and with the full readout) and decode
// throughput of m on the calling goroutine's core, plus per-op breakdowns.
// Throughputs are tokens per second of the thread's CPU time, which on an
// idle core equals wall time and on a shared machine is what one core
// sustains. Pin the goroutine first (PinThread) for single-core numbers.
func Bench(m *Model, o BenchOptions) BenchResult {
	if o.Tokens <= 0 {
		o.Tokens = 8192
	}
	if o.DocLen <= 0 {
		o.DocLen = 256
	}
	if o.DecodeSteps <= 0 {
		o.DecodeSteps = 16
	}
	if o.PromptLen <= 0 {
		o.PromptLen = 32
	}
	V := m.Cfg.VocabSize
	var lens []int
	for t := 0; t < o.Tokens; t += o.DocLen {
		lens = append(lens, min(o.DocLen, o.Tokens-t))
	}
	docs := randDocs(o.Seed+1, V, lens...)
	res := BenchResult{Kernel: m.Kernel.String(), Tokens: o.Tokens, DecodeTokS: map[string]float64{}, DecodeProfile: map[int]string{}}
	in := NewInstance(m)
	if o.PassTokens <= 0 {
		o.PassTokens = DefaultPassTokens
	}
	in.PassTokens = o.PassTokens

	// Body: every layer and the final norm, no readout.
	body := func() {
		for i := 0; i < len(docs); {
			j, tok := i, 0
			for j < len(docs) && (j == i || tok+len(docs[j]) <= o.PassTokens) {
				tok += len(docs[j])
				j++
			}
			in.setup(docs[i:j])
			in.forward()
			i = j
		}
	}
	var logits []float32
	withReadout := func() {
		for i := 0; i < len(docs); {
			j, tok := i, 0
			for j < len(docs) && (j == i || tok+len(docs[j]) <= o.PassTokens) {
				tok += len(docs[j])
				j++
			}
			in.setup(docs[i:j])
			in.forward()
			logits = growF(logits, in.n*V)
			in.readout(0, in.n, logits)
			i = j
		}
	}
	// the kernel's ceiling, timed like the passes (thread CPU time)
	{
		var flops float64
		t0 := ThreadCPU()
		for flops == 0 || ThreadCPU()-t0 < 200*time.Millisecond {
			flops += amx.PeakLoop(m.Kernel, 100000) // ~1 ms: the clock read is a syscall
		}
		res.PeakGFlops = flops / (ThreadCPU() - t0).Seconds() / 1e9
	}
	// measure runs f (o.Tokens tokens) repeatedly for at least
	// o.MinDuration of thread CPU time and returns tokens per CPU second,
	// then one more profiled run.
	measure := func(f func()) (tokS, wallTokS float64, prof *Profile) {
		f() // warm-up: scratch grows, caches fill
		in.Prof = nil
		reps, t0, w0 := 0, ThreadCPU(), time.Now()
		for reps == 0 || ThreadCPU()-t0 < o.MinDuration {
			f()
			reps++
		}
		cpu, wall := ThreadCPU()-t0, time.Since(w0)
		in.Prof = &Profile{PeakGFlops: res.PeakGFlops}
		f()
		p := in.Prof
		in.Prof = nil
		return float64(reps*o.Tokens) / cpu.Seconds(), float64(reps*o.Tokens) / wall.Seconds(), p
	}
	var p *Profile
	res.PrefillTokS, res.PrefillWallTokS, p = measure(body)
	res.PrefillBreakdown, res.PrefillProfile = p.Shares(), p.String()
	res.PrefillGEMMGFlops = p.GFlops(OpGEMM)
	res.PrefillGEMMPeak = res.PrefillGEMMGFlops / res.PeakGFlops
	res.PrefillAttnPeak = p.GFlops(OpAttention) / res.PeakGFlops
	res.PrefillReadoutTokS, _, p = measure(withReadout)
	res.ReadoutBreakdown, res.ReadoutProfile = p.Shares(), p.String()

	for li, load := range in.Load {
		if load == nil {
			continue
		}
		var sum, mx int64
		for _, c := range load {
			sum += c
			mx = max(mx, c)
		}
		if sum > 0 {
			if res.ExpertLoadMaxOverMean == nil {
				res.ExpertLoadMaxOverMean = map[string]float64{}
			}
			res.ExpertLoadMaxOverMean[itoa(li)] = float64(mx) * float64(len(load)) / float64(sum)
		}
	}

	rng := rand.New(rand.NewPCG(o.Seed, 3))
	for _, B := range o.DecodeBatch {
		dec := in.NewDecoder()
		prompts := randDocs(rng.Uint64(), V, repeat(o.PromptLen, B)...)
		for _, pr := range prompts {
			dec.Add(Request{Prompt: pr, StopIDs: []int32{}})
		}
		dec.Step() // warm-up
		in.Prof = nil
		t0 := ThreadCPU()
		steps := 0
		for steps < o.DecodeSteps || ThreadCPU()-t0 < o.MinDuration/4 {
			dec.Step()
			steps++
		}
		el := ThreadCPU() - t0
		in.Prof = &Profile{PeakGFlops: res.PeakGFlops}
		dec.Step()
		res.DecodeBreakdown = in.Prof.Shares()
		res.DecodeProfile[B] = in.Prof.String()
		in.Prof = nil
		res.DecodeTokS[itoa(B)] = float64(steps*B) / el.Seconds()
	}
	return res
}

// randDocs makes documents of the given lengths, each starting with <bos>.
func randDocs(seed uint64, vocab int, lens ...int) [][]int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	var docs [][]int32
	for _, n := range lens {
		d := make([]int32, n)
		d[0] = BosID
		for i := 1; i < n; i++ {
			d[i] = int32(3 + rng.IntN(vocab-3))
		}
		docs = append(docs, d)
	}
	return docs
}

func itoa(i int) string { return strconv.Itoa(i) }

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}
