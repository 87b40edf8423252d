package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/amx"
	"github.com/onecore-dev/onecore/engine"
)

func init() {
	var ckDir, cfgPath string
	var tokens, docLen, promptLen, pass, cpu int
	var asJSON bool
	var minDur time.Duration
	var int8 bool
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Measure the engine's prefill and decode throughput on one core",
		Long: `bench engine measures, on one core (the goroutine is locked to its OS thread
and pinned with sched_setaffinity), the model's prefill throughput (body only,
and with the full-vocabulary readout) and decode throughput at batch 1, 16, 64
and 256, and prints a per-op time breakdown (weight GEMMs, attention cores,
norms/elementwise, other) so the next bottleneck is visible, with the weight
GEMMs' GFLOP/s as a fraction of the kernel's peak (its multiply-add loop,
timed first on the same thread, as 'onecore bench peak' does), and for
prefill the attention cores' GEMM FLOPs (masked work included) over the
attention time, as a fraction of the same peak (decode attention is dot
products, not counted).

The model comes from --checkpoint, or from --config (a config file or a preset
name: dense-3m, moe-3m) with random weights. ONECORE_KERNEL selects the GEMM
kernel. Throughputs are tokens per second of the pinned thread's CPU time
(equal to wall time on an idle core; on a shared machine, what one core does).
--json prints one JSON object:
{"prefill_tok_s":..., "prefill_readout_tok_s":..., "decode_tok_s":{"1":...,"64":...}, "kernel":..., ...}`,
		Example: `  onecore bench engine --config dense-3m
  onecore bench engine --config moe-3m --tokens 16384 --json
  ONECORE_KERNEL=generic onecore bench engine --checkpoint models/small --tokens 2048`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (ckDir == "") == (cfgPath == "") {
				return usageError{fmt.Errorf("give exactly one of --checkpoint and --config")}
			}
			if err := amx.SelectionError(); err != nil {
				return usageError{err}
			}
			var ck *engine.Checkpoint
			if ckDir != "" {
				var err error
				if ck, err = engine.LoadCheckpoint(ckDir); err != nil {
					return err
				}
			} else {
				cfg, err := engine.LoadConfig(cfgPath)
				if err != nil {
					return err
				}
				ts := engine.InitTensors(cfg, 1)
				ck = &engine.Checkpoint{Config: cfg, Tensors: ts}
			}
			m, err := engine.NewModelWith(ck, amx.Selected(), engine.ModelOptions{Int8: int8})
			if err != nil {
				return err
			}
			defer runtime.UnlockOSThread()
			pinned := pinCPU(cpu)
			res := engine.Bench(m, engine.BenchOptions{
				Tokens: tokens, DocLen: docLen, DecodeBatch: []int{1, 16, 64, 256},
				PromptLen: promptLen, PassTokens: pass, MinDuration: minDur, Seed: 1,
			})
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				return enc.Encode(res)
			}
			fmt.Fprintf(out, "kernel %s, %s, %d tokens (documents of %d), decode after %d-token prompts\n", res.Kernel, pinned, res.Tokens, docLen, promptLen)
			if int8 {
				fmt.Fprintf(out, "int8 weight GEMMs (--int8): their share of peak is of the bf16 peak, so it can pass 100%%\n")
			}
			fmt.Fprintf(out, "throughputs are tokens per second of the pinned thread's CPU time (wall-clock prefill: %.0f tok/s)\n", res.PrefillWallTokS)
			fmt.Fprintf(out, "prefill body     %10.0f tok/s   %s\n", res.PrefillTokS, res.PrefillProfile)
			fmt.Fprintf(out, "prefill+readout  %10.0f tok/s   %s\n", res.PrefillReadoutTokS, res.ReadoutProfile)
			if len(res.ExpertLoadMaxOverMean) > 0 {
				fmt.Fprintf(out, "expert load, max/mean per MoE layer (random docs; block 0 routes by bias only): %v\n", res.ExpertLoadMaxOverMean)
			}
			for _, b := range []int{1, 16, 64, 256} {
				fmt.Fprintf(out, "decode batch %-4d %9.0f tok/s   %s\n", b, res.DecodeTokS[fmt.Sprint(b)], res.DecodeProfile[b])
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&ckDir, "checkpoint", "", "checkpoint directory")
	f.StringVar(&cfgPath, "config", "", "config file or preset (dense-3m, moe-3m); random weights")
	f.IntVar(&tokens, "tokens", 8192, "prefill tokens per measurement")
	f.IntVar(&docLen, "doc-len", 256, "document length in the prefill measurement")
	f.IntVar(&promptLen, "prompt-len", 256, "prompt length before decoding (the SWA window is full from 256 on)")
	f.IntVar(&pass, "pass", engine.DefaultPassTokens, "tokens per prefill pass")
	f.IntVar(&cpu, "cpu", -1, "CPU to pin to (-1: the first CPU this process may use)")
	f.DurationVar(&minDur, "min-time", time.Second, "minimum time per prefill measurement")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&int8, "int8", false, "quantize the weight matrices to int8, as extract --int8 does")
	benchCmd.AddCommand(cmd)
}

// pinCPU pins the current goroutine's thread to one CPU and says which.
func pinCPU(cpu int) string {
	if cpu < 0 {
		cpu = engine.AllowedCPUs()[0]
	}
	if err := engine.PinThread(cpu); err != nil {
		fmt.Fprintf(os.Stderr, "onecore: pinning to CPU %d: %v\n", cpu, err)
		return "not pinned"
	}
	return fmt.Sprintf("pinned to CPU %d", cpu)
}
