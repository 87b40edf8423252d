package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/engine"
)

func init() {
	var cfgPath, out string
	var seed uint64
	cmd := &cobra.Command{
		Use:   "init-model",
		Short: "Write a randomly initialised checkpoint",
		Long: `init-model writes a deterministic random initialisation of the model described
by CONFIG (a JSON or YAML file with the fields of docs/design.md §2, or a preset name:
dense-3m, moe-3m) into DIR: config.json and model.safetensors (bf16).
Weights are drawn N(0, 1/fan_in) from a generator seeded by --seed (the same
seed always gives the same bytes); norm gains are 1. The result is the
starting point for training and for tests.`,
		Example: `  onecore init-model --config dense-3m --seed 1 --out /tmp/ck
  onecore init-model --config my-config.json --seed 7 --out models/small`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfgPath == "" || out == "" {
				return usageError{fmt.Errorf("--config and --out are required")}
			}
			cfg, err := engine.LoadConfig(cfgPath)
			if err != nil {
				return err
			}
			if err := engine.SaveCheckpoint(out, cfg, engine.InitTensors(cfg, seed), nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (seed %d)\n", out, seed)
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "model config file (JSON/YAML) or preset name (dense-3m, moe-3m)")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "random seed")
	cmd.Flags().StringVar(&out, "out", "", "checkpoint directory to write")
	rootCmd.AddCommand(cmd)
}
