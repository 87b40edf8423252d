package writers

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetEncoder writes Parquet through pqarrow's buffered row groups:
// records of any size are appended to the current row group (held
// compressed in memory) until it reaches RowGroupBytes of Arrow data or
// RowGroupRows rows, so row groups have a sane size however the caller
// batches.
type parquetEncoder struct {
	fw       *pqarrow.FileWriter
	maxBytes int64
	maxRows  int64
	rgBytes  int64
	rgRows   int64
}

func newParquetEncoder(w io.Writer, schema *arrow.Schema, opts Options) (*parquetEncoder, error) {
	e := &parquetEncoder{maxBytes: opts.RowGroupBytes, maxRows: opts.RowGroupRows}
	if e.maxBytes <= 0 {
		e.maxBytes = DefaultRowGroupBytes
	}
	if e.maxRows <= 0 {
		e.maxRows = DefaultRowGroupRows
	}
	level := opts.ZstdLevel
	if level == 0 {
		level = 3
	}
	props := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(level),
		parquet.WithMaxRowGroupLength(e.maxRows),
		parquet.WithCreatedBy("onecore"),
		parquet.WithDataPageSize(1 << 20),
	}
	for _, c := range opts.Plain {
		props = append(props, parquet.WithDictionaryFor(c, false), parquet.WithStatsFor(c, false))
	}
	fw, err := pqarrow.NewFileWriter(schema, w, parquet.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	e.fw = fw
	return e, nil
}

func (e *parquetEncoder) write(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if e.rgRows > 0 && (e.rgBytes >= e.maxBytes || e.rgRows >= e.maxRows) {
		if err := e.fw.NewBufferedRowGroupChecked(); err != nil {
			return err
		}
		e.rgBytes, e.rgRows = 0, 0
	}
	if err := e.fw.WriteBuffered(rec); err != nil {
		return err
	}
	e.rgBytes += recordBytes(rec)
	e.rgRows += rec.NumRows()
	return nil
}

func (e *parquetEncoder) finish() error { return e.fw.Close() }

// recordBytes is the size of a record's Arrow buffers (sliced arrays count
// whole buffers, an overestimate that only makes row groups smaller).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += int64(c.Data().SizeInBytes())
	}
	return n
}
