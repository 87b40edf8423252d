package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/onecore-dev/onecore/amx"
	"github.com/onecore-dev/onecore/engine"
	"github.com/spf13/cobra"
)

// benchOpts are the flags bench gemm and bench peak share.
type benchOpts struct {
	kernel  string
	json    bool
	cpu     int
	runtime time.Duration
	wall    bool
}

func (o *benchOpts) flags(c *cobra.Command) {
	c.Flags().StringVar(&o.kernel, "kernel", "", "kernel to time: amx, avx512bf16, avx2 or generic (default: ONECORE_KERNEL, else the best available)")
	c.Flags().BoolVar(&o.json, "json", false, "print one JSON object per line")
	c.Flags().IntVar(&o.cpu, "cpu", -1, "CPU to pin to (default: the highest-numbered one this process may run on)")
	c.Flags().DurationVar(&o.runtime, "time", 700*time.Millisecond, "measuring time (best of 7 rounds is reported)")
	c.Flags().BoolVar(&o.wall, "wall", false, "time with the wall clock instead of the thread's CPU clock")
}

// clock returns the benchmark clock: the pinned thread's CPU time by
// default, so time the scheduler gives to other processes on the same
// core is not charged to the kernel (on a shared machine wall-clock
// figures mostly measure the neighbours); the wall clock with --wall.
func (o *benchOpts) clock() func() time.Duration {
	if o.wall {
		t0 := time.Now()
		return func() time.Duration { return time.Since(t0) }
	}
	return engine.ThreadCPU
}

// resolve returns the kernel to time.
func (o *benchOpts) resolve() (amx.Kernel, error) {
	if o.kernel == "" {
		if err := amx.SelectionError(); err != nil {
			return 0, err
		}
		return amx.Selected(), nil
	}
	k, err := amx.ParseKernel(o.kernel)
	if err != nil {
		return 0, usageError{fmt.Errorf("--kernel: %w", err)}
	}
	if !k.Supported() {
		return 0, fmt.Errorf("--kernel %s: not supported on this CPU/build (available: %v)", k, amx.Available())
	}
	return k, nil
}

// pin locks the calling goroutine to its OS thread and that thread to one
// CPU, so a benchmark measures one core and is not migrated mid-run. The
// caller must runtime.UnlockOSThread when done.
func pin(cpu int) (int, error) {
	if cpu < 0 {
		// The highest allowed CPU: CPU 0 usually takes more interrupts
		// and housekeeping.
		cpus := engine.AllowedCPUs()
		cpu = cpus[len(cpus)-1]
	}
	if err := engine.PinThread(cpu); err != nil {
		return -1, fmt.Errorf("pin to CPU %d: %w", cpu, err)
	}
	return cpu, nil
}

// bencher times fn (which returns the FLOPs it did) in rounds and keeps
// the best round: the one least disturbed by other processes sharing the
// core, i.e. what the hardware and the code can do.
type bencher struct {
	now            func() time.Duration
	fn             func() float64
	batch          int
	gflops, usCall float64
}

// newBencher warms fn up (caches, clock frequency) and calibrates a batch
// of calls that lasts at least 1 ms.
func newBencher(now func() time.Duration, fn func() float64) *bencher {
	b := &bencher{now: now, fn: fn, batch: 1}
	for {
		t0 := now()
		for range b.batch {
			fn()
		}
		if now()-t0 >= time.Millisecond {
			return b
		}
		b.batch *= 2
	}
}

// round runs whole batches for about d and keeps the best rate.
func (b *bencher) round(d time.Duration) {
	var flops float64
	calls := 0
	t0 := b.now()
	for b.now()-t0 < d {
		for range b.batch {
			flops += b.fn()
		}
		calls += b.batch
	}
	sec := (b.now() - t0).Seconds()
	if g := flops / sec / 1e9; g > b.gflops {
		b.gflops, b.usCall = g, sec/float64(calls)*1e6
	}
}

const benchRounds = 7

var benchGemmOpts struct {
	benchOpts
	m, k, n int
	peak    bool
}

var benchGemmCmd = &cobra.Command{
	Use:   "gemm",
	Short: "Time one bf16 GEMM shape on one pinned core",
	Long: `Times C[M×N] = A[M×K]·B[K×N] the way the engine calls it: B packed once,
A and C reused, repeated calls on one core (the goroutine is locked to its
thread and the thread pinned with sched_setaffinity). Prints GFLOP/s, µs per
call and the kernel. Time is the thread's CPU time (--wall for the wall
clock) and the best of 7 rounds is reported, so other processes sharing the
core disturb the figure as little as possible; compare it with
'onecore bench peak' measured the same way.

With --json, prints exactly one JSON object per line:
  {"kernel":"avx512bf16","m":256,"k":256,"n":640,"gflops":401.2,"us_per_call":209.1}
(--peak adds "peak_gflops", measured in rounds alternating with the GEMM's so
both see the same load: the fair ratio on a shared machine).`,
	Example: `  onecore bench gemm --m 256 --k 256 --n 640
  onecore bench gemm --m 256 --k 256 --n 16384 --peak
  onecore bench gemm --m 16 --k 256 --n 256 --kernel avx2 --json
  taskset -c 3 onecore bench gemm --m 256 --k 640 --n 256`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		o := &benchGemmOpts
		if o.m <= 0 || o.k <= 0 || o.n <= 0 {
			return usageError{errors.New("--m, --k and --n must be positive")}
		}
		kern, err := o.resolve()
		if err != nil {
			return err
		}
		if _, err := pin(o.cpu); err != nil {
			return err
		}
		defer runtime.UnlockOSThread()
		r := rand.New(rand.NewPCG(1, 1))
		rnd := func(n int) []amx.BF16 {
			s := make([]amx.BF16, n)
			for i := range s {
				s[i] = amx.FromFloat32(float32(r.NormFloat64()))
			}
			return s
		}
		a, b := rnd(o.m*o.k), rnd(o.k*o.n)
		c := make([]float32, o.m*o.n)
		pb := amx.PackFor(kern, nil, o.k, o.n, b, o.n)
		flops := amx.FLOPs(o.m, o.k, o.n)
		now := o.clock()
		bg := newBencher(now, func() float64 {
			amx.MatMul(o.m, a, o.k, pb, c, o.n, nil)
			return flops
		})
		var bp *bencher
		if o.peak {
			bp = newBencher(now, func() float64 { return amx.PeakLoop(kern, 200) })
		}
		for range benchRounds {
			if bp != nil { // alternate, so both see the same neighbours
				bp.round(o.runtime / benchRounds)
			}
			bg.round(o.runtime / benchRounds)
		}
		g, us := bg.gflops, bg.usCall
		if o.json {
			out := struct {
				Kernel     string   `json:"kernel"`
				M          int      `json:"m"`
				K          int      `json:"k"`
				N          int      `json:"n"`
				GFLOPS     float64  `json:"gflops"`
				USPerCall  float64  `json:"us_per_call"`
				PeakGFLOPS *float64 `json:"peak_gflops,omitempty"`
			}{Kernel: kern.String(), M: o.m, K: o.k, N: o.n, GFLOPS: round2(g), USPerCall: round2(us)}
			if bp != nil {
				pg := round2(bp.gflops)
				out.PeakGFLOPS = &pg
			}
			return json.NewEncoder(os.Stdout).Encode(out)
		}
		fmt.Printf("%s M=%d K=%d N=%d: %.1f GFLOP/s, %.2f µs/call", kern, o.m, o.k, o.n, g, us)
		if bp != nil {
			fmt.Printf(", %.1f%% of peak (%.1f GFLOP/s, measured alternately)", 100*g/bp.gflops, bp.gflops)
		}
		fmt.Println()
		return nil
	},
}

var benchPeakOpts benchOpts

var benchPeakCmd = &cobra.Command{
	Use:   "peak",
	Short: "Measure this core's multiply-add peak for a kernel",
	Long: `Runs the instruction a kernel is built on (VDPBF16PS for avx512bf16,
TDPBF16PS for amx, VFMADD231PS for avx2, scalar Go for generic) on registers
only, on one pinned core, and prints the GFLOP/s: the ceiling
'onecore bench gemm' is measured against. Best of 7 rounds, like bench gemm.

With --json, prints exactly one JSON object per line:
  {"kernel":"avx512bf16","gflops":433.1}`,
	Example: `  onecore bench peak
  onecore bench peak --json
  onecore bench peak --kernel avx2`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		o := &benchPeakOpts
		kern, err := o.resolve()
		if err != nil {
			return err
		}
		if _, err := pin(o.cpu); err != nil {
			return err
		}
		defer runtime.UnlockOSThread()
		bp := newBencher(o.clock(), func() float64 { return amx.PeakLoop(kern, 200) })
		for range benchRounds {
			bp.round(o.runtime / benchRounds)
		}
		g := bp.gflops
		if o.json {
			return json.NewEncoder(os.Stdout).Encode(struct {
				Kernel string  `json:"kernel"`
				GFLOPS float64 `json:"gflops"`
			}{kern.String(), round2(g)})
		}
		fmt.Printf("%s peak: %.1f GFLOP/s\n", kern, g)
		return nil
	},
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

func init() {
	benchGemmOpts.flags(benchGemmCmd)
	benchGemmCmd.Flags().IntVar(&benchGemmOpts.m, "m", 256, "rows of A and C")
	benchGemmCmd.Flags().IntVar(&benchGemmOpts.k, "k", 256, "columns of A, rows of B")
	benchGemmCmd.Flags().IntVar(&benchGemmOpts.n, "n", 256, "columns of B and C")
	benchGemmCmd.Flags().BoolVar(&benchGemmOpts.peak, "peak", false, "also measure the kernel's peak, alternating rounds with the GEMM, and report the ratio (adds \"peak_gflops\" to --json)")
	benchPeakOpts.flags(benchPeakCmd)
	benchCmd.AddCommand(benchGemmCmd, benchPeakCmd)
}
