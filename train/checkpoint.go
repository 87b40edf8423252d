package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Generation is generation.json: what inference needs besides the weights.
type Generation struct {
	// VocabMask lists the ids never seen in training; decoding never emits them.
	VocabMask []int32 `json:"vocab_mask"`
	// StopIDs end a generation (<eos>).
	StopIDs []int32 `json:"stop_ids"`
	// Templates are prompt templates by name ("{prompt}" is replaced).
	Templates map[string]string `json:"templates,omitempty"`
	// Labels is a classifier head's label set, in head.cls column order.
	Labels []string `json:"labels,omitempty"`
}

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

// SaveCheckpoint writes config.json, model.safetensors (bf16),
// generation.json and, when tokenizerPath is set, a copy of the tokenizer
// into dir. Every file is replaced atomically.
func SaveCheckpoint(dir string, c *Config, p *Params[float32], gen *Generation, tokenizerPath string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cb, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "config.json"), append(cb, '\n')); err != nil {
		return err
	}
	ts := make([]stTensor, len(p.Specs))
	for i, s := range p.Specs {
		ts[i] = stTensor{s.Name, s.Shape, p.W(s.Name)}
	}
	if err := writeSafetensors(filepath.Join(dir, "model.safetensors"), "BF16", ts, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	gb, err := json.MarshalIndent(gen, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "generation.json"), append(gb, '\n')); err != nil {
		return err
	}
	if tokenizerPath != "" {
		src := tokenizerPath
		dst := filepath.Join(dir, "tokenizer.json")
		if abs1, _ := filepath.Abs(src); abs1 != "" {
			if abs2, _ := filepath.Abs(dst); abs1 == abs2 {
				return nil
			}
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(dst, b); err != nil {
			return err
		}
	}
	return nil
}

// LoadCheckpoint reads a checkpoint directory's config, weights (widened to
// fp32) and generation.json. Head tensors present in the file are kept.
func LoadCheckpoint(dir string) (*Config, *Params[float32], *Generation, error) {
	cb, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := parseConfig(cb, filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, nil, err
	}
	path := filepath.Join(dir, "model.safetensors")
	ts, _, err := readSafetensors(path)
	if err != nil {
		return nil, nil, nil, err
	}
	nLabels := 0
	if t, ok := ts["head.cls.b"]; ok && len(t.Shape) == 1 {
		nLabels = t.Shape[0]
	}
	p := NewParams[float32](ParamSpecs(c, nLabels))
	if err := fillParams(p, ts, path); err != nil {
		return nil, nil, nil, err
	}
	gen := &Generation{StopIDs: []int32{eosID}}
	if gb, err := os.ReadFile(filepath.Join(dir, "generation.json")); err == nil {
		if err := json.Unmarshal(gb, gen); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "generation.json"), err)
		}
	} else if !os.IsNotExist(err) {
		return nil, nil, nil, err
	}
	return c, p, gen, nil
}

// fillParams copies tensors into p, checking names and shapes.
func fillParams(p *Params[float32], ts map[string]stTensor, path string) error {
	for _, s := range p.Specs {
		t, ok := ts[s.Name]
		if !ok {
			return fmt.Errorf("%s: missing tensor %q", path, s.Name)
		}
		if fmt.Sprint(t.Shape) != fmt.Sprint(s.Shape) {
			return fmt.Errorf("%s: tensor %q has shape %v, config wants %v", path, s.Name, t.Shape, s.Shape)
		}
		copy(p.W(s.Name), t.Data)
	}
	return nil
}

// parseConfig decodes config.json on top of the defaults.
func parseConfig(b []byte, name string) (*Config, error) {
	c := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.MoELayers == nil {
		c.MoELayers = []int{}
	}
	return &c, nil
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
}

// saveTrainState writes master weights and AdamW moments (fp32), then
// state.json last: a state.json always describes complete tensor files.
func saveTrainState(dir string, p *Params[float32], opt *AdamW, st *TrainState) error {
	sd := filepath.Join(dir, "train_state")
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return err
	}
	meta := map[string]string{"step": strconv.FormatInt(st.Step, 10)}
	var ts []stTensor
	for _, s := range p.Specs {
		off := p.Off[s.Name]
		ts = append(ts,
			stTensor{"master." + s.Name, s.Shape, p.W(s.Name)},
			stTensor{"adam_m." + s.Name, s.Shape, opt.M[off : off+s.Size()]},
			stTensor{"adam_v." + s.Name, s.Shape, opt.V[off : off+s.Size()]})
	}
	if err := writeSafetensors(filepath.Join(sd, "optimizer.safetensors"), "F32", ts, meta); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(sd, "state.json"), append(b, '\n'))
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
	ts, meta, err := readSafetensors(path)
	if err != nil {
		return nil, err
	}
	if meta["step"] != strconv.FormatInt(st.Step, 10) {
		return nil, fmt.Errorf("%s: written at step %s but state.json says step %d (interrupted checkpoint write)", path, meta["step"], st.Step)
	}
	for _, s := range p.Specs {
		off := p.Off[s.Name]
		for prefix, dst := range map[string][]float32{"master.": p.Data, "adam_m.": opt.M, "adam_v.": opt.V} {
			t, ok := ts[prefix+s.Name]
			if !ok || len(t.Data) != s.Size() {
				return nil, fmt.Errorf("%s: tensor %q missing or of the wrong size", path, prefix+s.Name)
			}
			copy(dst[off:off+s.Size()], t.Data)
		}
	}
	opt.Step = st.Step
	return st, nil
}
