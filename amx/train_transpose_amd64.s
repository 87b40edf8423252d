//go:build amd64 && !purego

#include "textflag.h"

// HALF8 transposes rows R..R+7 (16 words each, R9 walks the rows, R8 is
// the row stride) into 8 ymm at (DX): ymm k holds column k of the 8 rows
// in its low lane and column k+8 in its high lane.
#define HALF8 \
	VMOVDQU (R9), Y0; ADDQ R8, R9; \
	VMOVDQU (R9), Y1; ADDQ R8, R9; \
	VMOVDQU (R9), Y2; ADDQ R8, R9; \
	VMOVDQU (R9), Y3; ADDQ R8, R9; \
	VMOVDQU (R9), Y4; ADDQ R8, R9; \
	VMOVDQU (R9), Y5; ADDQ R8, R9; \
	VMOVDQU (R9), Y6; ADDQ R8, R9; \
	VMOVDQU (R9), Y7; ADDQ R8, R9; \
	VPUNPCKLWD Y1, Y0, Y8; \
	VPUNPCKHWD Y1, Y0, Y9; \
	VPUNPCKLWD Y3, Y2, Y0; \
	VPUNPCKHWD Y3, Y2, Y1; \
	VPUNPCKLWD Y5, Y4, Y2; \
	VPUNPCKHWD Y5, Y4, Y3; \
	VPUNPCKLWD Y7, Y6, Y4; \
	VPUNPCKHWD Y7, Y6, Y5; \
	VPUNPCKLDQ Y0, Y8, Y6; \
	VPUNPCKHDQ Y0, Y8, Y7; \
	VPUNPCKLDQ Y1, Y9, Y10; \
	VPUNPCKHDQ Y1, Y9, Y11; \
	VPUNPCKLDQ Y4, Y2, Y12; \
	VPUNPCKHDQ Y4, Y2, Y13; \
	VPUNPCKLDQ Y5, Y3, Y14; \
	VPUNPCKHDQ Y5, Y3, Y15; \
	VPUNPCKLQDQ Y12, Y6, Y0; \
	VPUNPCKHQDQ Y12, Y6, Y1; \
	VPUNPCKLQDQ Y13, Y7, Y2; \
	VPUNPCKHQDQ Y13, Y7, Y3; \
	VPUNPCKLQDQ Y14, Y10, Y4; \
	VPUNPCKHQDQ Y14, Y10, Y5; \
	VPUNPCKLQDQ Y15, Y11, Y6; \
	VPUNPCKHQDQ Y15, Y11, Y7; \
	VMOVDQU Y0, 0(DX); \
	VMOVDQU Y1, 32(DX); \
	VMOVDQU Y2, 64(DX); \
	VMOVDQU Y3, 96(DX); \
	VMOVDQU Y4, 128(DX); \
	VMOVDQU Y5, 160(DX); \
	VMOVDQU Y6, 192(DX); \
	VMOVDQU Y7, 224(DX)

// OUT2 writes output rows K and K+8 from the two halves' ymm K.
#define OUT2(K) \
	VMOVDQU (K*32)(BX), Y0; \
	VMOVDQU (256+K*32)(BX), Y1; \
	VPERM2I128 $0x20, Y1, Y0, Y2; \
	VPERM2I128 $0x31, Y1, Y0, Y3; \
	VMOVDQU Y2, (DI); \
	VMOVDQU Y3, (R11); \
	ADDQ R10, DI; \
	ADDQ R10, R11

// func transpose16AVX2(dst *BF16, lddBytes int, src *BF16, ldsBytes int, tmp *BF16)
// One 16×16 block: dst row j = column j of src. tmp: 256 words of scratch.
TEXT ·transpose16AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R10
	MOVQ src+16(FP), R9
	MOVQ lds+24(FP), R8
	MOVQ tmp+32(FP), BX
	MOVQ BX, DX
	HALF8
	LEAQ 256(BX), DX
	HALF8
	MOVQ R10, R11
	SHLQ $3, R11
	ADDQ DI, R11 // output row 8
	OUT2(0)
	OUT2(1)
	OUT2(2)
	OUT2(3)
	OUT2(4)
	OUT2(5)
	OUT2(6)
	OUT2(7)
	VZEROUPPER
	RET
