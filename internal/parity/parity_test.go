// Package parity holds the Go engine to the independent PyTorch reference
// of docs/design.md §2 (scripts/ref/onecore_ref.py, float64, written from the spec
// and not from the Go code).
package parity

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/internal/testenv"
)

// python is Debian's interpreter, the one that has python3-torch.
const python = "/usr/bin/python3"

// requireTorch fails (never skips) when the reference cannot run.
func requireTorch(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import torch, numpy").CombinedOutput()
	if err != nil {
		t.Fatalf("%s with torch and numpy is needed for the reference (%v: %s): run `make deps` (scripts/test-deps.sh installs python3-torch python3-numpy)",
			python, err, strings.TrimSpace(string(out)))
	}
}

func refScript(name string) string { return filepath.Join(testenv.RepoRoot(), "scripts", "ref", name) }

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readLogits reads float32 little-endian logits [T×V], checking the size.
func readLogits(t *testing.T, path string, T, V int) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != T*V*4 {
		t.Fatalf("%s: %d bytes, want %d (T=%d × V=%d × 4)", path, len(b), T*V*4, T, V)
	}
	x := make([]float32, T*V)
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, x); err != nil {
		t.Fatal(err)
	}
	return x
}

func readIDs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	if err := json.Unmarshal(b, &ids); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ids
}

// docPos is t's position counted from its document's start.
func docPos(ids []int, t int) int {
	s := t
	for s > 0 && ids[s] != 1 {
		s--
	}
	return t - s
}

// routing is the reference's MoE report (onecore_ref.py --margins).
type routing struct {
	Stable []bool    `json:"stable"`
	Amp    []float64 `json:"lin_amplification"`
	Blocks []struct {
		Layer, Doc, Block int
		Margin            float64
	} `json:"blocks"`
}

// stream packs documents of the given lengths: each starts with <bos> (1),
// except the first when noBOS (the stream start is a document start anyway),
// the rest are random ids in [3, V), and a document longer than 2 ends with
// <eos> (2).
func stream(rng *rand.Rand, V int, lens []int, noBOS bool) []int {
	var ids []int
	for d, n := range lens {
		for i := 0; i < n; i++ {
			switch {
			case i == 0 && !(d == 0 && noBOS):
				ids = append(ids, 1)
			case i == n-1 && n > 2:
				ids = append(ids, 2)
			default:
				ids = append(ids, 3+rng.IntN(V-3))
			}
		}
	}
	return ids
}

// Tolerance. Both sides read the same bf16 weights exactly; the reference
// computes in float64, the engine feeds bf16 activations to its GEMMs (fp32
// accumulate). Each bf16 rounding is a relative error of at most 2^-9 and
// a layer has ~5 rounded GEMM operands, so a 6-layer model carries a few
// percent of noise in its logits, more where the net amplifies it (sharp
// softmaxes, the per-head RMSNorm of a small linear-attention output).
// The reference measures that noise itself: `forward --emulate-bf16` rounds
// every GEMM activation operand to bf16 (an ideal bf16 engine). Against
// exact float64, per position, max|Δlogit| / RMS(logits) has a median of
// 0.019–0.031 and a 98th percentile of 0.04–0.09 on the configs below, but
// single positions reach 0.8 (e.g. a linear-attention head whose output at
// a <bos> is near zero and flips sign under rounding); the Go engine shows
// the same picture (median 0.023–0.040). Spec deviations are far larger: a
// wrong RoPE rotation or a missing per-head gain puts the median at
// 0.8–1.0; a window one key too wide puts 4% of the positions above 0.25
// on the window-32 config. So, per comparison:
//   - median relative error ≤ 0.06 (about 2× the bf16 noise);
//   - outliers, positions above max(0.25, 4× the ideal bf16 engine's error
//     at that position), at most 1% of positions (at least 1 allowed);
//   - top-1: the same bound on how far below the reference's maximum the
//     engine's argmax scores (relative to RMS), with the same allowance;
//   - positions where the reference reports a linear-attention cancellation
//     factor above maxAmp are ill-conditioned and only count toward the
//     median: at a <bos>, S = k vᵀ and the per-head RMSNorm output is
//     sign(q·k)·v/|v|, so where cos(q,k) ≈ 0.001 (seen in `init-model`
//     checkpoints) rounding q or k flips the sign — the Go engine did
//     (error 0.86) where the emulated engine happened not to (0.06).
const (
	maxAmp     = 100
	tolMedian  = 0.06
	tolOutlier = 0.25
	maxOutFrac = 0.01
)

type stats struct {
	compared, outliers, topBad int
	illCond                    int // positions excluded from outlier counts
	median, p98, max           float64
	bad                        []badPos // outliers and top-1 misses, in stream order
}

// badPos is one position outside the bound, for the log.
type badPos struct {
	t               int
	rel, gap, ideal float64
}

// rowErr returns max_v |w−g| / RMS(w) and how far below max(w) the argmax
// of g scores in w, relative to RMS(w). NaN counts as an infinite error.
func rowErr(w, g []float32) (rel, topGap float64) {
	var ss, maxd float64
	wmax, gargmax := math.Inf(-1), 0
	for v := range w {
		ss += float64(w[v]) * float64(w[v])
		d := math.Abs(float64(w[v]) - float64(g[v]))
		if d > maxd || math.IsNaN(d) {
			maxd = d
		}
		wmax = math.Max(wmax, float64(w[v]))
		if g[v] > g[gargmax] {
			gargmax = v
		}
	}
	rms := math.Sqrt(ss / float64(len(w)))
	rel, topGap = maxd/rms, (wmax-float64(w[gargmax]))/rms
	if math.IsNaN(rel) {
		rel = math.Inf(1)
	}
	return rel, topGap
}

// compare measures Go logits (got) against the exact reference (want) over
// the positions the routing report marks stable; ideal is the reference's
// emulated bf16 engine, whose error bounds what a position may show.
func compare(want, got, ideal []float32, T, V int, stable []bool, amp []float64) stats {
	var rel []float64
	var s stats
	for t := 0; t < T; t++ {
		if stable != nil && !stable[t] {
			continue
		}
		w := want[t*V : (t+1)*V]
		r, gap := rowErr(w, got[t*V:(t+1)*V])
		bound := tolOutlier
		if ideal != nil {
			ir, igap := rowErr(w, ideal[t*V:(t+1)*V])
			bound = math.Max(bound, 4*math.Max(ir, igap))
		}
		rel = append(rel, r)
		if amp != nil && amp[t] > maxAmp {
			s.illCond++
			continue
		}
		if r > bound {
			s.outliers++
		}
		if gap > bound {
			s.topBad++
		}
		if r > bound || gap > bound {
			s.bad = append(s.bad, badPos{t, r, gap, bound / 4})
		}
	}
	s.compared = len(rel)
	if len(rel) == 0 {
		return s
	}
	sort.Float64s(rel)
	s.median = rel[len(rel)/2]
	s.p98 = rel[len(rel)*98/100]
	s.max = rel[len(rel)-1]
	return s
}

func (s stats) check() error {
	allowed := max(1, int(maxOutFrac*float64(s.compared)))
	switch {
	case s.compared == 0:
		return fmt.Errorf("no position compared")
	case s.median > tolMedian:
		return fmt.Errorf("median relative error %.4f > %.2f", s.median, tolMedian)
	case s.outliers > allowed:
		return fmt.Errorf("%d positions with relative error > max(%.2f, 4× ideal bf16) (allowed %d)", s.outliers, tolOutlier, allowed)
	case s.topBad > allowed:
		return fmt.Errorf("%d positions whose top-1 scores > max(%.2f, 4× ideal bf16)·RMS below the reference's (allowed %d)", s.topBad, tolOutlier, allowed)
	}
	return nil
}

// small is a fast non-default shape: window and route block 32, so short
// streams cross many chunk and block boundaries.
var small = map[string]any{
	"vocab_size": 512, "d_model": 64, "layers": []string{"swa", "lin", "lin", "swa"},
	"swa_heads": 2, "swa_head_dim": 32, "window": 32, "rope_theta": 500.0,
	"lin_heads": 2, "d_state": 16, "lin_head_dim": 32, "d_ff": 128,
	"experts": 8, "top_k": 2, "d_ff_expert": 64, "route_block": 32, "norm_eps": 1e-6,
}

func with(base map[string]any, kv ...any) map[string]any {
	m := map[string]any{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

type parityCase struct {
	name  string
	cfg   map[string]any
	vocab int
	lens  []int // document lengths: cross chunk (window) and route-block boundaries
	noBOS bool
}

var cases = []parityCase{
	// The default dense-3m model; the first document crosses the 256 chunk
	// boundary. Streams at default size stay short: Debian's torch does
	// float64 GEMMs with the reference BLAS, and the readout alone is
	// T×16384×256 multiply-adds.
	{"dense-default", map[string]any{}, 16384, []int{262, 20}, false},
	// Default-size experts on layers 0,3,5: the first document's second
	// route block is routed by the mean of its first.
	{"moe-default", map[string]any{"moe_layers": []int{0, 3, 5}}, 16384, []int{280, 9}, false},
	// Non-default small shapes, dense and MoE, stream starting without <bos>.
	{"small-w32", small, 512, []int{75, 1, 33, 64, 17, 97, 32}, true},
	{"small-w32-moe", with(small, "moe_layers", []int{0, 2, 3}), 512, []int{75, 1, 33, 64, 17, 97, 32}, true},
}

// TestReferenceSelfTest runs the reference's own tests (naive vs chunked
// forms, document isolation, safetensors round trip, finite differences).
func TestReferenceSelfTest(t *testing.T) {
	requireTorch(t)
	run(t, python, refScript("selftest.py"))
}

// TestForwardParity compares `onecore forward` with the reference on random
// checkpoints written by both `onecore init-model` and the reference's
// `init` (so the Go loader also reads independently written files).
func TestForwardParity(t *testing.T) {
	requireTorch(t)
	bin := testenv.Binary(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))

	type job struct {
		c         parityCase
		ck, ids   string
		refOut    string
		idealOut  string
		marginOut string
		T         int
		source    string
	}
	var jobs []job
	var pyJobs [][]string
	for i, c := range cases {
		cfgPath := filepath.Join(dir, c.name+".config.json")
		writeJSON(t, cfgPath, c.cfg)
		ids := stream(rng, c.vocab, c.lens, c.noBOS)
		idsPath := filepath.Join(dir, c.name+".ids.json")
		writeJSON(t, idsPath, ids)
		for _, src := range []string{"go", "py"} {
			ck := filepath.Join(dir, c.name+"."+src)
			seed := fmt.Sprint(100 + i)
			if src == "go" {
				run(t, bin, "init-model", "--config", cfgPath, "--seed", seed, "--out", ck)
			} else {
				pyJobs = append(pyJobs, []string{"init", "--config", cfgPath, "--seed", seed, "--out", ck})
			}
			j := job{c: c, ck: ck, ids: idsPath, T: len(ids), source: src,
				refOut: ck + ".ref.bin", idealOut: ck + ".ideal.bin", marginOut: ck + ".margins.json"}
			jobs = append(jobs, j)
		}
	}
	for _, j := range jobs {
		pyJobs = append(pyJobs,
			[]string{"forward", "--checkpoint", j.ck, "--ids", j.ids, "--out", j.refOut, "--margins", j.marginOut},
			[]string{"forward", "--checkpoint", j.ck, "--ids", j.ids, "--out", j.idealOut, "--emulate-bf16"})
	}
	jobsPath := filepath.Join(dir, "jobs.json")
	writeJSON(t, jobsPath, pyJobs)
	run(t, python, refScript("onecore_ref.py"), "batch", jobsPath)

	for _, j := range jobs {
		t.Run(j.c.name+"/"+j.source+"-init", func(t *testing.T) {
			goOut := j.ck + ".go.bin"
			run(t, bin, "forward", "--checkpoint", j.ck, "--ids-file", j.ids, "--out", goOut)
			V := j.c.vocab
			want := readLogits(t, j.refOut, j.T, V)
			got := readLogits(t, goOut, j.T, V)
			var r routing
			b, err := os.ReadFile(j.marginOut)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &r); err != nil || len(r.Stable) != j.T || len(r.Amp) != j.T {
				t.Fatalf("%s: bad routing report (%v, %d/%d positions)", j.marginOut, err, len(r.Stable), len(r.Amp))
			}
			s := compare(want, got, readLogits(t, j.idealOut, j.T, V), j.T, V, r.Stable, r.Amp)
			t.Logf("compared %d/%d positions (%d ill-conditioned): median rel %.4f, p98 %.4f, max %.4f, outliers %d, top-1 misses %d",
				s.compared, j.T, s.illCond, s.median, s.p98, s.max, s.outliers, s.topBad)
			ids := readIDs(t, j.ids)
			for i, b := range s.bad {
				if i == 8 {
					t.Logf("... %d more", len(s.bad)-i)
					break
				}
				t.Logf("position %d (document position %d): relative error %.3f, top-1 gap %.3f, ideal bf16 engine %.3f",
					b.t, docPos(ids, b.t), b.rel, b.gap, b.ideal)
			}
			if err := s.check(); err != nil {
				t.Errorf("Go logits disagree with the reference: %v", err)
			}
			// Python-written checkpoints route with clear margins by
			// construction; too few comparable positions means the
			// routing itself disagrees with the reference's view.
			if j.source == "py" && s.compared*2 < j.T {
				t.Errorf("only %d of %d positions have stable routing", s.compared, j.T)
			}
		})
	}
}

// TestToleranceSeparates shows the tolerance is neither too tight nor
// vacuous, on the reference alone: an ideal bf16 engine (every GEMM
// activation operand rounded to bf16) passes, and the same weights run with
// a wrong rope_theta (a spec-level slip) fail.
func TestToleranceSeparates(t *testing.T) {
	requireTorch(t)
	dir := t.TempDir()
	c := cases[3]
	cfgPath := filepath.Join(dir, "config.json")
	writeJSON(t, cfgPath, c.cfg)
	ids := stream(rand.New(rand.NewPCG(3, 4)), c.vocab, c.lens, c.noBOS)
	idsPath := filepath.Join(dir, "ids.json")
	writeJSON(t, idsPath, ids)
	ck, bad := filepath.Join(dir, "ck"), filepath.Join(dir, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(bad, "config.json"), with(c.cfg, "rope_theta", 10000.0))
	jobs := [][]string{
		{"init", "--config", cfgPath, "--seed", "7", "--out", ck},
		{"forward", "--checkpoint", ck, "--ids", idsPath, "--out", ck + ".exact", "--margins", ck + ".m.json"},
		{"forward", "--checkpoint", ck, "--ids", idsPath, "--out", ck + ".bf16", "--emulate-bf16"},
	}
	writeJSON(t, filepath.Join(dir, "jobs.json"), jobs)
	run(t, python, refScript("onecore_ref.py"), "batch", filepath.Join(dir, "jobs.json"))
	st, err := os.ReadFile(filepath.Join(ck, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "model.safetensors"), st, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, python, refScript("onecore_ref.py"), "forward", "--checkpoint", bad, "--ids", idsPath, "--out", bad+".bin", "--emulate-bf16")
	var r routing
	b, _ := os.ReadFile(ck + ".m.json")
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	T, V := len(ids), c.vocab
	exact := readLogits(t, ck+".exact", T, V)
	good := compare(exact, readLogits(t, ck+".bf16", T, V), nil, T, V, r.Stable, nil)
	t.Logf("ideal bf16 engine: median %.4f p98 %.4f max %.4f over %d positions", good.median, good.p98, good.max, good.compared)
	if err := good.check(); err != nil {
		t.Errorf("an ideal bf16 engine fails the tolerance: %v", err)
	}
	wrong := compare(exact, readLogits(t, bad+".bin", T, V), readLogits(t, ck+".bf16", T, V), T, V, r.Stable, r.Amp)
	t.Logf("wrong rope_theta: median %.4f p98 %.4f", wrong.median, wrong.p98)
	if wrong.check() == nil {
		t.Errorf("a wrong rope_theta passes the tolerance")
	}
}

// TestCompare checks the comparison itself on synthetic logits.
func TestCompare(t *testing.T) {
	const T, V = 200, 64
	rng := rand.New(rand.NewPCG(7, 8))
	want := make([]float32, T*V)
	for i := range want {
		want[i] = float32(rng.NormFloat64() * 4)
	}
	perturb := func(f func(t, v int, w float32) float32) []float32 {
		g := make([]float32, len(want))
		for t := 0; t < T; t++ {
			for v := 0; v < V; v++ {
				g[t*V+v] = f(t, v, want[t*V+v])
			}
		}
		return g
	}
	noise := func(eps float64) func(int, int, float32) float32 {
		return func(_, _ int, w float32) float32 { return w + float32(rng.NormFloat64()*eps) }
	}
	amp := make([]float64, T)
	amp[5] = 1e3 // ill-conditioned: only counts toward the median
	tests := []struct {
		name string
		got  []float32
		amp  []float64
		ok   bool
	}{
		{"identical", perturb(func(_, _ int, w float32) float32 { return w }), nil, true},
		{"bf16-like noise", perturb(noise(0.02)), nil, true},
		{"large noise", perturb(noise(0.5)), nil, false},
		{"one position off", perturb(func(t, v int, w float32) float32 {
			if t == 7 {
				return -w
			}
			return w
		}), nil, true},
		{"five positions off", perturb(func(t, v int, w float32) float32 {
			if t%40 == 3 {
				return -w
			}
			return w
		}), nil, false},
		{"ill-conditioned positions excluded", perturb(func(t, v int, w float32) float32 {
			if t == 5 || t == 7 {
				return -w
			}
			return w
		}), amp, true},
		{"NaN", perturb(func(t, v int, w float32) float32 {
			if t == 9 && v == 3 {
				return float32(math.NaN())
			}
			return w
		}), nil, true}, // one NaN position is one outlier
		{"NaN everywhere", perturb(func(_, _ int, _ float32) float32 { return float32(math.NaN()) }), nil, false},
	}
	for _, tc := range tests {
		s := compare(want, tc.got, nil, T, V, nil, tc.amp)
		if err := s.check(); (err == nil) != tc.ok {
			t.Errorf("%s: check() = %v, want ok=%v (stats %+v)", tc.name, err, tc.ok, s)
		}
	}
}
