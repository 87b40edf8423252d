package train

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/internal/testenv"
)

// TestGradVsPyTorch holds the training backward pass to the independent
// float64 PyTorch autograd implementation of docs/design.md §2
// (scripts/ref/onecore_ref.py grad) on dense and MoE checkpoints.
func TestGradVsPyTorch(t *testing.T) {
	py := testenv.LookPath(t, "/usr/bin/python3")
	script := filepath.Join(testenv.RepoRoot(), "scripts", "ref", "onecore_ref.py")
	ids := []int32{1, 5, 7, 9, 2, 1, 4, 4, 8, 6, 11, 12, 13, 14, 2, 1, 3, 0, 17, 1, 22, 21, 20, 19, 18, 2}
	for _, moe := range []bool{false, true} {
		name := map[bool]string{false: "dense", true: "moe"}[moe]
		t.Run(name, func(t *testing.T) {
			c := tinyConfig(moe)
			dir := t.TempDir()
			p32 := NewParams[float32](ParamSpecs(c, 0))
			p32.Init(c, 11)
			rng := rand.New(rand.NewPCG(11, 1))
			for _, s := range p32.Specs { // non-trivial gains, biases and router
				if len(s.Shape) == 1 {
					for i := range p32.W(s.Name) {
						p32.W(s.Name)[i] += float32(0.3 * rng.NormFloat64())
					}
				}
			}
			if err := SaveCheckpoint(dir, c, p32, &Generation{}, ""); err != nil {
				t.Fatal(err)
			}
			// the float64 model holds exactly the bf16 values on disk
			_, loaded, _, err := LoadCheckpoint(dir)
			if err != nil {
				t.Fatal(err)
			}
			p := NewParams[float64](ParamSpecs(c, 0))
			for i, v := range loaded.Data {
				p.Data[i] = float64(v)
			}
			m := NewModel(c, p)
			m.linChunk, m.linSub = 4, 2 // several linear-attention chunks per document
			loss := ContractLossGrad(m, ids)

			idsPath := filepath.Join(dir, "ids.json")
			b, _ := json.Marshal(ids)
			os.WriteFile(idsPath, b, 0o644)
			gradPath, lossPath := filepath.Join(dir, "grads.safetensors"), filepath.Join(dir, "loss.json")
			cmd := exec.Command(py, script, "grad", "--checkpoint", dir, "--ids", idsPath, "--out", gradPath, "--loss", lossPath)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s grad: %v\n%s\n(run `make deps` for python3-torch)", script, err, out)
			}
			var ref struct{ Loss float64 }
			lb, err := os.ReadFile(lossPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(lb, &ref); err != nil {
				t.Fatal(err)
			}
			if math.Abs(ref.Loss-loss) > 1e-9*math.Max(1, math.Abs(loss)) {
				t.Errorf("loss: ours %.12g, PyTorch %.12g", loss, ref.Loss)
			}
			sf, err := engine.ReadSafetensors(gradPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Specs {
				rt, ok := sf.Tensors[s.Name]
				if !ok {
					t.Errorf("PyTorch wrote no gradient for %s", s.Name)
					continue
				}
				want := rt.Float32()
				got := p.G(s.Name)
				var num, den float64
				for i, w := range want {
					d := got[i] - float64(w)
					num += d * d
					den += float64(w) * float64(w)
				}
				if den == 0 {
					t.Errorf("%s: PyTorch gradient is zero", s.Name)
					continue
				}
				if rel := math.Sqrt(num / den); rel > 1e-5 {
					t.Errorf("%s: relative difference %.3g from PyTorch", s.Name, rel)
				}
			}
		})
	}
}
