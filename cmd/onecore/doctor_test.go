package main

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/amx"
	"github.com/onecore-dev/onecore/internal/testenv"
)

// runBin runs the onecore binary with extra environment and returns
// stdout, stderr and the exit code.
func runBin(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return testenv.Run(t, env, "", args...)
}

func TestDoctor(t *testing.T) {
	out, errs, code := runBin(t, []string{"ONECORE_KERNEL="}, "doctor")
	if code != 0 {
		t.Fatalf("doctor exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"cpu:", "features:", "avx512_bf16=", "amx_tile=", "xcr0:", "arch_prctl:", "selected:   " + amx.Selected().String()} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	for _, k := range amx.Available() {
		if k != amx.KernelGeneric && !strings.Contains(out, "self-test:  "+k.String()) {
			t.Errorf("doctor did not self-test %v:\n%s", k, out)
		}
	}
}

func TestDoctorBadKernel(t *testing.T) {
	cases := map[string]string{"bogus": `unknown kernel "bogus"`}
	for _, k := range []amx.Kernel{amx.KernelAMX, amx.KernelAVX512BF16, amx.KernelAVX2} {
		if !k.Supported() {
			cases[k.String()] = "not supported on this CPU"
		}
	}
	for env, want := range cases {
		_, errs, code := runBin(t, []string{"ONECORE_KERNEL=" + env}, "doctor")
		if code == 0 || !strings.Contains(errs, want) {
			t.Errorf("ONECORE_KERNEL=%s: exit %d, stderr %q; want non-zero and %q", env, code, errs, want)
		}
	}
}

func TestBenchJSON(t *testing.T) {
	out, errs, code := runBin(t, nil, "bench", "gemm", "--m", "17", "--k", "33", "--n", "65", "--json", "--time", "70ms")
	if code != 0 {
		t.Fatalf("bench gemm: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one JSON line, got %q", out)
	}
	var g map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &g); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range g {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"gflops", "k", "kernel", "m", "n", "us_per_call"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if g["m"] != 17.0 || g["k"] != 33.0 || g["n"] != 65.0 || g["kernel"] != amx.Selected().String() || g["gflops"].(float64) <= 0 || g["us_per_call"].(float64) <= 0 {
		t.Fatalf("bad values: %v", g)
	}

	out, errs, code = runBin(t, nil, "bench", "gemm", "--m", "8", "--k", "16", "--n", "16", "--json", "--peak", "--time", "70ms")
	if code != 0 {
		t.Fatalf("bench gemm --peak: exit %d: %s", code, errs)
	}
	var gp struct {
		GFLOPS float64 `json:"gflops"`
		Peak   float64 `json:"peak_gflops"`
	}
	if err := json.Unmarshal([]byte(out), &gp); err != nil || gp.Peak <= 0 || gp.GFLOPS <= 0 {
		t.Fatalf("bench gemm --peak: %q (%v)", out, err)
	}

	out, errs, code = runBin(t, nil, "bench", "peak", "--json", "--kernel", "generic", "--time", "70ms")
	if code != 0 {
		t.Fatalf("bench peak: exit %d: %s", code, errs)
	}
	var p struct {
		Kernel string  `json:"kernel"`
		GFLOPS float64 `json:"gflops"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Kernel != "generic" || p.GFLOPS <= 0 {
		t.Fatalf("bench peak: %q (%v)", out, err)
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "gemm", "--m", "0"},
		{"bench", "gemm", "--kernel", "bogus"},
		{"bench", "peak", "--kernel", "nope"},
	} {
		_, errs, code := runBin(t, nil, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errs, exitUsage)
		}
	}
}
