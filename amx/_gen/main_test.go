package main

import (
	"bytes"
	"testing"
)

// Expected bytes come from GNU as (binutils 2.4x) assembling the AT&T form
// `vdpbf16ps %zmm<src2>, %zmm<src1>, %zmm<dst>`.
func TestEVEXEncoding(t *testing.T) {
	for _, tc := range []struct {
		dst, src1, src2 int
		want            []byte
	}{
		{8, 4, 5, []byte{0x62, 0x72, 0x5e, 0x48, 0x52, 0xc5}},
		{31, 4, 19, []byte{0x62, 0x22, 0x5e, 0x48, 0x52, 0xfb}},
		{17, 20, 3, []byte{0x62, 0xe2, 0x5e, 0x40, 0x52, 0xcb}},
		{12, 5, 0, []byte{0x62, 0x72, 0x56, 0x48, 0x52, 0xe0}},
	} {
		if got := evexRR(0x52, 2, 2, tc.dst, tc.src1, tc.src2); !bytes.Equal(got, tc.want) {
			t.Errorf("VDPBF16PS z%d,z%d,z%d = % x, want % x", tc.dst, tc.src1, tc.src2, got, tc.want)
		}
	}
}
