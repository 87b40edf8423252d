package engine

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
)

// InitTensors returns a deterministic random initialisation of every tensor
// of TensorSpecs(cfg): weights ~ N(0, 1/fan_in) (fan_in = the "in" dimension
// of the [in, out] layout; d_model for emb and the router), norm gains 1,
// router bias 0, and lin.ba set so the heads' initial decays exp(a) spread
// geometrically over 0.8 … 0.995 (short and long memories). Each tensor
// draws from its own stream seeded by (seed, name), so adding a tensor
// never changes the others.
func InitTensors(cfg *Config, seed uint64) map[string][]float32 {
	out := map[string][]float32{}
	for _, s := range TensorSpecs(cfg) {
		v := make([]float32, s.Size())
		switch {
		case strings.HasSuffix(s.Name, ".g") || strings.HasSuffix(s.Name, ".gn"):
			for i := range v {
				v[i] = 1
			}
		case strings.HasSuffix(s.Name, "router.b"):
		case strings.HasSuffix(s.Name, "lin.ba"):
			h := len(v)
			for i := range v {
				// decay d_i, geometric in (1−d) from 0.2 to 0.005;
				// softplus(ba) = −ln d  ⇒  ba = ln(exp(−ln d) − 1).
				t := 0.0
				if h > 1 {
					t = float64(i) / float64(h-1)
				}
				oneMinus := 0.2 * math.Pow(0.005/0.2, t)
				sp := -math.Log(1 - oneMinus)
				v[i] = float32(math.Log(math.Expm1(sp)))
			}
		default:
			fanIn := s.Shape[len(s.Shape)-2]
			if s.Name == "emb" {
				fanIn = cfg.DModel
			}
			h := fnv.New64a()
			h.Write([]byte(s.Name))
			rng := rand.New(rand.NewPCG(seed, h.Sum64()))
			std := 1 / math.Sqrt(float64(fanIn))
			for i := range v {
				v[i] = float32(rng.NormFloat64() * std)
			}
		}
		out[s.Name] = v
	}
	return out
}
