package writers

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/onecore-dev/onecore/readers"
)

// Column names of the document schema.
const (
	ColID   = "id"
	ColText = "text"
)

// DocSchema is the schema of converted documents: id and text (UTF-8, never
// null), then one nullable UTF-8 column per passthrough field, named as the
// field and in --keep order. See readers.Value for how passthrough values
// are rendered as strings. A keep name equal to "id" or "text" or given
// twice is an error: output column names must be unique.
func DocSchema(keep []string) (*arrow.Schema, error) {
	fields := []arrow.Field{
		{Name: ColID, Type: arrow.BinaryTypes.String, Nullable: false},
		{Name: ColText, Type: arrow.BinaryTypes.String, Nullable: false},
	}
	seen := map[string]bool{ColID: true, ColText: true}
	for _, k := range keep {
		if k == "" {
			return nil, fmt.Errorf("empty passthrough field name")
		}
		if seen[k] {
			return nil, fmt.Errorf("passthrough field %q would duplicate an output column (the output always has %q and %q)", k, ColID, ColText)
		}
		seen[k] = true
		fields = append(fields, arrow.Field{Name: k, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return arrow.NewSchema(fields, nil), nil
}

// DocPlainColumns are the DocSchema columns to write without dictionary
// encoding (see Options.Plain).
var DocPlainColumns = []string{ColID, ColText}

// DocBuilder accumulates documents into record batches of DocSchema.
//
// The id and text columns are built in buffers of the pooled Allocator
// that are not zeroed first (every byte handed to Arrow is written), and
// passed to the record without a copy; Arrow's builders would zero each
// buffer twice (allocator and builder), a measurable share of a
// conversion's CPU time. Passthrough columns use Arrow's builders.
type DocBuilder struct {
	schema   *arrow.Schema
	id, text stringColumn
	keep     []*array.StringBuilder
	bytes    int64
}

// NewDocBuilder returns a builder for DocSchema(keep).
func NewDocBuilder(keep []string) (*DocBuilder, error) {
	schema, err := DocSchema(keep)
	if err != nil {
		return nil, err
	}
	d := &DocBuilder{schema: schema}
	for range keep {
		d.keep = append(d.keep, array.NewStringBuilder(Allocator))
	}
	return d, nil
}

// Schema returns the builder's schema.
func (d *DocBuilder) Schema() *arrow.Schema { return d.schema }

// Append adds a document. doc.Keep must have one value per keep field.
func (d *DocBuilder) Append(doc *readers.Document) {
	d.id.append(doc.ID)
	d.text.append(doc.Text)
	d.bytes += int64(len(doc.ID) + len(doc.Text))
	for k, sb := range d.keep {
		if v := doc.Keep[k]; v.Valid {
			sb.Append(v.S)
			d.bytes += int64(len(v.S))
		} else {
			sb.AppendNull()
		}
	}
}

// Len returns the number of documents appended since the last NewRecord.
func (d *DocBuilder) Len() int { return d.id.len() }

// Reserve makes room for rows more documents with about textBytes of text,
// so a batch of known size is built without regrowing (and copying) its
// buffers.
func (d *DocBuilder) Reserve(rows int, textBytes int) {
	d.id.reserve(rows, 0)
	d.text.reserve(rows, textBytes)
	for _, c := range d.keep {
		c.Reserve(rows)
	}
}

// Bytes returns the string bytes appended since the last NewRecord. Keep
// it well under 2 GiB per batch: Arrow strings have 32-bit offsets.
func (d *DocBuilder) Bytes() int64 { return d.bytes }

// NewRecord returns the documents appended so far as a record batch and
// resets the builder. The caller releases the record.
func (d *DocBuilder) NewRecord() arrow.RecordBatch {
	n := d.Len()
	cols := []arrow.Array{d.id.array(), d.text.array()}
	for _, c := range d.keep {
		cols = append(cols, c.NewArray())
	}
	rec := array.NewRecordBatch(d.schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	d.bytes = 0
	return rec
}

// Release frees the builder's buffers.
func (d *DocBuilder) Release() {
	d.id.release()
	d.text.release()
	for _, c := range d.keep {
		c.Release()
	}
}

// stringColumn builds a non-null Arrow string array.
type stringColumn struct {
	offsets []int32 // len = rows+1 once a value was appended
	data    []byte  // from pool.allocateDirty
}

func (c *stringColumn) len() int { return max(0, len(c.offsets)-1) }

func (c *stringColumn) reserve(rows, bytes int) {
	if c.offsets == nil {
		c.offsets = make([]int32, 1, rows+1)
	} else {
		c.offsets = slices.Grow(c.offsets, rows)
	}
	c.grow(bytes)
}

// grow makes room for n more bytes of data.
func (c *stringColumn) grow(n int) {
	if len(c.data)+n <= cap(c.data) {
		return
	}
	nb := pool.allocateDirty(max(2*cap(c.data), len(c.data)+n, 64<<10))[:len(c.data)]
	copy(nb, c.data)
	if c.data != nil {
		pool.Free(c.data)
	}
	c.data = nb
}

func (c *stringColumn) append(s string) {
	if c.offsets == nil {
		c.offsets = make([]int32, 1, 1024)
	}
	c.grow(len(s))
	c.data = append(c.data, s...)
	c.offsets = append(c.offsets, int32(len(c.data)))
}

// array hands the values to a new array and resets the column.
func (c *stringColumn) array() arrow.Array {
	if c.offsets == nil {
		c.offsets = make([]int32, 1)
	}
	data := c.data
	if data == nil {
		data = []byte{}
	}
	var values *memory.Buffer
	if cap(data) >= poolMin {
		values = memory.NewBufferWithAllocator(data, pool) // back to the pool on release
	} else {
		values = memory.NewBufferBytes(data)
	}
	ad := array.NewData(arrow.BinaryTypes.String, len(c.offsets)-1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.offsets)), values}, nil, 0, 0)
	arr := array.NewStringData(ad)
	ad.Release()
	values.Release()
	c.offsets, c.data = nil, nil
	return arr
}

func (c *stringColumn) release() {
	if cap(c.data) >= poolMin {
		pool.Free(c.data)
	}
	c.offsets, c.data = nil, nil
}
