package writers

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

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
	cols   []*array.StringBuilder // id, text, keep...
	bytes  int64
}

// NewDocBuilder returns a builder for DocSchema(keep).
func NewDocBuilder(keep []string) (*DocBuilder, error) {
	schema, err := DocSchema(keep)
	if err != nil {
		return nil, err
	}
	d := &DocBuilder{schema: schema, b: array.NewRecordBuilder(Allocator, schema)}
	for i := range schema.NumFields() {
		d.cols = append(d.cols, d.b.Field(i).(*array.StringBuilder))
	}
	return d, nil
}

// Schema returns the builder's schema.
func (d *DocBuilder) Schema() *arrow.Schema { return d.schema }

// Append adds a document. doc.Keep must have one value per keep field.
func (d *DocBuilder) Append(doc *readers.Document) {
	d.cols[0].Append(doc.ID)
	d.cols[1].Append(doc.Text)
	d.bytes += int64(len(doc.ID) + len(doc.Text))
	for k, sb := range d.cols[2:] {
		if v := doc.Keep[k]; v.Valid {
			sb.Append(v.S)
			d.bytes += int64(len(v.S))
		} else {
			sb.AppendNull()
		}
	}
}

// Len returns the number of documents appended since the last NewRecord.
func (d *DocBuilder) Len() int { return d.cols[0].Len() }

// Reserve makes room for rows more documents with about textBytes of text,
// so a batch of known size is built without regrowing (and copying) its
// buffers.
func (d *DocBuilder) Reserve(rows int, textBytes int) {
	for _, c := range d.cols {
		c.Reserve(rows)
	}
	d.cols[1].ReserveData(textBytes)
}

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
