//go:build amd64 && !purego

#include "textflag.h"

DATA iota16<>+0(SB)/4, $0
DATA iota16<>+4(SB)/4, $1
DATA iota16<>+8(SB)/4, $2
DATA iota16<>+12(SB)/4, $3
DATA iota16<>+16(SB)/4, $4
DATA iota16<>+20(SB)/4, $5
DATA iota16<>+24(SB)/4, $6
DATA iota16<>+28(SB)/4, $7
DATA iota16<>+32(SB)/4, $8
DATA iota16<>+36(SB)/4, $9
DATA iota16<>+40(SB)/4, $10
DATA iota16<>+44(SB)/4, $11
DATA iota16<>+48(SB)/4, $12
DATA iota16<>+52(SB)/4, $13
DATA iota16<>+56(SB)/4, $14
DATA iota16<>+60(SB)/4, $15
GLOBL iota16<>(SB), RODATA|NOPTR, $64

// func transposePairs512(dst *uint32, src *BF16, ldbBytes, cols, pairs int)
// dst[p·64 + j] = the dword at src + j·ldbBytes + 4p, for j < cols ≤ 64 and
// p < pairs; dst columns cols..(cols+15)&^15 get zeros. One VPGATHERDD
// per 16 columns and K-pair, masked so nothing past column cols is read.
TEXT ·transposePairs512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldbBytes+16(FP), BX
	MOVQ cols+24(FP), R8
	MOVQ pairs+32(FP), R9
	VPBROADCASTD BX, Z2
	VMOVDQU32 iota16<>(SB), Z1
	VPMULLD Z2, Z1, Z1 // byte offsets of 16 rows
	MOVQ BX, R13
	SHLQ $4, R13       // 16 rows of src
group:
	TESTQ R8, R8
	JLE  done
	MOVQ $0xffff, R10
	CMPQ R8, $16
	JGE  fullmask
	MOVQ R8, CX
	MOVQ $1, R10
	SHLQ CX, R10
	DECQ R10
fullmask:
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R9, CX
	TESTQ CX, CX
	JZ   next
pair:
	KMOVW R10, K1
	VPXORD Z0, Z0, Z0
	VPGATHERDD (R11)(Z1*1), K1, Z0
	VMOVDQU32 Z0, (R12)
	ADDQ $4, R11
	ADDQ $256, R12
	DECQ CX
	JNZ  pair
next:
	ADDQ R13, SI
	ADDQ $64, DI
	SUBQ $16, R8
	JMP  group
done:
	VZEROUPPER
	RET

// func interleavePairs512(dst *uint32, src *BF16, ldbBytes, cols, pairs int)
// dst[p·64 + j] = src[2p][j] | src[2p+1][j]<<16 (rows ldbBytes apart) for
// j < cols ≤ 64, p < pairs; columns past cols get zeros. Loads are masked
// to the first cols columns, so nothing past a row's end is read.
TEXT ·interleavePairs512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldbBytes+16(FP), BX
	MOVQ cols+24(FP), CX
	MOVQ pairs+32(FP), R9
	MOVQ $-1, AX
	CMPQ CX, $64
	JGE  ilmask
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
ilmask:
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	SHRQ $16, AX
	KMOVW AX, K3
	SHRQ $16, AX
	KMOVW AX, K4
	TESTQ R9, R9
	JZ   ildone
ilpair:
	LEAQ (SI)(BX*1), R11
	VPMOVZXWD.Z 0(SI), K1, Z0
	VPMOVZXWD.Z 0(R11), K1, Z1
	VPSLLD $16, Z1, Z1
	VPORD Z1, Z0, Z0
	VMOVDQU32 Z0, 0(DI)
	VPMOVZXWD.Z 32(SI), K2, Z0
	VPMOVZXWD.Z 32(R11), K2, Z1
	VPSLLD $16, Z1, Z1
	VPORD Z1, Z0, Z0
	VMOVDQU32 Z0, 64(DI)
	VPMOVZXWD.Z 64(SI), K3, Z0
	VPMOVZXWD.Z 64(R11), K3, Z1
	VPSLLD $16, Z1, Z1
	VPORD Z1, Z0, Z0
	VMOVDQU32 Z0, 128(DI)
	VPMOVZXWD.Z 96(SI), K4, Z0
	VPMOVZXWD.Z 96(R11), K4, Z1
	VPSLLD $16, Z1, Z1
	VPORD Z1, Z0, Z0
	VMOVDQU32 Z0, 192(DI)
	LEAQ (R11)(BX*1), SI
	ADDQ $256, DI
	DECQ R9
	JNZ  ilpair
ildone:
	VZEROUPPER
	RET
