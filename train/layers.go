package train

import (
	"fmt"
	"log/slog"
	"slices"
)

// KeepLayers returns a copy of c with only its first k layers: the
// embedding, layers 0…k−1 and the final norm, as a smaller model that
// starts from a deeper one's lower layers. A task head reading the
// truncated body's last hidden state costs about k/len(c.Layers) of the
// full body's FLOPs per token, so `train extract --layers` and `train
// classify --layers` trade some accuracy for documents per second; the
// fine-tuning that follows adapts the kept layers (and the final norm) to
// the shorter stack. k ≤ 0 or k = len(c.Layers) keeps every layer.
func KeepLayers(c *Config, k int) (*Config, error) {
	n := len(c.Layers)
	if k <= 0 || k == n {
		return c, nil
	}
	if k > n {
		return nil, fmt.Errorf("--layers %d: the source checkpoint has %d layers", k, n)
	}
	t := *c
	t.Layers = slices.Clone(c.Layers[:k])
	t.MoELayers = []int{}
	for _, l := range c.MoELayers {
		if l < k {
			t.MoELayers = append(t.MoELayers, l)
		}
	}
	return &t, nil
}

// keepLayersLogged is KeepLayers for the trainers' --layers, saying in the
// log when it cut the source.
func keepLayersLogged(c *Config, k int, log *slog.Logger) (*Config, error) {
	t, err := KeepLayers(c, k)
	if err == nil && len(t.Layers) < len(c.Layers) {
		log.Info("keeping the source's first layers", "layers", len(t.Layers), "of", len(c.Layers), "kinds", t.Layers)
	}
	return t, err
}
