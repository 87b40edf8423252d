package train

import "github.com/onecore-dev/onecore/engine"

// Config is the model configuration (docs/design.md §2), shared with the engine.
type Config = engine.Config

// Generation is generation.json (vocabulary mask, stop ids, templates,
// labels), shared with the engine.
type Generation = engine.Generation

// DefaultConfig returns the "dense-3m" configuration.
func DefaultConfig() Config { return engine.DefaultConfig() }

// LoadConfig reads a config file or names a preset ("dense-3m", "moe-3m").
func LoadConfig(path string) (*Config, error) { return engine.LoadConfig(path) }
