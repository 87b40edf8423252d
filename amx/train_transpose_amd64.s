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

// T5NETA transposes the 16×16 block at AX (row stride BX, R10 = 3·BX) in
// registers: Z_r gets source row r in its low 256 bits and row r+8 in its
// high 256 bits, so HALF8's unpack network (here on zmm) transposes both
// halves at once and leaves Z_k (k < 8) = [col k, rows 0-7 | col k+8,
// rows 0-7 | col k, rows 8-15 | col k+8, rows 8-15] (128-bit lanes).
// Clobbers AX, R14, Z8-Z15.
#define T5NETA \
	LEAQ (AX)(BX*8), R14; \
	VMOVDQU (AX), Y0; \
	VMOVDQU (AX)(BX*1), Y1; \
	VMOVDQU (AX)(BX*2), Y2; \
	VMOVDQU (AX)(R10*1), Y3; \
	VINSERTI64X4 $1, (R14), Z0, Z0; \
	VINSERTI64X4 $1, (R14)(BX*1), Z1, Z1; \
	VINSERTI64X4 $1, (R14)(BX*2), Z2, Z2; \
	VINSERTI64X4 $1, (R14)(R10*1), Z3, Z3; \
	LEAQ (AX)(BX*4), AX; \
	LEAQ (R14)(BX*4), R14; \
	VMOVDQU (AX), Y4; \
	VMOVDQU (AX)(BX*1), Y5; \
	VMOVDQU (AX)(BX*2), Y6; \
	VMOVDQU (AX)(R10*1), Y7; \
	VINSERTI64X4 $1, (R14), Z4, Z4; \
	VINSERTI64X4 $1, (R14)(BX*1), Z5, Z5; \
	VINSERTI64X4 $1, (R14)(BX*2), Z6, Z6; \
	VINSERTI64X4 $1, (R14)(R10*1), Z7, Z7; \
	VPUNPCKLWD Z1, Z0, Z8; \
	VPUNPCKHWD Z1, Z0, Z9; \
	VPUNPCKLWD Z3, Z2, Z0; \
	VPUNPCKHWD Z3, Z2, Z1; \
	VPUNPCKLWD Z5, Z4, Z2; \
	VPUNPCKHWD Z5, Z4, Z3; \
	VPUNPCKLWD Z7, Z6, Z4; \
	VPUNPCKHWD Z7, Z6, Z5; \
	VPUNPCKLDQ Z0, Z8, Z6; \
	VPUNPCKHDQ Z0, Z8, Z7; \
	VPUNPCKLDQ Z1, Z9, Z10; \
	VPUNPCKHDQ Z1, Z9, Z11; \
	VPUNPCKLDQ Z4, Z2, Z12; \
	VPUNPCKHDQ Z4, Z2, Z13; \
	VPUNPCKLDQ Z5, Z3, Z14; \
	VPUNPCKHDQ Z5, Z3, Z15; \
	VPUNPCKLQDQ Z12, Z6, Z0; \
	VPUNPCKHQDQ Z12, Z6, Z1; \
	VPUNPCKLQDQ Z13, Z7, Z2; \
	VPUNPCKHQDQ Z13, Z7, Z3; \
	VPUNPCKLQDQ Z14, Z10, Z4; \
	VPUNPCKHQDQ Z14, Z10, Z5; \
	VPUNPCKLQDQ Z15, Z11, Z6; \
	VPUNPCKHQDQ Z15, Z11, Z7

// T5NETB is T5NETA into Z16-Z23 (temporaries Z24-Z31).
#define T5NETB \
	LEAQ (AX)(BX*8), R14; \
	VMOVDQU64 (AX), Y16; \
	VMOVDQU64 (AX)(BX*1), Y17; \
	VMOVDQU64 (AX)(BX*2), Y18; \
	VMOVDQU64 (AX)(R10*1), Y19; \
	VINSERTI64X4 $1, (R14), Z16, Z16; \
	VINSERTI64X4 $1, (R14)(BX*1), Z17, Z17; \
	VINSERTI64X4 $1, (R14)(BX*2), Z18, Z18; \
	VINSERTI64X4 $1, (R14)(R10*1), Z19, Z19; \
	LEAQ (AX)(BX*4), AX; \
	LEAQ (R14)(BX*4), R14; \
	VMOVDQU64 (AX), Y20; \
	VMOVDQU64 (AX)(BX*1), Y21; \
	VMOVDQU64 (AX)(BX*2), Y22; \
	VMOVDQU64 (AX)(R10*1), Y23; \
	VINSERTI64X4 $1, (R14), Z20, Z20; \
	VINSERTI64X4 $1, (R14)(BX*1), Z21, Z21; \
	VINSERTI64X4 $1, (R14)(BX*2), Z22, Z22; \
	VINSERTI64X4 $1, (R14)(R10*1), Z23, Z23; \
	VPUNPCKLWD Z17, Z16, Z24; \
	VPUNPCKHWD Z17, Z16, Z25; \
	VPUNPCKLWD Z19, Z18, Z16; \
	VPUNPCKHWD Z19, Z18, Z17; \
	VPUNPCKLWD Z21, Z20, Z18; \
	VPUNPCKHWD Z21, Z20, Z19; \
	VPUNPCKLWD Z23, Z22, Z20; \
	VPUNPCKHWD Z23, Z22, Z21; \
	VPUNPCKLDQ Z16, Z24, Z22; \
	VPUNPCKHDQ Z16, Z24, Z23; \
	VPUNPCKLDQ Z17, Z25, Z26; \
	VPUNPCKHDQ Z17, Z25, Z27; \
	VPUNPCKLDQ Z20, Z18, Z28; \
	VPUNPCKHDQ Z20, Z18, Z29; \
	VPUNPCKLDQ Z21, Z19, Z30; \
	VPUNPCKHDQ Z21, Z19, Z31; \
	VPUNPCKLQDQ Z28, Z22, Z16; \
	VPUNPCKHQDQ Z28, Z22, Z17; \
	VPUNPCKLQDQ Z29, Z23, Z18; \
	VPUNPCKHQDQ Z29, Z23, Z19; \
	VPUNPCKLQDQ Z30, Z26, Z20; \
	VPUNPCKHQDQ Z30, Z26, Z21; \
	VPUNPCKLQDQ Z31, Z27, Z22; \
	VPUNPCKHQDQ Z31, Z27, Z23

// T5OUT2 writes two vertically adjacent blocks' transposes (T5NETA's Z0-Z7
// above, T5NETB's Z16-Z23 below) as 16 output rows of 64 bytes from AX
// (row stride DX): row k is lanes 0,2 of the upper Z_k then lanes 0,2 of
// the lower one, row k+8 lanes 1,3 of each. Clobbers AX, R14, Z8, Z9.
#define T5OUT2 \
	LEAQ (AX)(DX*8), R14; \
	VSHUFI64X2 $0x88, Z16, Z0, Z8; \
	VSHUFI64X2 $0xDD, Z16, Z0, Z9; \
	VMOVDQU64 Z8, (AX); \
	VMOVDQU64 Z9, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0x88, Z17, Z1, Z8; \
	VSHUFI64X2 $0xDD, Z17, Z1, Z9; \
	VMOVDQU64 Z8, (AX); \
	VMOVDQU64 Z9, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0x88, Z18, Z2, Z8; \
	VSHUFI64X2 $0xDD, Z18, Z2, Z9; \
	VMOVDQU64 Z8, (AX); \
	VMOVDQU64 Z9, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0x88, Z19, Z3, Z8; \
	VSHUFI64X2 $0xDD, Z19, Z3, Z9; \
	VMOVDQU64 Z8, (AX); \
	VMOVDQU64 Z9, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0x88, Z20, Z4, Z8; \
	VSHUFI64X2 $0xDD, Z20, Z4, Z9; \
	VMOVDQU64 Z8, (AX); \
	VMOVDQU64 Z9, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0x88, Z21, Z5, Z8; \
	VSHUFI64X2 $0xDD, Z21, Z5, Z9; \
	VMOVDQU64 Z8, (AX); \
	VMOVDQU64 Z9, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0x88, Z22, Z6, Z8; \
	VSHUFI64X2 $0xDD, Z22, Z6, Z9; \
	VMOVDQU64 Z8, (AX); \
	VMOVDQU64 Z9, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0x88, Z23, Z7, Z8; \
	VSHUFI64X2 $0xDD, Z23, Z7, Z9; \
	VMOVDQU64 Z8, (AX); \
	VMOVDQU64 Z9, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14

// T5OUT1 writes one block's transpose (T5NETA's Z0-Z7) as 16 output rows
// of 32 bytes from AX: lanes 0,2 of Z_k are row k, lanes 1,3 row k+8.
// Clobbers AX, R14.
#define T5OUT1 \
	LEAQ (AX)(DX*8), R14; \
	VSHUFI64X2 $0xD8, Z0, Z0, Z0; \
	VMOVDQU Y0, (AX); \
	VEXTRACTI64X4 $1, Z0, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0xD8, Z1, Z1, Z1; \
	VMOVDQU Y1, (AX); \
	VEXTRACTI64X4 $1, Z1, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0xD8, Z2, Z2, Z2; \
	VMOVDQU Y2, (AX); \
	VEXTRACTI64X4 $1, Z2, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0xD8, Z3, Z3, Z3; \
	VMOVDQU Y3, (AX); \
	VEXTRACTI64X4 $1, Z3, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0xD8, Z4, Z4, Z4; \
	VMOVDQU Y4, (AX); \
	VEXTRACTI64X4 $1, Z4, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0xD8, Z5, Z5, Z5; \
	VMOVDQU Y5, (AX); \
	VEXTRACTI64X4 $1, Z5, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0xD8, Z6, Z6, Z6; \
	VMOVDQU Y6, (AX); \
	VEXTRACTI64X4 $1, Z6, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14; \
	VSHUFI64X2 $0xD8, Z7, Z7, Z7; \
	VMOVDQU Y7, (AX); \
	VEXTRACTI64X4 $1, Z7, (R14); \
	ADDQ DX, AX; \
	ADDQ DX, R14

// func transpose16BF16x512(dst *BF16, lddBytes int, src *BF16, ldsBytes int, rowBlocks, colBlocks int)
// dst[c·ldd + r] = src[r·lds + c] for r < 16·rowBlocks, c < 16·colBlocks,
// all in registers (no scratch memory), 2×2 blocks (32×32) per step:
// every 64-byte source line is read once, whole, and every output line
// is written once by one 64-byte store. Large transposes are bound by
// memory traffic, and partial lines cost it twice: read-for-ownership
// merges when a half-written output line is evicted (a power-of-two r
// puts all 16 output rows of a block in one L1 set), or re-reads of
// source lines whose other half was used a column pass earlier.
// Steps go along the source rows (row-pair bands), so the 32 source rows
// stream front to back. A last odd column block or row band goes one
// block (pair) at a time.
TEXT ·transpose16BF16x512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ lddBytes+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ ldsBytes+24(FP), BX
	MOVQ rowBlocks+32(FP), R8
	MOVQ colBlocks+40(FP), R9
	TESTQ R9, R9
	JZ   t5done
	LEAQ (BX)(BX*2), R10 // 3 source rows
	MOVQ BX, R13
	SHLQ $4, R13         // 16 source rows
	MOVQ DX, R15
	SHLQ $4, R15         // 16 output rows
	SHRQ $1, R8          // row-block pairs
	JZ   t5lastband
t5band:
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R9, CX
	SHRQ $1, CX
	JZ   t5bandodd
t5quad:
	MOVQ R11, AX
	T5NETA
	LEAQ (R11)(R13*1), AX
	T5NETB
	MOVQ R12, AX
	T5OUT2
	LEAQ 32(R11), AX
	T5NETA
	LEAQ 32(R11)(R13*1), AX
	T5NETB
	LEAQ (R12)(R15*1), AX
	T5OUT2
	ADDQ $64, R11
	LEAQ (R12)(R15*2), R12
	DECQ CX
	JNZ  t5quad
t5bandodd:
	TESTQ $1, R9
	JZ   t5bandnext
	MOVQ R11, AX
	T5NETA
	LEAQ (R11)(R13*1), AX
	T5NETB
	MOVQ R12, AX
	T5OUT2
t5bandnext:
	LEAQ (SI)(R13*2), SI
	ADDQ $64, DI
	DECQ R8
	JNZ  t5band
t5lastband:
	TESTQ $1, rowBlocks+32(FP)
	JZ   t5done
	MOVQ R9, CX
t5single:
	MOVQ SI, AX
	T5NETA
	MOVQ DI, AX
	T5OUT1
	ADDQ $32, SI
	ADDQ R15, DI
	DECQ CX
	JNZ  t5single
t5done:
	VZEROUPPER
	RET
