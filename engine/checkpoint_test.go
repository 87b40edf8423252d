package engine

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/amx"
)

// smallConfig is a tiny hybrid config with experts, for fast tests.
func smallConfig() *Config {
	c := DefaultConfig()
	c.VocabSize = 97
	c.DModel = 32
	c.Layers = []string{"lin", "swa", "lin"}
	c.SWAHeads, c.SWAHeadDim = 2, 16
	c.Window = 8
	c.LinHeads, c.DState, c.LinHeadDim = 2, 8, 16
	c.DFF = 48
	c.MoELayers = []int{2}
	c.Experts, c.TopK, c.DFFExpert = 6, 2, 24
	c.RouteBlock = 8
	return &c
}

func TestTensorSpecsDefault(t *testing.T) {
	c := DefaultConfig()
	c.MoELayers = []int{0, 3, 5}
	specs := TensorSpecs(&c)
	byName := map[string][]int{}
	for _, s := range specs {
		if _, dup := byName[s.Name]; dup {
			t.Fatalf("duplicate %s", s.Name)
		}
		byName[s.Name] = s.Shape
	}
	for name, shape := range map[string][]int{
		"emb":                   {16384, 256},
		"layers.1.swa.wq":       {256, 256},
		"layers.1.swa.wo":       {256, 256},
		"layers.0.lin.wq":       {256, 256},
		"layers.0.lin.wv":       {256, 256},
		"layers.0.lin.wa":       {256, 8},
		"layers.0.lin.ba":       {8},
		"layers.0.lin.gn":       {256},
		"layers.1.mlp.w_up":     {256, 640},
		"layers.1.mlp.w_down":   {640, 256},
		"layers.3.moe.router.w": {256, 64},
		"layers.3.moe.router.b": {64},
		"layers.5.moe.w_up":     {64, 256, 160},
		"layers.5.moe.w_down":   {64, 160, 256},
		"layers.5.norm2.g":      {256},
		"norm.g":                {256},
	} {
		if !slices.Equal(byName[name], shape) {
			t.Errorf("%s: %v, want %v", name, byName[name], shape)
		}
	}
	for _, absent := range []string{"layers.0.mlp.w_up", "layers.0.swa.wq", "layers.1.lin.wq", "layers.1.moe.w_up"} {
		if _, ok := byName[absent]; ok {
			t.Errorf("%s must not exist", absent)
		}
	}
	// dense-3m has ~3.3M non-embedding+embedding parameters as designed.
	d := DefaultConfig()
	n := 0
	for _, s := range TensorSpecs(&d) {
		n += s.Size()
	}
	if n < 3_000_000 || n > 8_000_000 {
		t.Errorf("dense-3m has %d parameters", n)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	cfg := smallConfig()
	ts := InitTensors(cfg, 7)
	ts[HeadClsW] = make([]float32, cfg.DModel*3)
	ts[HeadClsW][5] = 0.3
	ts[HeadClsB] = []float32{1, 2, 3}
	ts[HeadSpanW] = make([]float32, cfg.DModel*2)
	ts[HeadSpanW][3] = -0.5
	gen := &Generation{VocabMask: []int32{5, 6}, StopIDs: []int32{2}, Templates: map[string]string{"classify": "{text}"}, Labels: []string{"a", "b", "c"}}
	dir := filepath.Join(t.TempDir(), "ck")
	if err := SaveCheckpoint(dir, cfg, ts, gen); err != nil {
		t.Fatal(err)
	}
	ck, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ck.Shapes[HeadSpanW], []int{cfg.DModel, 2}) {
		t.Fatalf("span head shape %v", ck.Shapes[HeadSpanW])
	}
	if ck.NumLabels() != 3 || !slices.Equal(ck.Generation.Labels, gen.Labels) || ck.Generation.Templates["classify"] != "{text}" {
		t.Fatalf("heads/generation lost: %d %+v", ck.NumLabels(), ck.Generation)
	}
	for name, v := range ts {
		got := ck.Tensors[name]
		for i := range v {
			if want := amx.FromFloat32(v[i]).Float32(); got[i] != want {
				t.Fatalf("%s[%d] = %v, want bf16(%v) = %v", name, i, got[i], v[i], want)
			}
		}
	}
	// Same seed → same weights; another seed → different.
	if a, b := InitTensors(cfg, 7)["emb"], InitTensors(cfg, 8)["emb"]; slices.Equal(a, ts["emb"]) == false || slices.Equal(a, b) {
		t.Fatal("InitTensors is not deterministic per seed")
	}
}

func TestCheckpointErrors(t *testing.T) {
	cfg := smallConfig()
	dir := t.TempDir()
	ts := InitTensors(cfg, 1)
	delete(ts, "layers.1.swa.wk")
	if err := SaveCheckpoint(dir, cfg, ts, nil); err == nil || !strings.Contains(err.Error(), `"layers.1.swa.wk"`) {
		t.Fatalf("missing tensor: %v", err)
	}
	ts = InitTensors(cfg, 1)
	ts["layers.9.foo"] = []float32{1}
	if err := SaveCheckpoint(dir, cfg, ts, nil); err == nil || !strings.Contains(err.Error(), `"layers.9.foo"`) {
		t.Fatalf("unexpected tensor: %v", err)
	}
	ts = InitTensors(cfg, 1)
	ts[HeadSpanW] = make([]float32, 3*cfg.DModel)
	if err := SaveCheckpoint(dir, cfg, ts, nil); err == nil || !strings.Contains(err.Error(), `"head.span.w"`) {
		t.Fatalf("span head of 3 columns: %v", err)
	}
	ts[HeadSpanW] = make([]float32, 2*cfg.DModel)
	ts[HeadSpanB] = []float32{1, 2, 3}
	if err := SaveCheckpoint(dir, cfg, ts, nil); err == nil || !strings.Contains(err.Error(), `"head.span.b"`) {
		t.Fatalf("span bias of 3: %v", err)
	}
	ts = InitTensors(cfg, 1)
	if err := SaveCheckpoint(dir, cfg, ts, &Generation{StopIDs: []int32{97}}); err == nil || !strings.Contains(err.Error(), "stop_ids") {
		t.Fatalf("bad stop id: %v", err)
	}
	if err := SaveCheckpoint(dir, cfg, ts, nil); err != nil {
		t.Fatal(err)
	}
	// A checkpoint whose config no longer matches the weights names the tensor.
	other := *cfg
	other.DFF = 50
	b, _ := other.encode()
	os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644)
	if _, err := LoadCheckpoint(dir); err == nil || !strings.Contains(err.Error(), `"layers.0.mlp.w_up"`) {
		t.Fatalf("shape mismatch: %v", err)
	}
	b, _ = cfg.encode()
	os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644)
	// Truncation is an error naming a tensor.
	wp := filepath.Join(dir, WeightsFile)
	data, _ := os.ReadFile(wp)
	os.WriteFile(wp, data[:len(data)-10], 0o644)
	if _, err := LoadCheckpoint(dir); err == nil || !strings.Contains(err.Error(), "tensor") || !strings.Contains(err.Error(), WeightsFile) {
		t.Fatalf("truncated: %v", err)
	}
	os.WriteFile(wp, data, 0o644)
	os.WriteFile(filepath.Join(dir, GenerationFile), []byte(`{"stop_id":[2]}`), 0o644)
	if _, err := LoadCheckpoint(dir); err == nil || !strings.Contains(err.Error(), `"stop_id"`) {
		t.Fatalf("bad generation.json: %v", err)
	}
}

// TestCheckpointPooling: the pooling field and attention pooling's query
// are checked together at load (and at save, the query's shape).
func TestCheckpointPooling(t *testing.T) {
	cfg := smallConfig()
	for _, tc := range []struct {
		name    string
		pooling string
		q       int // values of head.cls.q; 0: none
		want    string
	}{
		{"mean", "", 0, ""},
		{"last", PoolLast, 0, ""},
		{"attention", PoolAttention, cfg.DModel, ""},
		{"unknown", "max", 0, `unknown pooling "max"`},
		{"attention without query", PoolAttention, 0, "no head.cls.q tensor"},
		{"query without attention", PoolLast, cfg.DModel, `pooling is "last"`},
		{"query of the wrong size", PoolAttention, cfg.DModel + 1, `"head.cls.q"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := InitTensors(cfg, 3)
			ts[HeadClsW] = make([]float32, cfg.DModel*2)
			ts[HeadClsB] = []float32{0, 0}
			if tc.q > 0 {
				ts[HeadClsQ] = make([]float32, tc.q)
			}
			dir := filepath.Join(t.TempDir(), "ck")
			err := SaveCheckpoint(dir, cfg, ts, &Generation{Labels: []string{"a", "b"}, Pooling: tc.pooling})
			var ck *Checkpoint
			if err == nil {
				ck, err = LoadCheckpoint(dir)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if ck.Generation.PoolingKind() != map[string]string{"": PoolMean}[tc.pooling]+tc.pooling {
					t.Errorf("pooling %q after a round trip, want %q", ck.Generation.PoolingKind(), tc.pooling)
				}
				if _, err := NewModel(ck); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestCheckpointNonFinite: a checkpoint with one NaN or ±Inf weight, in a
// spec tensor or a head, stored as bf16 or f32, is refused at load with
// the file, the tensor and the first bad element named (issue 19.12: it
// was accepted and every score came out NaN with exit 0).
func TestCheckpointNonFinite(t *testing.T) {
	cfg := smallConfig()
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		tensor string
		index  int
		value  float32
		f32    bool // write model.safetensors as F32 instead of bf16
		want   string
	}{
		{tensor: "layers.1.swa.wq", index: 37, value: nan, want: `tensor "layers.1.swa.wq": element 37 (index [1 5] of shape [32 32]) is NaN`},
		{tensor: "emb", index: 0, value: inf, want: `tensor "emb": element 0 (index [0 0] of shape [97 32]) is +Inf`},
		{tensor: "layers.2.moe.w_down", index: 24*32 + 3, value: -inf, want: `tensor "layers.2.moe.w_down": element 771 (index [1 0 3] of shape [6 24 32]) is -Inf`},
		{tensor: "norm.g", index: 31, value: inf, f32: true, want: `tensor "norm.g": element 31 (index [31] of shape [32]) is +Inf`},
		{tensor: HeadClsB, index: 2, value: nan, want: `tensor "head.cls.b": element 2 (index [2] of shape [3]) is NaN`},
	} {
		t.Run(tc.tensor, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ck")
			ts := InitTensors(cfg, 3)
			ts[HeadClsW] = make([]float32, cfg.DModel*3)
			ts[HeadClsB] = []float32{1, 2, 3}
			ts[tc.tensor][tc.index] = tc.value
			if err := SaveCheckpoint(dir, cfg, ts, nil); err != nil {
				t.Fatal(err)
			}
			if tc.f32 {
				var list []*Tensor
				for _, s := range TensorSpecs(cfg) {
					list = append(list, F32Tensor(s.Name, s.Shape, ts[s.Name]))
				}
				list = append(list, F32Tensor(HeadClsW, []int{cfg.DModel, 3}, ts[HeadClsW]), F32Tensor(HeadClsB, []int{3}, ts[HeadClsB]))
				var buf bytes.Buffer
				if err := WriteSafetensors(&buf, list, nil); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, WeightsFile), buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadCheckpoint(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), WeightsFile) {
				t.Fatalf("LoadCheckpoint: %v\nwant an error containing %q and %s", err, tc.want, WeightsFile)
			}
		})
	}
}
