package train

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/onecore-dev/onecore/amx"
)

// stTensor is one tensor to write: fp32 values stored as dtype ("F32" or "BF16").
type stTensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// writeSafetensors writes tensors to path atomically (temp file + rename).
func writeSafetensors(path string, dtype string, tensors []stTensor, meta map[string]string) error {
	width := 4
	if dtype == "BF16" {
		width = 2
	}
	header := map[string]any{}
	if len(meta) > 0 {
		header["__metadata__"] = meta
	}
	off := 0
	for _, t := range tensors {
		n := len(t.Data) * width
		header[t.Name] = map[string]any{"dtype": dtype, "shape": t.Shape, "data_offsets": []int{off, off + n}}
		off += n
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	buf := make([]byte, 8+len(hb)+off)
	binary.LittleEndian.PutUint64(buf, uint64(len(hb)))
	copy(buf[8:], hb)
	p := 8 + len(hb)
	for _, t := range tensors {
		for _, v := range t.Data {
			if width == 2 {
				binary.LittleEndian.PutUint16(buf[p:], uint16(amx.FromFloat32(v)))
			} else {
				binary.LittleEndian.PutUint32(buf[p:], math.Float32bits(v))
			}
			p += width
		}
	}
	return writeFileAtomic(path, buf)
}

// writeFileAtomic writes data to a temp file beside path, syncs it and
// renames it over path, so a reader never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readSafetensors reads every tensor of path as fp32 (F32 or BF16 stored).
func readSafetensors(path string) (map[string]stTensor, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("%s: truncated safetensors file", path)
	}
	hl := binary.LittleEndian.Uint64(b)
	if hl > uint64(len(b)-8) {
		return nil, nil, fmt.Errorf("%s: header length %d exceeds file size", path, hl)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+hl], &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: bad header: %w", path, err)
	}
	data := b[8+hl:]
	out := map[string]stTensor{}
	var meta map[string]string
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "__metadata__" {
			if err := json.Unmarshal(raw[name], &meta); err != nil {
				return nil, nil, fmt.Errorf("%s: bad __metadata__: %w", path, err)
			}
			continue
		}
		var info struct {
			Dtype   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets []int  `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw[name], &info); err != nil {
			return nil, nil, fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		n := 1
		for _, d := range info.Shape {
			if d < 0 {
				return nil, nil, fmt.Errorf("%s: tensor %q: negative dimension", path, name)
			}
			n *= d
		}
		width := map[string]int{"F32": 4, "BF16": 2}[info.Dtype]
		if width == 0 {
			return nil, nil, fmt.Errorf("%s: tensor %q: unsupported dtype %q", path, name, info.Dtype)
		}
		if len(info.Offsets) != 2 || info.Offsets[0] < 0 || info.Offsets[1] > len(data) || info.Offsets[1]-info.Offsets[0] != n*width {
			return nil, nil, fmt.Errorf("%s: tensor %q: data offsets %v do not match shape %v (%s) within %d data bytes", path, name, info.Offsets, info.Shape, info.Dtype, len(data))
		}
		src := data[info.Offsets[0]:info.Offsets[1]]
		v := make([]float32, n)
		for i := range v {
			if width == 2 {
				v[i] = amx.BF16(binary.LittleEndian.Uint16(src[2*i:])).Float32()
			} else {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
		}
		out[name] = stTensor{Name: name, Shape: info.Shape, Data: v}
	}
	return out, meta, nil
}
