package writers

import (
	"encoding/base64"
	"encoding/binary"
	"io"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// stringsEncoder writes Parquet files whose columns are all flat strings
// or binaries (DocSchema and the like: what convert writes), the fast path
// beside the general pqarrow encoder (parquetEncoder).
//
// Values are PLAIN-encoded into data pages (v1) as records arrive; each page
// is zstd-compressed on one of Options.Concurrency workers, and a row
// group's column chunks are written, pages in order, once the row group is
// full. Page boundaries depend only on the data, never on timing, so the
// file is byte-identical for any concurrency. Memory: the compressed pages
// of one row group plus a few uncompressed pages in flight; records are not
// held (their values are copied into pages at once).
//
// Why not pqarrow: it compresses pages one after another on the writing
// goroutine, which leaves the second core idle, and it grows its page and
// chunk buffers by doubling (a tenth of the CPU time in copies and zeroing).
type stringsEncoder struct {
	w        io.Writer
	off      int64 // bytes written so far
	schema   *arrow.Schema
	cols     []*chunkWriter
	pool     *pagePool
	maxBytes int64
	maxRows  int64
	rgBytes  int64
	rgRows   int64
	groups   []format.RowGroup
	rows     int64
}

// pqPageBytes is the target uncompressed size of a data page (the common
// Parquet writers use 1 MiB). A single value larger than this makes one
// page of its own.
const pqPageBytes = 1 << 20

// pqMagic starts and ends every Parquet file.
const pqMagic = "PAR1"

// isStringSchema reports whether every field is a flat string or binary
// with 32-bit offsets: the schemas stringsEncoder writes.
func isStringSchema(schema *arrow.Schema) bool {
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.STRING, arrow.BINARY:
		default:
			return false
		}
	}
	return schema.NumFields() > 0
}

func newStringsEncoder(w io.Writer, schema *arrow.Schema, opts Options) (*stringsEncoder, error) {
	e := &stringsEncoder{w: w, schema: schema, maxBytes: opts.RowGroupBytes, maxRows: opts.RowGroupRows}
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
	workers := opts.Concurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	pool, err := newPagePool(workers, level)
	if err != nil {
		return nil, err
	}
	e.pool = pool
	for _, f := range schema.Fields() {
		e.cols = append(e.cols, &chunkWriter{pool: pool, nullable: f.Nullable})
	}
	if err := e.put([]byte(pqMagic)); err != nil {
		pool.close()
		return nil, err
	}
	return e, nil
}

func (e *stringsEncoder) put(b []byte) error {
	n, err := e.w.Write(b)
	e.off += int64(n)
	return err
}

func (e *stringsEncoder) write(rec arrow.RecordBatch) error {
	n := rec.NumRows()
	for i := int64(0); i < n; {
		j := min(n, i+(e.maxRows-e.rgRows))
		for c, cw := range e.cols {
			e.rgBytes += cw.appendRange(rec.Column(c).Data(), int(i), int(j))
		}
		e.rgRows += j - i
		i = j
		if e.rgRows >= e.maxRows || e.rgBytes >= e.maxBytes {
			if err := e.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes the current row group.
func (e *stringsEncoder) flush() error {
	if e.rgRows == 0 {
		return nil
	}
	rg := format.RowGroup{NumRows: e.rgRows, FileOffset: e.off, Ordinal: int16(len(e.groups))}
	for _, cw := range e.cols {
		cw.finishPage()
	}
	for c, cw := range e.cols {
		meta := format.ColumnMetaData{
			Type:           format.ByteArray,
			Encoding:       []format.Encoding{format.Plain, format.RLE},
			PathInSchema:   []string{e.schema.Field(c).Name},
			Codec:          format.Zstd,
			NumValues:      e.rgRows,
			DataPageOffset: e.off,
		}
		var nulls int64
		for _, p := range cw.pages {
			<-p.done
			if p.err != nil {
				return p.err
			}
			meta.TotalUncompressedSize += int64(len(p.header) + p.rawSize)
			meta.TotalCompressedSize += int64(len(p.header) + len(p.body))
			nulls += int64(p.nulls)
			if err := e.put(p.header); err != nil {
				return err
			}
			if err := e.put(p.body); err != nil {
				return err
			}
		}
		cw.recycle()
		meta.Statistics.NullCount = nulls
		rg.TotalByteSize += meta.TotalUncompressedSize
		rg.TotalCompressedSize += meta.TotalCompressedSize
		rg.Columns = append(rg.Columns, format.ColumnChunk{FileOffset: meta.DataPageOffset, MetaData: meta})
	}
	e.groups = append(e.groups, rg)
	e.rows += e.rgRows
	e.rgRows, e.rgBytes = 0, 0
	return nil
}

// abort stops the compressors of a file that will not be finished.
func (e *stringsEncoder) abort() { e.pool.close() }

func (e *stringsEncoder) finish() error {
	defer e.pool.close()
	if err := e.flush(); err != nil {
		return err
	}
	md := format.FileMetaData{
		Version:   2,
		NumRows:   e.rows,
		RowGroups: e.groups,
		CreatedBy: "onecore",
		Schema: []format.SchemaElement{{
			Name:        "schema",
			NumChildren: thrift.New(int32(e.schema.NumFields())),
		}},
	}
	for _, f := range e.schema.Fields() {
		el := format.SchemaElement{
			Type:           thrift.New(format.ByteArray),
			RepetitionType: thrift.New(format.Required),
			Name:           f.Name,
		}
		if f.Nullable {
			el.RepetitionType = thrift.New(format.Optional)
		}
		if f.Type.ID() == arrow.STRING {
			el.ConvertedType = thrift.New(deprecated.UTF8)
			el.LogicalType = format.LogicalType{Value: &format.StringType{}}
		}
		md.Schema = append(md.Schema, el)
	}
	// The Arrow schema, as pqarrow stores it, so that Arrow readers get
	// back exactly the types and nullability written.
	if m := e.schema.Metadata(); m.Len() > 0 {
		for i, k := range m.Keys() {
			md.KeyValueMetadata = append(md.KeyValueMetadata, format.KeyValue{Key: k, Value: m.Values()[i]})
		}
	}
	md.KeyValueMetadata = append(md.KeyValueMetadata, format.KeyValue{
		Key:   "ARROW:schema",
		Value: base64.StdEncoding.EncodeToString(flight.SerializeSchema(e.schema, Allocator)),
	})
	b, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		return err
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(b)))
	b = append(b, pqMagic...)
	return e.put(b)
}

// chunkWriter builds the pages of one column chunk.
type chunkWriter struct {
	pool     *pagePool
	nullable bool
	cur      *pqPage   // page being filled
	pages    []*pqPage // this row group's pages, in order
}

// appendRange PLAIN-encodes values [i, j) of a string or binary array and
// returns their bytes.
func (cw *chunkWriter) appendRange(data arrow.ArrayData, i, j int) int64 {
	var (
		bufs  = data.Buffers()
		offs  = arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())[data.Offset():]
		vals  []byte
		valid []byte
		n     int64
	)
	if bufs[2] != nil {
		vals = bufs[2].Bytes()
	}
	if bufs[0] != nil && data.NullN() > 0 {
		valid = bufs[0].Bytes()
	}
	for k := i; k < j; k++ {
		p := cw.page()
		if valid != nil {
			bit := data.Offset() + k
			if valid[bit>>3]&(1<<(bit&7)) == 0 {
				p.addNull()
				continue
			}
		}
		v := vals[offs[k]:offs[k+1]]
		p.addValue(v)
		n += int64(len(v))
		if len(p.raw) >= pqPageBytes {
			cw.finishPage()
		}
	}
	return n
}

// page returns the page being filled, starting one if needed.
func (cw *chunkWriter) page() *pqPage {
	if cw.cur == nil {
		cw.cur = cw.pool.newPage(cw.nullable)
	}
	return cw.cur
}

// finishPage hands the current page to the compressors.
func (cw *chunkWriter) finishPage() {
	if cw.cur == nil {
		return
	}
	p := cw.cur
	cw.cur = nil
	cw.pages = append(cw.pages, p)
	cw.pool.submit(p)
}

// recycle returns the written pages' buffers.
func (cw *chunkWriter) recycle() {
	for _, p := range cw.pages {
		cw.pool.free(p)
	}
	clear(cw.pages)
	cw.pages = cw.pages[:0]
}

// pqPage is one data page: filled by the writer, compressed by a worker.
type pqPage struct {
	nullable bool
	raw      []byte // PLAIN values, until compressed
	defs     []byte // nullable: one bit per value, 1 = present (LSB first)
	values   int32
	nulls    int32
	rawSize  int    // uncompressed page size
	header   []byte // thrift PageHeader
	body     []byte // compressed page
	err      error
	done     chan struct{}
}

func (p *pqPage) addValue(v []byte) {
	p.raw = binary.LittleEndian.AppendUint32(p.raw, uint32(len(v)))
	p.raw = append(p.raw, v...)
	p.setDef(true)
}

func (p *pqPage) addNull() {
	p.nulls++
	p.setDef(false)
}

func (p *pqPage) setDef(present bool) {
	if p.nullable {
		if p.values&7 == 0 {
			p.defs = append(p.defs, 0)
		}
		if present {
			p.defs[len(p.defs)-1] |= 1 << (p.values & 7)
		}
	}
	p.values++
}

// source returns the page body to compress: for a nullable column the
// definition levels (4-byte length, then the RLE/bit-packed hybrid
// encoding with bit width 1) before the values, assembled in tmp.
func (p *pqPage) source(tmp *[]byte) []byte {
	if !p.nullable {
		return p.raw
	}
	var lv [binary.MaxVarintLen64 + 1]byte
	var n int
	if p.nulls == 0 {
		// one RLE run of 1s
		n = binary.PutUvarint(lv[:], uint64(p.values)<<1)
		lv[n] = 1
		n++
	} else {
		// one bit-packed run of groups of 8 (the last group padded)
		n = binary.PutUvarint(lv[:], uint64(len(p.defs))<<1|1)
	}
	size := n
	if p.nulls > 0 {
		size += len(p.defs)
	}
	b := binary.LittleEndian.AppendUint32((*tmp)[:0], uint32(size))
	b = append(b, lv[:n]...)
	if p.nulls > 0 {
		b = append(b, p.defs...)
	}
	b = append(b, p.raw...)
	*tmp = b
	return b
}

// compressor is one worker's zstd encoder and scratch buffers.
type compressor struct {
	enc      *zstd.Encoder
	tmp, out []byte
}

// compress fills the page's body and header and returns its raw buffer to
// the pool: a finished page holds only its compressed bytes.
func (c *compressor) compress(pp *pagePool, p *pqPage) {
	src := p.source(&c.tmp)
	p.rawSize = len(src)
	c.out = c.enc.EncodeAll(src, c.out[:0])
	p.body = append(p.body[:0], c.out...)
	h := format.PageHeader{
		Type:                 format.DataPage,
		UncompressedPageSize: int32(len(src)),
		CompressedPageSize:   int32(len(p.body)),
		DataPageHeader: thrift.New(format.DataPageHeader{
			NumValues:               p.values,
			Encoding:                format.Plain,
			DefinitionLevelEncoding: format.RLE,
			RepetitionLevelEncoding: format.RLE,
			Statistics:              format.Statistics{NullCount: int64(p.nulls)},
		}),
	}
	p.header, p.err = thrift.Marshal(new(thrift.CompactProtocol), &h)
	pp.putRaw(p.raw)
	p.raw = nil
	if cap(c.tmp) > 4*pqPageBytes {
		c.tmp = nil // after a huge value: don't keep its buffers
	}
	if cap(c.out) > 4*pqPageBytes {
		c.out = nil
	}
}

// pagePool compresses pages on worker goroutines and recycles page
// buffers. With one worker it compresses on the caller's goroutine.
type pagePool struct {
	jobs   chan *pqPage
	wg     sync.WaitGroup
	inline *compressor // one worker: no goroutines
	mu     sync.Mutex
	pages  []*pqPage // spare pages (with their body buffers)
	raws   [][]byte  // spare raw buffers
	once   sync.Once
}

// newCompressor returns a page compressor. Frames carry no xxhash
// checksum (pqarrow's do): Parquet pages have their own optional CRC, and
// hashing every page cost ~2% of a conversion.
func newCompressor(level int) (*compressor, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
	return &compressor{enc: enc}, err
}

func newPagePool(workers, level int) (*pagePool, error) {
	pp := &pagePool{}
	if workers == 1 {
		c, err := newCompressor(level)
		pp.inline = c
		return pp, err
	}
	// A short queue bounds the uncompressed pages in flight: the writer
	// blocks when the compressors fall behind.
	pp.jobs = make(chan *pqPage, workers)
	for range workers {
		c, err := newCompressor(level)
		if err != nil {
			pp.close()
			return nil, err
		}
		pp.wg.Add(1)
		go func() {
			defer pp.wg.Done()
			for p := range pp.jobs {
				c.compress(pp, p)
				close(p.done)
			}
		}()
	}
	return pp, nil
}

func (pp *pagePool) newPage(nullable bool) *pqPage {
	pp.mu.Lock()
	var p *pqPage
	if n := len(pp.pages); n > 0 {
		p = pp.pages[n-1]
		pp.pages = pp.pages[:n-1]
	} else {
		p = &pqPage{}
	}
	if n := len(pp.raws); n > 0 {
		p.raw = pp.raws[n-1]
		pp.raws = pp.raws[:n-1]
	}
	pp.mu.Unlock()
	if p.raw == nil {
		p.raw = make([]byte, 0, pqPageBytes+64<<10)
	}
	p.nullable = nullable
	p.done = make(chan struct{})
	return p
}

func (pp *pagePool) putRaw(b []byte) {
	if cap(b) > 4*pqPageBytes {
		return // grown for a huge value: let it go
	}
	pp.mu.Lock()
	if len(pp.raws) < 16 {
		pp.raws = append(pp.raws, b[:0])
	}
	pp.mu.Unlock()
}

func (pp *pagePool) submit(p *pqPage) {
	if pp.jobs == nil {
		pp.inline.compress(pp, p)
		close(p.done)
		return
	}
	pp.jobs <- p
}

// free keeps a written page for the next ones.
func (pp *pagePool) free(p *pqPage) {
	p.defs, p.values, p.nulls, p.rawSize, p.header, p.err = p.defs[:0], 0, 0, 0, nil, nil
	if cap(p.body) > 4*pqPageBytes {
		p.body = nil
	}
	p.body = p.body[:0]
	pp.mu.Lock()
	if len(pp.pages) < 256 {
		pp.pages = append(pp.pages, p)
	}
	pp.mu.Unlock()
}

// close stops the workers (after the queued pages are compressed).
func (pp *pagePool) close() {
	pp.once.Do(func() {
		if pp.jobs != nil {
			close(pp.jobs)
			pp.wg.Wait()
		}
	})
}
