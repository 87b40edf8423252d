package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(`{"arch":"onecore-hybrid","window":32}`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	if c.Window != 32 || c.DModel != d.DModel || c.VocabSize != d.VocabSize || len(c.Layers) != 6 || c.NormEps != 1e-5 {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if _, err := ParseConfig([]byte(`{}`), "c.json"); err != nil {
		t.Fatalf("empty object must give the defaults: %v", err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"d_modle": 3}`, `unknown field "d_modle"`},
		{`{"d_model": "x"}`, `field "d_model"`},
		{`{"d_model": 0}`, `field "d_model"`},
		{`{"arch": "llama"}`, `field "arch"`},
		{`{"layers": ["lin","mamba"]}`, `field "layers"[1]`},
		{`{"layers": []}`, `field "layers"`},
		{`{"moe_layers": [6]}`, `field "moe_layers"[0]`},
		{`{"moe_layers": [1,1]}`, `listed twice`},
		{`{"top_k": 65}`, `field "top_k"`},
		{`{"swa_head_dim": 63}`, `field "swa_head_dim"`},
		{`{"norm_eps": 0}`, `field "norm_eps"`},
		{`{"rope_theta": -1}`, `field "rope_theta"`},
		{`{"vocab_size": 2}`, `field "vocab_size"`},
		{`{} {}`, `trailing data`},
		{`{"window": 1.5}`, `field "window"`},
		{`window: 0`, `field "window"`},
		{`windw: 3`, `windw`},
	} {
		_, err := ParseConfig([]byte(tc.in), "cfg.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cfg.json") {
			t.Errorf("%s: error %v, want one containing %q and the file name", tc.in, err, tc.want)
		}
	}
}

func TestConfigYAMLAndPresets(t *testing.T) {
	c, err := ParseConfig([]byte("window: 32\nmoe_layers: [0, 2]\nlayers: [lin, swa, lin]\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Window != 32 || len(c.Layers) != 3 || !c.IsMoE(2) || c.IsMoE(1) {
		t.Fatalf("yaml: %+v", c)
	}
	m, err := LoadConfig("moe-3m")
	if err != nil || !m.IsMoE(5) {
		t.Fatalf("preset: %v %+v", err, m)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	b, _ := m.encode()
	os.WriteFile(p, b, 0o644)
	back, err := LoadConfig(p)
	if err != nil || !back.IsMoE(3) || back.Experts != 64 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"window":32,"layers":["lin","swa"],"moe_layers":[1]}`))
	f.Add([]byte(`{"d_model":-1}`))
	f.Add([]byte("layers: [lin]\n"))
	f.Add([]byte(`{"top_k": 1e40}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		TensorSpecs(c) // must not panic
	})
}
