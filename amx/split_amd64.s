//go:build amd64 && !purego

#include "textflag.h"
#include "bf16round512_amd64.h"

// func splitBF16x512(hi, lo *BF16, x *float32, n int)
// hi[i] = bf16(x[i]), lo[i] = bf16(x[i] − float(hi[i])); the tail masked.
TEXT ·splitBF16x512(SB), NOSPLIT, $0-32
	MOVQ hi+0(FP), DI
	MOVQ lo+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), DX
	BFCONST
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   sptail
sploop:
	VMOVUPS (SI), Z0
	BF16(Z0, Z1)
	VPMOVDW Z1, (DI)
	VPSLLD $16, Z1, Z2
	VSUBPS Z2, Z0, Z0
	BF16(Z0, Z3)
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
	BF16(Z0, Z1)
	VPMOVDW Z1, K1, (DI)
	VPSLLD $16, Z1, Z2
	VSUBPS Z2, Z0, Z0
	BF16(Z0, Z3)
	VPMOVDW Z3, K1, (R8)
spdone:
	VZEROUPPER
	RET
