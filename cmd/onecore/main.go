// Command onecore runs tiny language models over whole corpora on every CPU
// core: extraction, classification, scoring and embedding jobs, plus the
// training that produces those models.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes. Scripts (cron, Slurm, Kubernetes) branch on these.
const (
	exitOK          = 0   // everything done, nothing rejected
	exitError       = 1   // the command failed
	exitUsage       = 2   // bad flags or arguments
	exitPartial     = 3   // finished, but some rows or files were rejected (see summary)
	exitFailed      = 4   // some shards could not be read: not marked, a rerun retries them
	exitInterrupted = 130 // stopped by SIGINT/SIGTERM; rerun the same command to resume
)

// exitCodeError carries a specific exit code out of a command.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// withExitCode wraps err so main exits with code.
func withExitCode(code int, err error) error { return &exitCodeError{code, err} }

var rootCmd = &cobra.Command{
	Use:   "onecore",
	Short: "Corpus-scale extraction with tiny language models on every CPU core",
	Long: `onecore runs an outrageously small language model (~3M parameters) on every
CPU core, fast enough to classify, score or mine a whole corpus overnight.`,
	Example: `  onecore extract --in shards/ --out results.parquet
  onecore doctor
  onecore bench gemm --m 256 --k 256 --n 640`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// trainCmd groups the training subcommands (tokenizer, pretrain, sft, classify).
var trainCmd = &cobra.Command{
	Use:   "train",
	Short: "Train tokenizers, models, post-training stages, classifier and span-extraction heads",
}

// benchCmd groups the benchmarks (gemm, peak, engine, ...).
var benchCmd = &cobra.Command{
	Use:   "bench",
	Short: "Measure kernels and the engine on this machine",
}

func init() {
	rootCmd.AddCommand(trainCmd, benchCmd)
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	rootCmd.SetArgs(args)
	cmd, err := rootCmd.ExecuteC()
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "onecore: %v\n", err)
	var ec *exitCodeError
	if errors.As(err, &ec) {
		return ec.code
	}
	if isUsageError(err) {
		fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitError
}

// usageError marks errors in flags or arguments.
type usageError struct{ error }

func isUsageError(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	// cobra's own flag and argument errors
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand", "unknown command", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
