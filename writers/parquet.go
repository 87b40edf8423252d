package writers

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetEncoder writes Parquet with pqarrow. Records of any size are
// collected until they make a row group of RowGroupBytes of Arrow data or
// RowGroupRows rows, which is then written column by column straight to the
// file, page by page. (pqarrow's buffered row groups would instead grow one
// in-memory copy of every compressed column chunk by doubling: measured as
// a quarter of the CPU time of a conversion, in page faults and copies.)
type parquetEncoder struct {
	fw       *pqarrow.FileWriter
	maxBytes int64
	maxRows  int64
	pending  []arrow.RecordBatch
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
		level = DefaultParquetZstdLevel
	}
	props := []parquet.WriterProperty{
		parquet.WithAllocator(Allocator),
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
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(Allocator)))
	if err != nil {
		return nil, err
	}
	e.fw = fw
	return e, nil
}

func (e *parquetEncoder) write(rec arrow.RecordBatch) error {
	rec.Retain()
	for rec.NumRows() > 0 {
		// split a record that would overfill the row group's row cap
		if room := e.maxRows - e.rgRows; rec.NumRows() > room {
			head, tail := rec.NewSlice(0, room), rec.NewSlice(room, rec.NumRows())
			rec.Release()
			e.add(head)
			if err := e.flush(); err != nil {
				tail.Release()
				return err
			}
			rec = tail
			continue
		}
		e.add(rec)
		if e.rgBytes >= e.maxBytes || e.rgRows >= e.maxRows {
			return e.flush()
		}
		return nil
	}
	rec.Release()
	return nil
}

// add queues a record (the encoder owns the reference) for the row group.
func (e *parquetEncoder) add(rec arrow.RecordBatch) {
	e.pending = append(e.pending, rec)
	e.rgBytes += recordBytes(rec)
	e.rgRows += rec.NumRows()
}

// flush writes the pending records as one row group.
func (e *parquetEncoder) flush() error {
	if len(e.pending) == 0 {
		return nil
	}
	defer func() {
		for _, r := range e.pending {
			r.Release()
		}
		e.pending, e.rgBytes, e.rgRows = e.pending[:0], 0, 0
	}()
	if err := e.fw.NewRowGroupChecked(); err != nil {
		return err
	}
	schema := e.pending[0].Schema()
	for c := range schema.NumFields() {
		chunks := make([]arrow.Array, len(e.pending))
		for i, r := range e.pending {
			chunks[i] = r.Column(c)
		}
		col := arrow.NewChunked(schema.Field(c).Type, chunks)
		err := e.fw.WriteColumnChunked(col, 0, int64(col.Len()))
		col.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *parquetEncoder) finish() error {
	if err := e.flush(); err != nil {
		e.fw.Close()
		return err
	}
	return e.fw.Close()
}

// recordBytes is the size of a record's Arrow buffers (a sliced record
// counts its whole buffers: an overestimate that only makes row groups
// smaller).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += int64(c.Data().SizeInBytes())
	}
	return n
}
