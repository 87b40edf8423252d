package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/onecore-dev/onecore/amx"
	"github.com/spf13/cobra"
)

var doctorCmd = &cobra.Command{
	Use:   "doctor",
	Short: "Check this machine's CPU features and self-test every GEMM kernel",
	Long: `Prints the CPU model, the instruction sets onecore's kernels use (AVX2,
FMA, AVX-512F/BW, AVX512_BF16, AMX-TILE, AMX-BF16), XCR0 (which register state
the OS saves: bits 5-7 for AVX-512, 17-18 for AMX tiles), the result of the
arch_prctl call Linux requires before AMX, the kernel selected (ONECORE_KERNEL
forces one), and then multiplies ragged shapes with every available kernel
and compares each with the pure-Go kernel, with guard cells around the
outputs. Exits non-zero if a kernel disagrees or ONECORE_KERNEL is unusable.

On a Xeon with AMX this is how the AMX path is verified.`,
	Example: `  onecore doctor
  ONECORE_KERNEL=avx2 onecore doctor`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		return doctor(cmd.OutOrStdout())
	},
}

func init() { rootCmd.AddCommand(doctorCmd) }

func doctor(w io.Writer) error {
	c := amx.CPU()
	if c.Vendor == "" {
		fmt.Fprintf(w, "cpu:        not detected (purego build or not amd64: no fast kernels)\n")
	} else {
		fmt.Fprintf(w, "cpu:        %s (%s)\n", c.Model, c.Vendor)
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "features:   avx2=%s fma=%s avx512f=%s avx512bw=%s avx512_bf16=%s avx512_vnni=%s amx_tile=%s amx_bf16=%s\n",
		yes(c.AVX2), yes(c.FMA), yes(c.AVX512F), yes(c.AVX512BW), yes(c.AVX512BF16), yes(c.AVX512VNNI), yes(c.AMXTile), yes(c.AMXBF16))
	fmt.Fprintf(w, "xcr0:       %#x (avx state: %s, avx-512 state: %s, amx tile state: %s)\n",
		c.XCR0, yes(c.OSAVX), yes(c.OSAVX512), yes(c.OSAMX))
	switch {
	case c.AMXPerm:
		fmt.Fprintf(w, "arch_prctl: ARCH_REQ_XCOMP_PERM(XTILEDATA) ok\n")
	case c.AMXPermErr != nil:
		fmt.Fprintf(w, "arch_prctl: ARCH_REQ_XCOMP_PERM(XTILEDATA) failed: %v\n", c.AMXPermErr)
	default:
		fmt.Fprintf(w, "arch_prctl: not attempted (no AMX in CPUID/XCR0)\n")
	}
	var names []string
	for _, k := range amx.Available() {
		names = append(names, k.String())
	}
	fmt.Fprintf(w, "kernels:    %s (best first)\n", strings.Join(names, ", "))
	selErr := amx.SelectionError()
	if env := os.Getenv("ONECORE_KERNEL"); selErr != nil {
		fmt.Fprintf(w, "selected:   none: ONECORE_KERNEL=%s is unusable\n", env)
	} else if env != "" {
		fmt.Fprintf(w, "selected:   %s (ONECORE_KERNEL)\n", amx.Selected())
	} else {
		fmt.Fprintf(w, "selected:   %s\n", amx.Selected())
	}
	fmt.Fprintf(w, "elementwise: %s\n", amx.ElementwiseKernel())
	failed := 0
	for _, k := range amx.Available() {
		if k == amx.KernelGeneric {
			continue
		}
		if err := amx.SelfTest(k); err != nil {
			failed++
			fmt.Fprintf(w, "self-test:  %-10s FAIL: %v\n", k, err)
		} else {
			fmt.Fprintf(w, "self-test:  %-10s ok (vs generic, ragged shapes, guard cells)\n", k)
		}
	}
	if err := amx.SelfTestQ8(); err != nil {
		failed++
		fmt.Fprintf(w, "self-test:  int8 (%s) FAIL: %v\n", amx.Q8Kernel(), err)
	} else {
		fmt.Fprintf(w, "self-test:  int8 (%s) ok (vs generic, bit-identical; used by --int8)\n", amx.Q8Kernel())
	}
	if err := amx.SelfTestElementwise(); err != nil {
		failed++
		fmt.Fprintf(w, "self-test:  elementwise (%s) FAIL: %v\n", amx.ElementwiseKernel(), err)
	} else {
		fmt.Fprintf(w, "self-test:  elementwise (%s) ok\n", amx.ElementwiseKernel())
	}
	if selErr != nil {
		return selErr
	}
	if failed > 0 {
		return errors.New("kernel self-test failed: do not trust this machine's fast path (force another with ONECORE_KERNEL)")
	}
	return nil
}
