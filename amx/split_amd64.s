//go:build amd64 && !purego

#include "textflag.h"

DATA splc<>+0(SB)/4, $0x00007fff
DATA splc<>+4(SB)/4, $0x00000001
DATA splc<>+8(SB)/4, $0x00000040
GLOBL splc<>(SB), RODATA|NOPTR, $12

// RNE16 rounds the 16 floats of src to bf16 in the low halves of dst's
// dwords, as FromFloat32 does (NaNs stay quiet NaNs); clobbers Z4, K2.
#define RNE16(src, dst) \
	VPSRLD $16, src, Z4 \
	VPANDD Z17, Z4, dst \
	VPADDD Z16, dst, dst \
	VPADDD src, dst, dst \
	VPSRLD $16, dst, dst \
	VCMPPS $3, src, src, K2 \
	VPORD Z18, Z4, K2, dst

// func splitBF16x512(hi, lo *BF16, x *float32, n int)
// hi[i] = bf16(x[i]), lo[i] = bf16(x[i] − float(hi[i])); the tail masked.
TEXT ·splitBF16x512(SB), NOSPLIT, $0-32
	MOVQ hi+0(FP), DI
	MOVQ lo+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), DX
	VPBROADCASTD splc<>+0(SB), Z16
	VPBROADCASTD splc<>+4(SB), Z17
	VPBROADCASTD splc<>+8(SB), Z18
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   sptail
sploop:
	VMOVUPS (SI), Z0
	RNE16(Z0, Z1)
	VPMOVDW Z1, (DI)
	VPSLLD $16, Z1, Z2
	VSUBPS Z2, Z0, Z0
	RNE16(Z0, Z3)
	VPMOVDW Z3, (R8)
	ADDQ $64, SI
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ BX
	JNZ  sploop
sptail:
	MOVQ DX, CX
	ANDQ $15, CX
	JZ   spdone
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z0
	RNE16(Z0, Z1)
	VPMOVDW Z1, K1, (DI)
	VPSLLD $16, Z1, Z2
	VSUBPS Z2, Z0, Z0
	RNE16(Z0, Z3)
	VPMOVDW Z3, K1, (R8)
spdone:
	VZEROUPPER
	RET
