package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/internal/atomicfile"
)

// MaskFromCounts lists the ids with a zero count, never the special ids.
func MaskFromCounts(counts []int64) []int32 {
	mask := []int32{}
	for id, n := range counts {
		if n == 0 && id > eosID {
			mask = append(mask, int32(id))
		}
	}
	return mask
}

// SaveCheckpoint writes config.json, model.safetensors (bf16) and
// generation.json through the engine (so the engine loads exactly what we
// write) and, when tokenizerPath is set, copies the tokenizer into dir.
func SaveCheckpoint(dir string, c *Config, p *Params[float32], gen *Generation, tokenizerPath string) error {
	tensors := map[string][]float32{}
	for _, s := range p.Specs {
		tensors[s.Name] = p.W(s.Name)
	}
	if err := engine.SaveCheckpoint(dir, c, tensors, gen); err != nil {
		return err
	}
	if tokenizerPath == "" {
		return nil
	}
	dst := filepath.Join(dir, engine.TokenizerFile)
	if a, _ := filepath.Abs(tokenizerPath); a != "" {
		if b, _ := filepath.Abs(dst); a == b {
			return nil
		}
	}
	b, err := os.ReadFile(tokenizerPath)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(dst); derr == nil {
			// The source moved (a checkout renamed it) during a long run: an
			// earlier save already copied it, and the tokenizer of a run
			// never changes.
			return nil
		}
	}
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(dst, b)
}

// pinTokenizer copies the tokenizer into the run's directory once, at the
// start, and returns the copy's path: a run of hours then no longer needs
// the original file (it died at its next checkpoint when a checkout moved
// the file it was started with).
func pinTokenizer(out, tokenizerPath string) (string, error) {
	if tokenizerPath == "" {
		return "", nil
	}
	dst := filepath.Join(out, engine.TokenizerFile)
	if a, _ := filepath.Abs(tokenizerPath); a != "" {
		if b, _ := filepath.Abs(dst); a == b {
			return dst, nil
		}
	}
	b, err := os.ReadFile(tokenizerPath)
	if err != nil {
		return "", err
	}
	if old, err := os.ReadFile(dst); err == nil && string(old) == string(b) {
		return dst, nil
	}
	return dst, atomicfile.WriteFile(dst, b)
}

// LoadCheckpoint reads a checkpoint through the engine's validating loader
// (which refuses NaN/Inf weights, naming the tensor) and returns its config, weights (fp32) and generation.json (empty when
// absent). A classifier head present in the file is kept.
func LoadCheckpoint(dir string) (*Config, *Params[float32], *Generation, error) {
	ck, err := engine.LoadCheckpoint(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	specs := ParamSpecs(ck.Config, ck.NumLabels())
	if _, ok := ck.Tensors[engine.HeadClsQ]; ok {
		specs = append(specs, TensorSpec{engine.HeadClsQ, []int{ck.Config.DModel}})
	}
	p := NewParams[float32](specs)
	for _, s := range p.Specs {
		v, ok := ck.Tensors[s.Name]
		if !ok {
			if s.Name == "head.cls.b" {
				continue // optional
			}
			return nil, nil, nil, fmt.Errorf("%s: missing tensor %q", dir, s.Name)
		}
		copy(p.W(s.Name), v)
	}
	gen := ck.Generation
	if gen == nil {
		gen = &Generation{StopIDs: []int32{eosID}}
	}
	return ck.Config, p, gen, nil
}

// TrainState is train_state/state.json: everything besides the tensors
// that --resume needs to continue exactly where a run stopped.
type TrainState struct {
	Step   int64  `json:"step"`
	Tokens int64  `json:"tokens"`
	Cursor Cursor `json:"cursor"`
	// Seed and the step number determine every random draw (negatives are
	// drawn from a generator seeded with (seed, step)), so the RNG state is
	// (Seed, Step).
	Seed    uint64 `json:"seed"`
	Options string `json:"options"` // fingerprint of the run's options
	// Data is the digest of the examples or corpus trained on
	// (dataDigest); empty in states written before 2026-12-06.
	Data string `json:"data,omitempty"`
}

// saveTrainState writes master weights and AdamW moments (fp32), then
// state.json last: a state.json always describes complete tensor files.
func saveTrainState(dir string, p *Params[float32], opt *AdamW, st *TrainState) error {
	sd := filepath.Join(dir, "train_state")
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return err
	}
	var ts []*engine.Tensor
	for _, s := range p.Specs {
		off := p.Off[s.Name]
		ts = append(ts,
			engine.F32Tensor("master."+s.Name, s.Shape, p.W(s.Name)),
			engine.F32Tensor("adam_m."+s.Name, s.Shape, opt.M[off:off+s.Size()]),
			engine.F32Tensor("adam_v."+s.Name, s.Shape, opt.V[off:off+s.Size()]))
	}
	var buf bytes.Buffer
	if err := engine.WriteSafetensors(&buf, ts, map[string]string{"step": strconv.FormatInt(st.Step, 10)}); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(sd, "optimizer.safetensors"), buf.Bytes()); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(sd, "state.json"), append(b, '\n'))
}

// loadTrainState restores what saveTrainState wrote.
func loadTrainState(dir string, p *Params[float32], opt *AdamW) (*TrainState, error) {
	sd := filepath.Join(dir, "train_state")
	b, err := os.ReadFile(filepath.Join(sd, "state.json"))
	if err != nil {
		return nil, err
	}
	st := &TrainState{}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(sd, "state.json"), err)
	}
	path := filepath.Join(sd, "optimizer.safetensors")
	sf, err := engine.ReadSafetensors(path)
	if err != nil {
		return nil, err
	}
	if sf.Metadata["step"] != strconv.FormatInt(st.Step, 10) {
		return nil, fmt.Errorf("%s: written at step %s but state.json says step %d (interrupted checkpoint write)", path, sf.Metadata["step"], st.Step)
	}
	for _, s := range p.Specs {
		off := p.Off[s.Name]
		for _, part := range []struct {
			prefix string
			dst    []float32
		}{{"master.", p.Data}, {"adam_m.", opt.M}, {"adam_v.", opt.V}} {
			t, ok := sf.Tensors[part.prefix+s.Name]
			if !ok || t.DType != engine.F32 || t.NumElements() != s.Size() {
				return nil, fmt.Errorf("%s: tensor %q missing, not F32 or of the wrong size", path, part.prefix+s.Name)
			}
			v := t.Float32()
			// A NaN master weight or moment would poison every later step
			// (and the checkpoints it writes): refuse it as LoadCheckpoint does.
			if err := engine.CheckFinite(part.prefix+s.Name, s.Shape, v); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			copy(part.dst[off:off+s.Size()], v)
		}
	}
	opt.Step = st.Step
	return st, nil
}
