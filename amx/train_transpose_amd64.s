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

// T5OUT writes output rows k (at AX) and k+8 (at R14) from Z_k, then
// steps both to the next row: lanes 0,2 are row k, lanes 1,3 row k+8.
#define T5OUT(z, y) \
	VSHUFI64X2 $0xD8, z, z, z; \
	VMOVDQU y, (AX); \
	VEXTRACTI64X4 $1, z, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14

// func transpose16BF16x512(dst *BF16, lddBytes int, src *BF16, ldsBytes int, rowBlocks, colBlocks int)
// dst[c·ldd + r] = src[r·lds + c] for r < 16·rowBlocks, c < 16·colBlocks.
// One 16×16 block in registers, no scratch memory: Z_r holds source row r
// in its low 256 bits and row r+8 in its high 256 bits, so HALF8's
// unpack network (here on zmm) transposes both halves at once and leaves
// Z_k = [col k, rows 0-7 | col k+8, rows 0-7 | col k, rows 8-15 |
// col k+8, rows 8-15] (128-bit lanes); one lane shuffle makes that output
// rows k and k+8.
TEXT ·transpose16BF16x512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ lddBytes+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ ldsBytes+24(FP), BX
	MOVQ rowBlocks+32(FP), R8
	MOVQ colBlocks+40(FP), R9
	TESTQ R8, R8
	JZ   t5done
	TESTQ R9, R9
	JZ   t5done
	LEAQ (BX)(BX*2), R10 // 3 source rows
	MOVQ BX, R13
	SHLQ $4, R13         // 16 source rows
	MOVQ DX, R15
	SHLQ $4, R15         // 16 destination rows
t5col:
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R8, CX
t5row:
	MOVQ R11, AX
	LEAQ (AX)(BX*8), R14 // source row 8
	VMOVDQU (AX), Y0
	VMOVDQU (AX)(BX*1), Y1
	VMOVDQU (AX)(BX*2), Y2
	VMOVDQU (AX)(R10*1), Y3
	VINSERTI64X4 $1, (R14), Z0, Z0
	VINSERTI64X4 $1, (R14)(BX*1), Z1, Z1
	VINSERTI64X4 $1, (R14)(BX*2), Z2, Z2
	VINSERTI64X4 $1, (R14)(R10*1), Z3, Z3
	LEAQ (AX)(BX*4), AX
	LEAQ (R14)(BX*4), R14
	VMOVDQU (AX), Y4
	VMOVDQU (AX)(BX*1), Y5
	VMOVDQU (AX)(BX*2), Y6
	VMOVDQU (AX)(R10*1), Y7
	VINSERTI64X4 $1, (R14), Z4, Z4
	VINSERTI64X4 $1, (R14)(BX*1), Z5, Z5
	VINSERTI64X4 $1, (R14)(BX*2), Z6, Z6
	VINSERTI64X4 $1, (R14)(R10*1), Z7, Z7
	VPUNPCKLWD Z1, Z0, Z8
	VPUNPCKHWD Z1, Z0, Z9
	VPUNPCKLWD Z3, Z2, Z0
	VPUNPCKHWD Z3, Z2, Z1
	VPUNPCKLWD Z5, Z4, Z2
	VPUNPCKHWD Z5, Z4, Z3
	VPUNPCKLWD Z7, Z6, Z4
	VPUNPCKHWD Z7, Z6, Z5
	VPUNPCKLDQ Z0, Z8, Z6
	VPUNPCKHDQ Z0, Z8, Z7
	VPUNPCKLDQ Z1, Z9, Z10
	VPUNPCKHDQ Z1, Z9, Z11
	VPUNPCKLDQ Z4, Z2, Z12
	VPUNPCKHDQ Z4, Z2, Z13
	VPUNPCKLDQ Z5, Z3, Z14
	VPUNPCKHDQ Z5, Z3, Z15
	VPUNPCKLQDQ Z12, Z6, Z0
	VPUNPCKHQDQ Z12, Z6, Z1
	VPUNPCKLQDQ Z13, Z7, Z2
	VPUNPCKHQDQ Z13, Z7, Z3
	VPUNPCKLQDQ Z14, Z10, Z4
	VPUNPCKHQDQ Z14, Z10, Z5
	VPUNPCKLQDQ Z15, Z11, Z6
	VPUNPCKHQDQ Z15, Z11, Z7
	MOVQ R12, AX
	LEAQ (AX)(DX*8), R14 // destination row 8
	T5OUT(Z0, Y0)
	T5OUT(Z1, Y1)
	T5OUT(Z2, Y2)
	T5OUT(Z3, Y3)
	T5OUT(Z4, Y4)
	T5OUT(Z5, Y5)
	T5OUT(Z6, Y6)
	T5OUT(Z7, Y7)
	ADDQ R13, R11
	ADDQ $32, R12
	DECQ CX
	JNZ  t5row
	ADDQ $32, SI
	ADDQ R15, DI
	DECQ R9
	JNZ  t5col
t5done:
	VZEROUPPER
	RET
