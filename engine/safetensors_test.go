package engine

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func sampleSafetensors(t testing.TB) []byte {
	var buf bytes.Buffer
	err := WriteSafetensors(&buf, []*Tensor{
		BF16Tensor("a", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6.5}),
		F32Tensor("b", []int{2}, []float32{0.1, -7}),
	}, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSafetensorsRoundTrip(t *testing.T) {
	f, err := ParseSafetensors(sampleSafetensors(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Tensors["a"].Float32(); got[5] != 6.5 || got[0] != 1 || len(got) != 6 {
		t.Fatalf("a = %v", got)
	}
	if got := f.Tensors["b"].Float32(); got[0] != 0.1 || got[1] != -7 {
		t.Fatalf("b = %v", got)
	}
	if f.Metadata["k"] != "v" || len(f.Order) != 2 || f.Order[0] != "a" {
		t.Fatalf("metadata/order: %v %v", f.Metadata, f.Order)
	}
}

func header(h string, body int) []byte {
	b := make([]byte, 8, 8+len(h)+body)
	binary.LittleEndian.PutUint64(b, uint64(len(h)))
	b = append(b, h...)
	return append(b, make([]byte, body)...)
}

func TestSafetensorsErrors(t *testing.T) {
	good := sampleSafetensors(t)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"short", good[:5], "too short"},
		{"truncated header", good[:20], "truncated header"},
		{"truncated data", good[:len(good)-3], `tensor "b"`},
		{"extra data", append(append([]byte{}, good...), 0), "after the last tensor"},
		{"bad json", header(`{"a":`, 0), "bad JSON"},
		{"not object", header(`[1]`, 0), "bad JSON"},
		{"dtype", header(`{"x":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}`, 1), `tensor "x": unsupported dtype`},
		{"size", header(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), `tensor "x": 4 bytes`},
		{"overlap", header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, 6), `overlaps`},
		{"hole", header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), `tensor "x": hole`},
		{"neg dim", header(`{"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, 0), `bad dimension`},
		{"offsets", header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4]}}`, 4), `data_offsets`},
		{"huge header", func() []byte { b := make([]byte, 16); b[7] = 1; return b }(), "header length"},
		{"bad metadata", header(`{"__metadata__":{"a":1}}`, 0), "__metadata__"},
	} {
		_, err := ParseSafetensors(tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func FuzzParseSafetensors(f *testing.F) {
	f.Add(sampleSafetensors(f))
	f.Add(header(`{"x":{"dtype":"BF16","shape":[1,1],"data_offsets":[0,2]}}`, 2))
	f.Add(header(`{"x":{"dtype":"F32","shape":[1000000000,1000000000],"data_offsets":[0,4]}}`, 4))
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := ParseSafetensors(data)
		if err != nil {
			return
		}
		for _, tn := range sf.Tensors {
			if got := len(tn.Float32()); got != tn.NumElements() {
				t.Fatalf("%s: %d values for %v", tn.Name, got, tn.Shape)
			}
		}
	})
}
