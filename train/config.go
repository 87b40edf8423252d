package train

import "os"

// Config mirrors engine.Config (DESIGN §2 field names) until the engine
// package lands on main; then it becomes an alias.
type Config struct {
	Arch       string   `json:"arch"`
	VocabSize  int      `json:"vocab_size"`
	DModel     int      `json:"d_model"`
	Layers     []string `json:"layers"`
	SWAHeads   int      `json:"swa_heads"`
	SWAHeadDim int      `json:"swa_head_dim"`
	Window     int      `json:"window"`
	RopeTheta  float64  `json:"rope_theta"`
	LinHeads   int      `json:"lin_heads"`
	DState     int      `json:"d_state"`
	LinHeadDim int      `json:"lin_head_dim"`
	DFF        int      `json:"d_ff"`
	MoELayers  []int    `json:"moe_layers"`
	Experts    int      `json:"experts"`
	TopK       int      `json:"top_k"`
	DFFExpert  int      `json:"d_ff_expert"`
	RouteBlock int      `json:"route_block"`
	NormEps    float64  `json:"norm_eps"`
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

// DefaultConfig returns the "dense-3m" configuration of DESIGN §2.
func DefaultConfig() Config {
	return Config{
		Arch: "onecore-hybrid", VocabSize: 16384, DModel: 256,
		Layers:   []string{"lin", "swa", "swa", "lin", "swa", "lin"},
		SWAHeads: 4, SWAHeadDim: 64, Window: 256, RopeTheta: 10000,
		LinHeads: 8, DState: 32, LinHeadDim: 32, DFF: 640,
		MoELayers: []int{}, Experts: 64, TopK: 4, DFFExpert: 160, RouteBlock: 256, NormEps: 1e-5,
	}
}

// LoadConfig reads a JSON config file or, when path names a preset
// ("dense-3m", "moe-3m") and no such file exists, that preset.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			switch path {
			case "dense-3m":
				c := DefaultConfig()
				return &c, nil
			case "moe-3m":
				c := DefaultConfig()
				c.MoELayers = []int{0, 3, 5}
				return &c, nil
			}
		}
		return nil, err
	}
	return parseConfig(b, path)
}
