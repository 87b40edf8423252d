package writers

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// ipcEncoder writes the Arrow IPC file format (random access, the format
// pyarrow.ipc.open_file, Feather v2 and apache-arrow JS read). Buffers are
// uncompressed: IPC buffer compression is optional in the spec and several
// readers (apache-arrow JS among them) do not implement it.
type ipcEncoder struct{ fw *ipc.FileWriter }

func newIPCEncoder(w io.Writer, schema *arrow.Schema) (*ipcEncoder, error) {
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema))
	if err != nil {
		return nil, err
	}
	return &ipcEncoder{fw}, nil
}

func (e *ipcEncoder) write(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	return e.fw.Write(rec)
}

func (e *ipcEncoder) finish() error { return e.fw.Close() }
