package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/spf13/cobra"

	"github.com/onecore-dev/onecore/amx"
	"github.com/onecore-dev/onecore/engine"
	"github.com/onecore-dev/onecore/internal/atomicfile"
)

func init() {
	var ckDir, idsFile, out string
	cmd := &cobra.Command{
		Use:   "forward",
		Short: "Write the raw logits of a packed token stream",
		Long: `forward runs the checkpoint over a packed stream of token ids and writes the
raw readout logits (no vocabulary mask) at every position as float32
little-endian, [len(ids) × vocab_size] row-major.

IDS.json is a JSON array of token ids. Every <bos> (id 1) starts a new
document, and the start of the stream is a document start even without one;
documents never see each other. This is the contract the PyTorch parity
checks use. ONECORE_KERNEL selects the GEMM kernel.`,
		Example: `  onecore forward --checkpoint /tmp/ck --ids-file ids.json --out logits.bin
  python3 -c "import numpy; print(numpy.fromfile('logits.bin', '<f4').shape)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ckDir == "" || idsFile == "" || out == "" {
				return usageError{fmt.Errorf("--checkpoint, --ids-file and --out are required")}
			}
			if err := amx.SelectionError(); err != nil {
				return usageError{err}
			}
			data, err := os.ReadFile(idsFile)
			if err != nil {
				return err
			}
			var ids []int64
			if err := json.Unmarshal(data, &ids); err != nil {
				return fmt.Errorf("%s: want a JSON array of token ids: %v", idsFile, err)
			}
			ck, err := engine.LoadCheckpoint(ckDir)
			if err != nil {
				return err
			}
			stream := make([]int32, len(ids))
			for i, id := range ids {
				if id < 0 || id >= int64(ck.Config.VocabSize) {
					return fmt.Errorf("%s: position %d: token id %d out of range 0..%d", idsFile, i, id, ck.Config.VocabSize-1)
				}
				stream[i] = int32(id)
			}
			m, err := engine.NewModel(ck)
			if err != nil {
				return err
			}
			res, err := engine.NewInstance(m).Prefill(engine.SplitDocs(stream), engine.Want{Logits: engine.LogitsAll})
			if err != nil {
				return err
			}
			return writeFloat32File(out, res)
		},
	}
	cmd.Flags().StringVar(&ckDir, "checkpoint", "", "checkpoint directory")
	cmd.Flags().StringVar(&idsFile, "ids-file", "", "JSON array of token ids")
	cmd.Flags().StringVar(&out, "out", "", "output file (float32 LE logits)")
	rootCmd.AddCommand(cmd)
}

// writeFloat32File writes the results' logits back to back, atomically.
func writeFloat32File(path string, res []engine.Result) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		var b [4]byte
		for _, r := range res {
			for _, v := range r.Logits {
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
				if _, err := w.Write(b[:]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
