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

// AMX encodings, checked against GNU as (objdump of the AT&T forms in the
// comments).
func TestAMXEncoding(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want []byte
	}{
		{"tileloadd (%rax,%rbx,1),%tmm4", tileMem(ppF2, 4, "AX", "BX"), []byte{0xc4, 0xe2, 0x7b, 0x4b, 0x24, 0x18}},
		{"tileloadd (%rdx,%r13,1),%tmm6", tileMem(ppF2, 6, "DX", "R13"), []byte{0xc4, 0xa2, 0x7b, 0x4b, 0x34, 0x2a}},
		{"tileloadd (%r12,%r13,1),%tmm7", tileMem(ppF2, 7, "R12", "R13"), []byte{0xc4, 0x82, 0x7b, 0x4b, 0x3c, 0x2c}},
		{"tilestored %tmm1,(%rdx,%rcx,1)", tileMem(ppF3, 1, "DX", "CX"), []byte{0xc4, 0xe2, 0x7a, 0x4b, 0x0c, 0x0a}},
		{"tdpbf16ps %tmm6,%tmm4,%tmm0", tdpbf16ps(0, 4, 6), []byte{0xc4, 0xe2, 0x4a, 0x5c, 0xc4}},
		{"tdpbf16ps %tmm7,%tmm5,%tmm3", tdpbf16ps(3, 5, 7), []byte{0xc4, 0xe2, 0x42, 0x5c, 0xdd}},
	} {
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("%s = % x, want % x", tc.name, tc.got, tc.want)
		}
	}
}
