package writers

import (
	"fmt"

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
type DocBuilder struct {
	schema *arrow.Schema
	b      *array.RecordBuilder
	bytes  int64
}

// NewDocBuilder returns a builder for DocSchema(keep).
func NewDocBuilder(keep []string) (*DocBuilder, error) {
	schema, err := DocSchema(keep)
	if err != nil {
		return nil, err
	}
	return &DocBuilder{schema: schema, b: array.NewRecordBuilder(memory.DefaultAllocator, schema)}, nil
}

// Schema returns the builder's schema.
func (d *DocBuilder) Schema() *arrow.Schema { return d.schema }

// Append adds a document. doc.Keep must have one value per keep field.
func (d *DocBuilder) Append(doc *readers.Document) {
	d.b.Field(0).(*array.StringBuilder).Append(doc.ID)
	d.b.Field(1).(*array.StringBuilder).Append(doc.Text)
	d.bytes += int64(len(doc.ID) + len(doc.Text))
	for k := 2; k < len(d.schema.Fields()); k++ {
		sb := d.b.Field(k).(*array.StringBuilder)
		if v := doc.Keep[k-2]; v.Valid {
			sb.Append(v.S)
			d.bytes += int64(len(v.S))
		} else {
			sb.AppendNull()
		}
	}
}

// Len returns the number of documents appended since the last NewRecord.
func (d *DocBuilder) Len() int { return d.b.Field(0).Len() }

// Bytes returns the string bytes appended since the last NewRecord. Keep
// it well under 2 GiB per batch: Arrow strings have 32-bit offsets.
func (d *DocBuilder) Bytes() int64 { return d.bytes }

// NewRecord returns the documents appended so far as a record batch and
// resets the builder. The caller releases the record.
func (d *DocBuilder) NewRecord() arrow.RecordBatch {
	d.bytes = 0
	return d.b.NewRecordBatch()
}

// Release frees the builder's buffers.
func (d *DocBuilder) Release() { d.b.Release() }
