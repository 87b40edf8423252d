package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/onecore-dev/onecore/amx"
)

// DType is a safetensors element type. onecore writes BF16 (weights) and
// F32; it also reads F16.
type DType string

// The dtypes onecore reads.
const (
	BF16 DType = "BF16"
	F16  DType = "F16"
	F32  DType = "F32"
)

// Size returns the bytes per element, or 0 for an unsupported dtype.
func (d DType) Size() int {
	switch d {
	case BF16, F16:
		return 2
	case F32:
		return 4
	}
	return 0
}

// maxHeaderBytes bounds the JSON header (the format's own limit is 100 MB).
const maxHeaderBytes = 100 << 20

// Tensor is one named tensor of a safetensors file; Data holds the raw
// little-endian bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NumElements is the product of the shape (1 for a scalar).
func (t *Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Float32 widens the tensor's elements to fp32.
func (t *Tensor) Float32() []float32 {
	n := t.NumElements()
	out := make([]float32, n)
	switch t.DType {
	case BF16:
		for i := range out {
			out[i] = amx.BF16(binary.LittleEndian.Uint16(t.Data[2*i:])).Float32()
		}
	case F16:
		for i := range out {
			out[i] = f16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	}
	return out
}

// f16ToF32 widens an IEEE half exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(man) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// SafeFile is a parsed safetensors file.
type SafeFile struct {
	Tensors  map[string]*Tensor
	Order    []string // names in data-offset order
	Metadata map[string]string
}

// ReadSafetensors reads and validates a whole safetensors file.
func ReadSafetensors(path string) (*SafeFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ParseSafetensors(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

type headerEntry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// ParseSafetensors validates and parses a safetensors image: header length,
// JSON header, dtypes, shapes, offsets (in bounds, sizes matching shapes,
// no overlap, no hole, nothing past the last tensor). Tensors alias data.
func ParseSafetensors(data []byte) (*SafeFile, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("safetensors: file too short (%d bytes) for the header length", len(data))
	}
	hlen := binary.LittleEndian.Uint64(data)
	if hlen > maxHeaderBytes {
		return nil, fmt.Errorf("safetensors: header length %d exceeds %d", hlen, maxHeaderBytes)
	}
	if uint64(len(data)-8) < hlen {
		return nil, fmt.Errorf("safetensors: truncated header (%d bytes announced, %d present)", hlen, len(data)-8)
	}
	hdr := data[8 : 8+hlen]
	body := data[8+hlen:]
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("safetensors: bad JSON header: %v", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("safetensors: header is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("safetensors: trailing data after the JSON header")
	}
	f := &SafeFile{Tensors: map[string]*Tensor{}, Metadata: map[string]string{}}
	type span struct {
		name       string
		begin, end int64
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		var e headerEntry
		d := json.NewDecoder(bytes.NewReader(msg))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: bad header entry: %v", name, err)
		}
		size := e.DType.Size()
		if size == 0 {
			return nil, fmt.Errorf("safetensors: tensor %q: unsupported dtype %q (want BF16, F16 or F32)", name, e.DType)
		}
		if len(e.DataOffsets) != 2 {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets must have 2 entries, has %d", name, len(e.DataOffsets))
		}
		n := int64(1)
		shape := make([]int, len(e.Shape))
		for i, s := range e.Shape {
			if s < 0 || s > math.MaxInt32 {
				return nil, fmt.Errorf("safetensors: tensor %q: bad dimension %d", name, s)
			}
			shape[i] = int(s)
			n *= s
			if n > math.MaxInt32 {
				return nil, fmt.Errorf("safetensors: tensor %q: shape %v too large", name, e.Shape)
			}
		}
		b, end := e.DataOffsets[0], e.DataOffsets[1]
		if b < 0 || end < b {
			return nil, fmt.Errorf("safetensors: tensor %q: bad data_offsets [%d, %d]", name, b, end)
		}
		if end-b != n*int64(size) {
			return nil, fmt.Errorf("safetensors: tensor %q: %d bytes for shape %v of %s (want %d)", name, end-b, e.Shape, e.DType, n*int64(size))
		}
		if end > int64(len(body)) {
			return nil, fmt.Errorf("safetensors: tensor %q: data [%d, %d) past the end of the file (%d data bytes): truncated file", name, b, end, len(body))
		}
		f.Tensors[name] = &Tensor{Name: name, DType: e.DType, Shape: shape, Data: body[b:end:end]}
		spans = append(spans, span{name, b, end})
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].name < spans[j].name
	})
	var at int64
	for _, s := range spans {
		if s.begin < at {
			return nil, fmt.Errorf("safetensors: tensor %q: data overlaps the previous tensor", s.name)
		}
		if s.begin > at {
			return nil, fmt.Errorf("safetensors: tensor %q: hole of %d bytes before its data", s.name, s.begin-at)
		}
		at = s.end
		f.Order = append(f.Order, s.name)
	}
	if at != int64(len(body)) {
		return nil, fmt.Errorf("safetensors: %d bytes after the last tensor", int64(len(body))-at)
	}
	return f, nil
}

// WriteSafetensors writes tensors (in the given order) and metadata in the
// safetensors format. Every tensor's Data must match its dtype and shape.
func WriteSafetensors(w io.Writer, tensors []*Tensor, metadata map[string]string) error {
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, t := range tensors {
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors: tensor %q: unsupported dtype %q", t.Name, t.DType)
		}
		if want := t.NumElements() * t.DType.Size(); len(t.Data) != want {
			return fmt.Errorf("safetensors: tensor %q: %d bytes for shape %v (want %d)", t.Name, len(t.Data), t.Shape, want)
		}
		if _, dup := hdr[t.Name]; dup || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: duplicate or reserved tensor name %q", t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": []int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	// Pad the header with spaces so the data starts 8-byte aligned.
	for (8+len(js))%8 != 0 {
		js = append(js, ' ')
	}
	var lenbuf [8]byte
	binary.LittleEndian.PutUint64(lenbuf[:], uint64(len(js)))
	if _, err := w.Write(lenbuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(js); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// BF16Tensor rounds vals to bf16 (ties to even) into a tensor.
func BF16Tensor(name string, shape []int, vals []float32) *Tensor {
	data := make([]byte, 2*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(amx.FromFloat32(v)))
	}
	return &Tensor{Name: name, DType: BF16, Shape: append([]int(nil), shape...), Data: data}
}

// F32Tensor stores vals as fp32.
func F32Tensor(name string, shape []int, vals []float32) *Tensor {
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return &Tensor{Name: name, DType: F32, Shape: append([]int(nil), shape...), Data: data}
}
