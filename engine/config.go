package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Arch is the value of config.json's "arch" field for this model family.
const Arch = "onecore-hybrid"

// Mixer kinds of the "layers" list.
const (
	MixerLinear = "lin" // log-decay linear attention
	MixerSWA    = "swa" // sliding-window softmax attention
)

// Special token ids shared by every onecore tokenizer.
const (
	PadID = 0 // <pad>
	BosID = 1 // <bos>: starts every document
	EosID = 2 // <eos>: end of text / end of turn
)

// Config is the model configuration stored as config.json beside the
// weights. Field names (JSON and YAML) are those of docs/design.md §2; a missing
// field takes its DefaultConfig value and an unknown field is an error.
type Config struct {
	Arch       string   `json:"arch" yaml:"arch"`
	VocabSize  int      `json:"vocab_size" yaml:"vocab_size"`
	DModel     int      `json:"d_model" yaml:"d_model"`
	Layers     []string `json:"layers" yaml:"layers"`
	SWAHeads   int      `json:"swa_heads" yaml:"swa_heads"`
	SWAHeadDim int      `json:"swa_head_dim" yaml:"swa_head_dim"`
	Window     int      `json:"window" yaml:"window"`
	RopeTheta  float64  `json:"rope_theta" yaml:"rope_theta"`
	LinHeads   int      `json:"lin_heads" yaml:"lin_heads"`
	DState     int      `json:"d_state" yaml:"d_state"`
	LinHeadDim int      `json:"lin_head_dim" yaml:"lin_head_dim"`
	DFF        int      `json:"d_ff" yaml:"d_ff"`
	MoELayers  []int    `json:"moe_layers" yaml:"moe_layers"`
	Experts    int      `json:"experts" yaml:"experts"`
	TopK       int      `json:"top_k" yaml:"top_k"`
	DFFExpert  int      `json:"d_ff_expert" yaml:"d_ff_expert"`
	RouteBlock int      `json:"route_block" yaml:"route_block"`
	NormEps    float64  `json:"norm_eps" yaml:"norm_eps"`
}

// DefaultConfig returns the "dense-3m" configuration of docs/design.md §2.
func DefaultConfig() Config {
	return Config{
		Arch:       Arch,
		VocabSize:  16384,
		DModel:     256,
		Layers:     []string{"lin", "swa", "swa", "lin", "swa", "lin"},
		SWAHeads:   4,
		SWAHeadDim: 64,
		Window:     256,
		RopeTheta:  10000,
		LinHeads:   8,
		DState:     32,
		LinHeadDim: 32,
		DFF:        640,
		MoELayers:  []int{},
		Experts:    64,
		TopK:       4,
		DFFExpert:  160,
		RouteBlock: 256,
		NormEps:    1e-5,
	}
}

// Presets are the named configurations `--config` accepts besides a file:
// "dense-3m" (the default) and "moe-3m" (experts on layers 0, 3 and 5).
func Preset(name string) (Config, bool) {
	c := DefaultConfig()
	switch name {
	case "dense-3m":
		return c, true
	case "moe-3m":
		c.MoELayers = []int{0, 3, 5}
		return c, true
	}
	return Config{}, false
}

// IsMoE reports whether layer i's MLP is an expert bank.
func (c *Config) IsMoE(i int) bool {
	for _, l := range c.MoELayers {
		if l == i {
			return true
		}
	}
	return false
}

// ParseConfig decodes a JSON (or, if the text starts like YAML rather than
// an object, YAML) configuration on top of the defaults and validates it.
// name labels errors (usually the file path).
func ParseConfig(data []byte, name string) (*Config, error) {
	c := DefaultConfig()
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s: %w", name, jsonFieldError(err))
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("%s: trailing data after the JSON object", name)
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("%s: empty config", name)
			}
			return nil, fmt.Errorf("%s: %v", name, err)
		}
	}
	if c.MoELayers == nil {
		c.MoELayers = []int{}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

// jsonFieldError rewords encoding/json errors so they name the field.
func jsonFieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("field %q: cannot use JSON %s as %s", te.Field, te.Value, te.Type)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return fmt.Errorf("unknown field %s", strings.TrimPrefix(msg, "json: unknown field "))
	}
	return err
}

// LoadConfig reads a config file (JSON, or YAML when the text is not a JSON
// object) or,
// when path names a preset ("dense-3m", "moe-3m") and no such file exists,
// that preset.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if p, ok := Preset(path); ok && errors.Is(err, os.ErrNotExist) {
			return &p, nil
		}
		return nil, err
	}
	return ParseConfig(data, path)
}

// MarshalJSON-friendly form: config.json is written indented with every field.
func (c *Config) encode() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Limits that keep a hostile config from asking for absurd allocations.
const (
	maxVocab  = 1 << 22
	maxDim    = 1 << 16
	maxLayers = 1024
)

// Validate checks every field and returns an error naming the first bad one.
func (c *Config) Validate() error {
	if c.Arch != Arch {
		return fmt.Errorf("field \"arch\": %q, want %q", c.Arch, Arch)
	}
	pos := func(name string, v, max int) error {
		if v <= 0 || v > max {
			return fmt.Errorf("field %q: %d, want 1..%d", name, v, max)
		}
		return nil
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"vocab_size", c.VocabSize, maxVocab},
		{"d_model", c.DModel, maxDim},
		{"swa_heads", c.SWAHeads, 1024},
		{"swa_head_dim", c.SWAHeadDim, maxDim},
		{"window", c.Window, 1 << 20},
		{"lin_heads", c.LinHeads, 1024},
		{"d_state", c.DState, maxDim},
		{"lin_head_dim", c.LinHeadDim, maxDim},
		{"d_ff", c.DFF, 1 << 20},
		{"experts", c.Experts, 4096},
		{"top_k", c.TopK, 4096},
		{"d_ff_expert", c.DFFExpert, 1 << 20},
		{"route_block", c.RouteBlock, 1 << 20},
	} {
		if err := pos(f.name, f.v, f.max); err != nil {
			return err
		}
	}
	if c.VocabSize < 3 {
		return fmt.Errorf("field \"vocab_size\": %d, want ≥ 3 (<pad>, <bos>, <eos>)", c.VocabSize)
	}
	if c.SWAHeadDim%2 != 0 {
		return fmt.Errorf("field \"swa_head_dim\": %d, want an even number (rotate-half RoPE)", c.SWAHeadDim)
	}
	if c.SWAHeads*c.SWAHeadDim > maxDim || c.LinHeads*c.DState > maxDim || c.LinHeads*c.LinHeadDim > maxDim {
		return fmt.Errorf("heads × head dim exceeds %d", maxDim)
	}
	if c.TopK > c.Experts {
		return fmt.Errorf("field \"top_k\": %d exceeds \"experts\" %d", c.TopK, c.Experts)
	}
	if !(c.RopeTheta > 0) || c.RopeTheta > 1e12 {
		return fmt.Errorf("field \"rope_theta\": %v, want > 0", c.RopeTheta)
	}
	if !(c.NormEps > 0) || c.NormEps > 1 {
		return fmt.Errorf("field \"norm_eps\": %v, want in (0, 1]", c.NormEps)
	}
	if len(c.Layers) == 0 || len(c.Layers) > maxLayers {
		return fmt.Errorf("field \"layers\": %d layers, want 1..%d", len(c.Layers), maxLayers)
	}
	for i, l := range c.Layers {
		if l != MixerLinear && l != MixerSWA {
			return fmt.Errorf("field \"layers\"[%d]: %q, want %q or %q", i, l, MixerLinear, MixerSWA)
		}
	}
	seen := map[int]bool{}
	for i, l := range c.MoELayers {
		if l < 0 || l >= len(c.Layers) {
			return fmt.Errorf("field \"moe_layers\"[%d]: layer %d out of range 0..%d", i, l, len(c.Layers)-1)
		}
		if seen[l] {
			return fmt.Errorf("field \"moe_layers\"[%d]: layer %d listed twice", i, l)
		}
		seen[l] = true
	}
	return nil
}
