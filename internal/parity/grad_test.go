package parity

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/onecore-dev/onecore/train"
)

// TestGradParity holds the Go training path's float64 gradients to PyTorch
// autograd on the reference (onecore_ref.py grad): loss = mean full-vocabulary
// next-token cross-entropy over positions whose next token is in the same
// document, MoE top-k treated as constant, no load-balancing term. Both
// sides compute in float64 from the same bf16 weights, so they must agree
// to rounding: the reference writes float32 gradients (relative 2^-24 per
// element), hence a per-tensor relative L2 error bound of 1e-6 and 1e-9 on
// the loss. The checkpoints are written by the reference's `init`, so the
// trainer's loader also reads independently written files.
func TestGradParity(t *testing.T) {
	requireTorch(t)
	dir := t.TempDir()
	gradCases := []parityCase{
		{"small-w32", small, 512, []int{45, 1, 33, 70}, true},
		{"small-w32-moe", with(small, "moe_layers", []int{0, 2, 3}), 512, []int{70, 3, 40}, false},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var jobs [][]string
	type gcase struct {
		c                       parityCase
		ck, ids, grads, margins string
		loss                    string
		stream                  []int
	}
	var gs []gcase
	for i, c := range gradCases {
		g := gcase{c: c, ck: filepath.Join(dir, c.name)}
		g.ids, g.grads = g.ck+".ids.json", g.ck+".grads.safetensors"
		g.margins, g.loss = g.ck+".margins.json", g.ck+".loss.json"
		cfgPath := g.ck + ".config.json"
		writeJSON(t, cfgPath, c.cfg)
		g.stream = stream(rng, c.vocab, c.lens, c.noBOS)
		writeJSON(t, g.ids, g.stream)
		jobs = append(jobs,
			[]string{"init", "--config", cfgPath, "--seed", fmt.Sprint(11 + i), "--out", g.ck},
			[]string{"grad", "--checkpoint", g.ck, "--ids", g.ids, "--out", g.grads, "--margins", g.margins, "--loss", g.loss})
		gs = append(gs, g)
	}
	jobsPath := filepath.Join(dir, "jobs.json")
	writeJSON(t, jobsPath, jobs)
	run(t, python, refScript("onecore_ref.py"), "batch", jobsPath)

	for _, g := range gs {
		t.Run(g.c.name, func(t *testing.T) {
			var r routing
			b, err := os.ReadFile(g.margins)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			for _, blk := range r.Blocks {
				// float64 on both sides: only a near-exact tie could route
				// differently.
				if blk.Block > 0 && blk.Margin < 1e-6 {
					t.Fatalf("layer %d doc %d block %d: router margin %g too small for a gradient check; change the seed",
						blk.Layer, blk.Doc, blk.Block, blk.Margin)
				}
			}
			var want struct{ Loss float64 }
			b, err = os.ReadFile(g.loss)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}

			cfg, p32, _, err := train.LoadCheckpoint(g.ck)
			if err != nil {
				t.Fatalf("train.LoadCheckpoint(%s): %v", g.ck, err)
			}
			p := train.NewParams[float64](p32.Specs)
			for i, v := range p32.Data {
				p.Data[i] = float64(v)
			}
			m := train.NewModel(cfg, p)
			m.AuxCoef = 0 // the reference loss has no load-balancing term
			ids := make([]int32, len(g.stream))
			for i, x := range g.stream {
				ids[i] = int32(x)
			}
			hf := m.Forward(ids, 0)
			// The reference's targets: the next token, except across a
			// document start (<bos>) and after the last position.
			targets := make([]int32, len(ids))
			for i := range targets {
				targets[i] = -1
				if i+1 < len(ids) && ids[i+1] != 1 {
					targets[i] = ids[i+1]
				}
			}
			loss, n, dhf := train.FullCE(m, hf, targets, true)
			m.Backward(dhf)
			t.Logf("loss go %.12f ref %.12f over %d targets", loss, want.Loss, n)
			if math.Abs(loss-want.Loss) > 1e-9*math.Abs(want.Loss) {
				t.Errorf("loss: go %.12f, reference %.12f", loss, want.Loss)
			}

			ref, err := readF32Safetensors(g.grads)
			if err != nil {
				t.Fatal(err)
			}
			worst, worstName := 0.0, ""
			for _, s := range p.Specs {
				w, ok := ref[s.Name]
				if !ok {
					t.Errorf("reference has no gradient for %s", s.Name)
					continue
				}
				got := p.G(s.Name)
				if len(w) != len(got) {
					t.Errorf("%s: reference gradient has %d elements, Go %d", s.Name, len(w), len(got))
					continue
				}
				var num, den float64
				for i := range w {
					d := got[i] - float64(w[i])
					num += d * d
					den += float64(w[i]) * float64(w[i])
				}
				rel := math.Sqrt(num / math.Max(den, 1e-300))
				if den == 0 && num == 0 {
					rel = 0
				}
				if rel > worst {
					worst, worstName = rel, s.Name
				}
				if rel > 1e-6 || math.IsNaN(rel) {
					t.Errorf("%s: relative L2 gradient error %.3g (|ref| %.3g)", s.Name, rel, math.Sqrt(den))
				}
			}
			t.Logf("worst relative gradient error %.3g (%s)", worst, worstName)
		})
	}
}

// readF32Safetensors reads the reference's float32 gradient file.
func readF32Safetensors(path string) (map[string][]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("%s: truncated", path)
	}
	n := int(binary.LittleEndian.Uint64(b))
	if n < 0 || 8+n > len(b) {
		return nil, fmt.Errorf("%s: header length %d past the end", path, n)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		return nil, err
	}
	data := b[8+n:]
	out := map[string][]float32{}
	for name, raw := range hdr {
		if name == "__metadata__" {
			continue
		}
		var info struct {
			Dtype   string
			Offsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			return nil, err
		}
		if info.Dtype != "F32" || info.Offsets[0] < 0 || info.Offsets[1] > len(data) || info.Offsets[0] > info.Offsets[1] {
			return nil, fmt.Errorf("%s: tensor %s: dtype %s, offsets %v", path, name, info.Dtype, info.Offsets)
		}
		seg := data[info.Offsets[0]:info.Offsets[1]]
		v := make([]float32, len(seg)/4)
		for i := range v {
			v[i] = math.Float32frombits(uint32(seg[4*i]) | uint32(seg[4*i+1])<<8 | uint32(seg[4*i+2])<<16 | uint32(seg[4*i+3])<<24)
		}
		out[name] = v
	}
	return out, nil
}
