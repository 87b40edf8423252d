package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/onecore-dev/onecore/internal/atomicfile"
)

// Checkpoint file names inside a checkpoint directory (docs/design.md §3).
const (
	ConfigFile     = "config.json"
	WeightsFile    = "model.safetensors"
	GenerationFile = "generation.json"
	TokenizerFile  = "tokenizer.json"
)

// TensorSpec names one model tensor and its shape.
type TensorSpec struct {
	Name  string
	Shape []int
}

// Size is the number of elements.
func (s TensorSpec) Size() int {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// TensorSpecs lists every tensor a checkpoint of cfg must hold, with the
// exact names and shapes of docs/design.md §3 (weights stored [in, out]). Optional
// head.* tensors are not listed.
func TensorSpecs(cfg *Config) []TensorSpec {
	D := cfg.DModel
	sd := cfg.SWAHeads * cfg.SWAHeadDim
	ld, lv := cfg.LinHeads*cfg.DState, cfg.LinHeads*cfg.LinHeadDim
	specs := []TensorSpec{{"emb", []int{cfg.VocabSize, D}}}
	for i, kind := range cfg.Layers {
		p := fmt.Sprintf("layers.%d.", i)
		specs = append(specs, TensorSpec{p + "norm1.g", []int{D}}, TensorSpec{p + "norm2.g", []int{D}})
		switch kind {
		case MixerSWA:
			specs = append(specs,
				TensorSpec{p + "swa.wq", []int{D, sd}},
				TensorSpec{p + "swa.wk", []int{D, sd}},
				TensorSpec{p + "swa.wv", []int{D, sd}},
				TensorSpec{p + "swa.wo", []int{sd, D}})
		case MixerLinear:
			specs = append(specs,
				TensorSpec{p + "lin.wq", []int{D, ld}},
				TensorSpec{p + "lin.wk", []int{D, ld}},
				TensorSpec{p + "lin.wv", []int{D, lv}},
				TensorSpec{p + "lin.wa", []int{D, cfg.LinHeads}},
				TensorSpec{p + "lin.ba", []int{cfg.LinHeads}},
				TensorSpec{p + "lin.gn", []int{lv}},
				TensorSpec{p + "lin.wo", []int{lv, D}})
		}
		if cfg.IsMoE(i) {
			specs = append(specs,
				TensorSpec{p + "moe.router.w", []int{D, cfg.Experts}},
				TensorSpec{p + "moe.router.b", []int{cfg.Experts}},
				TensorSpec{p + "moe.w_up", []int{cfg.Experts, D, cfg.DFFExpert}},
				TensorSpec{p + "moe.w_down", []int{cfg.Experts, cfg.DFFExpert, D}})
		} else {
			specs = append(specs,
				TensorSpec{p + "mlp.w_up", []int{D, cfg.DFF}},
				TensorSpec{p + "mlp.w_down", []int{cfg.DFF, D}})
		}
	}
	return append(specs, TensorSpec{"norm.g", []int{D}})
}

// Classifier head tensor names (optional). CONVENTION: the head is applied
// to the mean over all of a document's positions (<bos> included) of the
// final-RMSNorm output: logits = mean · head.cls.w + head.cls.b.
const (
	HeadClsW = "head.cls.w" // [d_model, n_labels]
	HeadClsB = "head.cls.b" // [n_labels]
	// HeadClsQ is attention pooling's query (generation.json "pooling":
	// "attention"): position t of a document weighs softmax_t(h_t·q).
	HeadClsQ = "head.cls.q" // [d_model]
)

// Generation is generation.json: what decoding and tasks need besides the
// weights. Every field is optional.
type Generation struct {
	// VocabMask lists token ids never produced by sampling (ids never seen
	// in training); their logits are set to -Inf when decoding.
	VocabMask []int32 `json:"vocab_mask,omitempty"`
	// StopIDs end a generated continuation (e.g. <eos> = 2).
	StopIDs []int32 `json:"stop_ids,omitempty"`
	// Templates are named prompt templates (e.g. "classify": "...{text}...").
	Templates map[string]string `json:"templates,omitempty"`
	// Labels is the classifier's label set, in head.cls column order (for
	// a regression head: one name, the target's).
	Labels []string `json:"labels,omitempty"`
	// Head is how head.cls's outputs are read: HeadMulticlass (also when
	// empty), HeadMultilabel or HeadRegression.
	Head string `json:"head,omitempty"`
	// Thresholds are a multi-label head's per-label decision thresholds on
	// the sigmoid probability, in label order (tuned on held-out data).
	Thresholds []float32 `json:"thresholds,omitempty"`
	// Pooling is how a document's positions become the one vector head.cls
	// reads: PoolMean (also when empty), PoolLast or PoolAttention.
	Pooling string `json:"pooling,omitempty"`
	// SpanThreshold is added to a span head's "not present" score before
	// it is compared with the best span's (train extract tunes it on the
	// held-out split; a job's span_threshold shifts it further).
	SpanThreshold float64 `json:"span_threshold,omitempty"`
	// SpanWholeWords widens a span head's answers to whole words
	// (engine.SpanText); train extract sets it when every training answer
	// starts and ends at a word boundary.
	SpanWholeWords bool `json:"span_whole_words,omitempty"`
	// SpanOneLine keeps a span head's answers on one line of the document
	// (SpanLines); train extract sets it when no training answer holds a
	// line break.
	SpanOneLine bool `json:"span_one_line,omitempty"`
	// SpanEndNext scores a span head's end at the row after the span's
	// last token (SpanLogitRows); train extract sets it for every head it
	// starts. Without it (older checkpoints) the end is scored at the last
	// token itself.
	SpanEndNext bool `json:"span_end_next,omitempty"`
}

// Pooling kinds: how the classifier head sees a document (the final-norm
// output at every position, pooled into one d_model vector).
const (
	// PoolMean averages every position (the default).
	PoolMean = "mean"
	// PoolLast takes the last position, which a causal model lets see the
	// whole document.
	PoolLast = "last"
	// PoolAttention weighs the positions by softmax(h_t·q) with the
	// learned query head.cls.q.
	PoolAttention = "attention"
)

// PoolingKind is the classifier's pooling, PoolMean when unset.
func (g *Generation) PoolingKind() string {
	if g == nil || g.Pooling == "" {
		return PoolMean
	}
	return g.Pooling
}

// Classifier head kinds: how generation.json says head.cls is read.
const (
	// HeadMulticlass is a softmax over the labels: one label per document.
	HeadMulticlass = "multiclass"
	// HeadMultilabel is an independent sigmoid per label: any number of
	// labels per document, each above its threshold.
	HeadMultilabel = "multilabel"
	// HeadRegression is one real value per document (one column, no
	// squashing), in the units of the training targets.
	HeadRegression = "regression"
)

// HeadKind is the classifier head's kind, HeadMulticlass when unset.
func (g *Generation) HeadKind() string {
	if g == nil || g.Head == "" {
		return HeadMulticlass
	}
	return g.Head
}

// Validate checks ids against the vocabulary and labels against head width
// (nLabels < 0: no head to check against).
func (g *Generation) Validate(vocab, nLabels int) error {
	for i, id := range g.VocabMask {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("field \"vocab_mask\"[%d]: id %d out of range 0..%d", i, id, vocab-1)
		}
	}
	for i, id := range g.StopIDs {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("field \"stop_ids\"[%d]: id %d out of range 0..%d", i, id, vocab-1)
		}
	}
	if nLabels >= 0 && len(g.Labels) > 0 && len(g.Labels) != nLabels {
		return fmt.Errorf("field \"labels\": %d labels but %s has %d columns", len(g.Labels), HeadClsW, nLabels)
	}
	switch g.HeadKind() {
	case HeadMulticlass:
	case HeadMultilabel:
		if len(g.Thresholds) != len(g.Labels) {
			return fmt.Errorf("field \"thresholds\": %d thresholds for %d labels (a multilabel head needs one per label)", len(g.Thresholds), len(g.Labels))
		}
		for i, t := range g.Thresholds {
			if !(t > 0 && t < 1) {
				return fmt.Errorf("field \"thresholds\"[%d]: %v is not a probability strictly between 0 and 1", i, t)
			}
		}
	case HeadRegression:
		if nLabels >= 0 && nLabels != 1 {
			return fmt.Errorf("field \"head\": a regression head has one column, %s has %d", HeadClsW, nLabels)
		}
	default:
		return fmt.Errorf("field \"head\": unknown head kind %q (want %s, %s or %s)", g.Head, HeadMulticlass, HeadMultilabel, HeadRegression)
	}
	switch g.PoolingKind() {
	case PoolMean, PoolLast, PoolAttention:
	default:
		return fmt.Errorf("field \"pooling\": unknown pooling %q (want %s, %s or %s)", g.Pooling, PoolMean, PoolLast, PoolAttention)
	}
	if len(g.Thresholds) > 0 && g.HeadKind() != HeadMultilabel {
		return fmt.Errorf("field \"thresholds\": only a %s head has thresholds (head is %s)", HeadMultilabel, g.HeadKind())
	}
	return nil
}

// ParseGeneration decodes generation.json strictly (unknown fields are errors).
func ParseGeneration(data []byte, name string) (*Generation, error) {
	var g Generation
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: %w", name, jsonFieldError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: trailing data after the JSON object", name)
	}
	return &g, nil
}

// Checkpoint is a loaded checkpoint directory. Tensors hold the stored
// values widened to fp32 (exactly the bf16 values on disk).
type Checkpoint struct {
	Dir        string
	Config     *Config
	Tensors    map[string][]float32
	Shapes     map[string][]int
	Generation *Generation // nil when generation.json is absent
}

// NumLabels is the classifier head's width, or 0 without head.cls.
func (c *Checkpoint) NumLabels() int {
	if s, ok := c.Shapes[HeadClsW]; ok && len(s) == 2 {
		return s[1]
	}
	return 0
}

// LoadCheckpoint reads config.json, model.safetensors and (if present)
// generation.json from dir, validating the config, every tensor's name,
// dtype and shape against TensorSpecs, the head.* tensors, and that every
// weight is finite (CheckFinite). Errors name the file and tensor or field.
func LoadCheckpoint(dir string) (*Checkpoint, error) {
	cfgPath := filepath.Join(dir, ConfigFile)
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	wPath := filepath.Join(dir, WeightsFile)
	sf, err := ReadSafetensors(wPath)
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{Dir: dir, Config: cfg, Tensors: map[string][]float32{}, Shapes: map[string][]int{}}
	if err := ck.fill(cfg, sf); err != nil {
		return nil, fmt.Errorf("%s: %w", wPath, err)
	}
	gPath := filepath.Join(dir, GenerationFile)
	data, err := os.ReadFile(gPath)
	switch {
	case err == nil:
		g, err := ParseGeneration(data, gPath)
		if err != nil {
			return nil, err
		}
		nl := -1
		if _, ok := ck.Shapes[HeadClsW]; ok {
			nl = ck.NumLabels()
		}
		if err := g.Validate(cfg.VocabSize, nl); err != nil {
			return nil, fmt.Errorf("%s: %w", gPath, err)
		}
		ck.Generation = g
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	// attention pooling and its query come together (a query without it
	// would be silently ignored, pooling without it cannot run)
	_, hasQ := ck.Shapes[HeadClsQ]
	switch att := ck.Generation.PoolingKind() == PoolAttention; {
	case att && !hasQ:
		return nil, fmt.Errorf("%s: generation.json asks for attention pooling but the checkpoint has no %s tensor", dir, HeadClsQ)
	case hasQ && !att:
		return nil, fmt.Errorf("%s: tensor %s is attention pooling's query but generation.json's pooling is %q", dir, HeadClsQ, ck.Generation.PoolingKind())
	}
	return ck, nil
}

func (ck *Checkpoint) fill(cfg *Config, sf *SafeFile) error {
	want := map[string]bool{}
	for _, s := range TensorSpecs(cfg) {
		want[s.Name] = true
		t, ok := sf.Tensors[s.Name]
		if !ok {
			return fmt.Errorf("missing tensor %q (shape %v)", s.Name, s.Shape)
		}
		if t.DType != BF16 && t.DType != F32 && t.DType != F16 {
			return fmt.Errorf("tensor %q: dtype %s", s.Name, t.DType)
		}
		if !slices.Equal(t.Shape, s.Shape) {
			return fmt.Errorf("tensor %q: shape %v, want %v", s.Name, t.Shape, s.Shape)
		}
		v := t.Float32()
		if err := CheckFinite(s.Name, s.Shape, v); err != nil {
			return err
		}
		ck.Tensors[s.Name] = v
		ck.Shapes[s.Name] = s.Shape
	}
	for _, name := range sf.Order {
		if want[name] {
			continue
		}
		if !strings.HasPrefix(name, "head.") {
			return fmt.Errorf("unexpected tensor %q (not in the spec for this config)", name)
		}
		t := sf.Tensors[name]
		v := t.Float32()
		if err := CheckFinite(name, t.Shape, v); err != nil {
			return err
		}
		ck.Tensors[name] = v
		ck.Shapes[name] = t.Shape
	}
	return validateHeads(cfg, ck.Shapes)
}

// CheckFinite returns an error naming the tensor and the index (flat and
// per dimension of shape) of the first NaN or ±Inf in v, or nil. Loaders
// call it on every weight tensor: one non-finite weight turns every score
// that touches it into NaN while the run still exits 0, so a corrupt or
// diverged checkpoint must be refused where it is read, not discovered in
// the results. One compare per element, far below the cost of reading the
// file.
func CheckFinite(name string, shape []int, v []float32) error {
	for i, x := range v {
		if x-x == 0 { // false for NaN and ±Inf only
			continue
		}
		idx := make([]int, len(shape))
		rest := i
		for d := len(shape) - 1; d >= 0; d-- {
			if shape[d] > 0 {
				idx[d], rest = rest%shape[d], rest/shape[d]
			}
		}
		return fmt.Errorf("tensor %q: element %d (index %v of shape %v) is %v: non-finite weights (a corrupt or diverged checkpoint) would make every score NaN", name, i, idx, shape, x)
	}
	return nil
}

// validateHeads checks head.cls.* and head.span.* shapes when present.
func validateHeads(cfg *Config, shapes map[string][]int) error {
	sw, hasSW := shapes[HeadSpanW]
	sb, hasSB := shapes[HeadSpanB]
	if hasSB && !hasSW {
		return fmt.Errorf("tensor %q present without %q", HeadSpanB, HeadSpanW)
	}
	if hasSW && !slices.Equal(sw, []int{cfg.DModel, 2}) {
		return fmt.Errorf("tensor %q: shape %v, want [%d, 2]", HeadSpanW, sw, cfg.DModel)
	}
	if hasSB && !slices.Equal(sb, []int{2}) {
		return fmt.Errorf("tensor %q: shape %v, want [2]", HeadSpanB, sb)
	}
	w, hasW := shapes[HeadClsW]
	b, hasB := shapes[HeadClsB]
	q, hasQ := shapes[HeadClsQ]
	if hasQ && (!hasW || !slices.Equal(q, []int{cfg.DModel})) {
		return fmt.Errorf("tensor %q: shape %v, want [%d] beside %q", HeadClsQ, q, cfg.DModel, HeadClsW)
	}
	if !hasW && !hasB {
		return nil
	}
	if !hasW {
		return fmt.Errorf("tensor %q present without %q", HeadClsB, HeadClsW)
	}
	if len(w) != 2 || w[0] != cfg.DModel || w[1] < 1 {
		return fmt.Errorf("tensor %q: shape %v, want [%d, n_labels]", HeadClsW, w, cfg.DModel)
	}
	if hasB && !slices.Equal(b, []int{w[1]}) {
		return fmt.Errorf("tensor %q: shape %v, want [%d]", HeadClsB, b, w[1])
	}
	return nil
}

// SaveCheckpoint writes config.json, model.safetensors (every tensor
// rounded to bf16) and, when gen is non-nil, generation.json into dir,
// each atomically (temp file + rename). tensors must hold exactly the
// TensorSpecs(cfg) names with matching sizes, plus optional head.* tensors
// (head.cls.w [d_model, n], head.cls.b [n], head.span.w [d_model, 2],
// head.span.b [2]; other head.* tensors are stored 1-D). tokenizer.json is left untouched: whoever writes the
// checkpoint copies it beside these files.
func SaveCheckpoint(dir string, cfg *Config, tensors map[string][]float32, gen *Generation) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var list []*Tensor
	shapes := map[string][]int{}
	used := map[string]bool{}
	for _, s := range TensorSpecs(cfg) {
		v, ok := tensors[s.Name]
		if !ok {
			return fmt.Errorf("save %s: missing tensor %q", dir, s.Name)
		}
		if len(v) != s.Size() {
			return fmt.Errorf("save %s: tensor %q has %d values, want %d (shape %v)", dir, s.Name, len(v), s.Size(), s.Shape)
		}
		list = append(list, BF16Tensor(s.Name, s.Shape, v))
		shapes[s.Name] = s.Shape
		used[s.Name] = true
	}
	var heads []string
	for name := range tensors {
		if !used[name] {
			if !strings.HasPrefix(name, "head.") {
				return fmt.Errorf("save %s: unexpected tensor %q (not in the spec for this config)", dir, name)
			}
			heads = append(heads, name)
		}
	}
	sort.Strings(heads)
	for _, name := range heads {
		v := tensors[name]
		shape := []int{len(v)}
		if name == HeadClsW {
			if cfg.DModel == 0 || len(v)%cfg.DModel != 0 {
				return fmt.Errorf("save %s: tensor %q has %d values, not a multiple of d_model %d", dir, name, len(v), cfg.DModel)
			}
			shape = []int{cfg.DModel, len(v) / cfg.DModel}
		}
		if name == HeadSpanW && cfg.DModel > 0 && len(v) == 2*cfg.DModel {
			shape = []int{cfg.DModel, 2} // any other size fails validateHeads
		}
		list = append(list, BF16Tensor(name, shape, v))
		shapes[name] = shape
	}
	if err := validateHeads(cfg, shapes); err != nil {
		return fmt.Errorf("save %s: %w", dir, err)
	}
	if gen != nil {
		nl := -1
		if s, ok := shapes[HeadClsW]; ok {
			nl = s[1]
		}
		if err := gen.Validate(cfg.VocabSize, nl); err != nil {
			return fmt.Errorf("save %s: generation: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cj, err := cfg.encode()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, ConfigFile), func(w io.Writer) error { _, err := w.Write(cj); return err }); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, WeightsFile), func(w io.Writer) error {
		return WriteSafetensors(w, list, map[string]string{"format": "pt", "arch": Arch})
	}); err != nil {
		return err
	}
	if gen != nil {
		gj, err := json.MarshalIndent(gen, "", "  ")
		if err != nil {
			return err
		}
		gj = append(gj, '\n')
		if err := atomicfile.Write(filepath.Join(dir, GenerationFile), func(w io.Writer) error { _, err := w.Write(gj); return err }); err != nil {
			return err
		}
	}
	return nil
}
