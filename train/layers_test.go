package train

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/onecore-dev/onecore/engine"
)

func TestKeepLayers(t *testing.T) {
	c := smallConfig()
	c.Layers = []string{"lin", "swa", "lin", "swa"}
	c.MoELayers = []int{0, 2, 3}
	for _, tc := range []struct {
		k       int
		layers  string
		moe     string
		wantErr string
	}{
		{0, "[lin swa lin swa]", "[0 2 3]", ""},
		{4, "[lin swa lin swa]", "[0 2 3]", ""},
		{1, "[lin]", "[0]", ""},
		{2, "[lin swa]", "[0]", ""},
		{3, "[lin swa lin]", "[0 2]", ""},
		{5, "", "", "has 4 layers"},
	} {
		t.Run(fmt.Sprint(tc.k), func(t *testing.T) {
			got, err := KeepLayers(c, tc.k)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Layers) != tc.layers || fmt.Sprint(got.MoELayers) != tc.moe {
				t.Errorf("layers %v moe %v, want %s %s", got.Layers, got.MoELayers, tc.layers, tc.moe)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("truncated config invalid: %v", err)
			}
		})
	}
	if fmt.Sprint(c.Layers) != "[lin swa lin swa]" || fmt.Sprint(c.MoELayers) != "[0 2 3]" {
		t.Errorf("source config changed: %v %v", c.Layers, c.MoELayers)
	}
}

// TestExtractKeepLayers: `train extract --layers 2` of a 3-layer source
// saves a 2-layer checkpoint whose body is the source's first two layers
// (bit for bit with --freeze) and nothing of the third.
func TestExtractKeepLayers(t *testing.T) {
	from := randomCheckpoint(t)
	out := t.TempDir()
	o := extractTestOptions(from, out, writeRecords(t, codeRecords(60, 5)))
	o.Freeze, o.Epochs, o.Layers = true, 1, 2
	if _, err := Extract(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	checkKeptLayers(t, from, out, 2)
	// more layers than the source has is an error naming both
	o.Out, o.Layers = t.TempDir(), 4
	if _, err := Extract(context.Background(), o); err == nil || !strings.Contains(err.Error(), "3 layers") {
		t.Errorf("--layers 4 of a 3-layer source: err %v", err)
	}
}

// TestClassifyKeepLayers: `train classify --layers 1 --finetune=false`
// saves a 1-layer classifier whose body is the source's first layer, bit
// for bit (the linear probe leaves the body as it is).
func TestClassifyKeepLayers(t *testing.T) {
	var recs []map[string]string
	for i := range 40 {
		label := []string{"a", "b"}[i%2]
		recs = append(recs, map[string]string{"text": strings.Repeat(label+" ", 5) + fmt.Sprint(i), "label": label})
	}
	from := randomCheckpoint(t)
	out := t.TempDir()
	if _, err := Classify(context.Background(), ClassifyOptions{
		From: from, Out: out, Data: []string{writeJSONL(t, recs)}, TextField: "text", LabelField: "label",
		Tokenizer: byteTok{}, MaxTokens: 64, ValPermille: 250, HeadEpochs: 20, HeadLR: 0.05, Layers: 1, Seed: 1,
	}); err != nil {
		t.Fatal(err)
	}
	checkKeptLayers(t, from, out, 1)
}

// checkKeptLayers checks that the checkpoint in out has the first k layers
// of the one in from — its config's layer list cut there, every tensor the
// source's bit for bit (a task head aside) — and no tensor of the others.
func checkKeptLayers(t *testing.T, from, out string, k int) {
	t.Helper()
	src, err := engine.LoadCheckpoint(from)
	if err != nil {
		t.Fatal(err)
	}
	got, err := engine.LoadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Config.Layers) != fmt.Sprint(src.Config.Layers[:k]) {
		t.Fatalf("saved layers %v, want %v", got.Config.Layers, src.Config.Layers[:k])
	}
	dropped := func(name string) bool {
		for i := k; i < len(src.Config.Layers); i++ {
			if strings.HasPrefix(name, fmt.Sprintf("layers.%d.", i)) {
				return true
			}
		}
		return false
	}
	for name, v := range src.Tensors {
		w, ok := got.Tensors[name]
		if ok == dropped(name) {
			t.Errorf("tensor %s: kept %v", name, ok)
			continue
		}
		for i := range w {
			if math.Float32bits(v[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s[%d] moved: %v → %v", name, i, v[i], w[i])
			}
		}
	}
	for name := range got.Tensors {
		if _, ok := src.Tensors[name]; !ok && !strings.HasPrefix(name, "head.") {
			t.Errorf("saved tensor %s not in the source", name)
		}
	}
}
