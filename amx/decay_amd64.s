//go:build amd64 && !purego

#include "textflag.h"
#include "exp512_amd64.h"

DATA dmsign<>+0(SB)/4, $0x80000000
GLOBL dmsign<>(SB), RODATA|NOPTR, $4

// func decayMatrix512(dst, l *float32, n int)
// dst[i·n+j] = exp(l[i] − l[j]) for j ≤ i, 0 for i < j < n, computed as
// exp((−l[j]) − (−l[i])) with EXP16; 16 columns per step, the row's tail
// masked (K1: j < n) and the lanes above the diagonal zeroed (K2: j ≤ i).
TEXT ·decayMatrix512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), BX
	MOVQ l+8(FP), R8
	MOVQ n+16(FP), DX
	VPBROADCASTD dmsign<>(SB), Z19
	EXPCONST
	VPXORD Z20, Z20, Z20
	XORQ R9, R9 // i
dmrow:
	CMPQ R9, DX
	JGE  dmdone
	VBROADCASTSS (R8)(R9*4), Z15
	VPXORD Z19, Z15, Z15 // −l[i]
	XORQ R10, R10        // j0
dmvec:
	CMPQ R10, DX
	JGE  dmnext
	// K1: lanes with j0+k < n
	MOVQ DX, CX
	SUBQ R10, CX
	MOVQ $0xffff, AX
	CMPQ CX, $16
	JGE  dmn
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
dmn:
	KMOVW AX, K1
	// lanes with j0+k ≤ i: i − j0 + 1 of them
	MOVQ R9, CX
	SUBQ R10, CX
	INCQ CX
	CMPQ CX, $0
	JLE  dmzero
	MOVQ $0xffff, AX
	CMPQ CX, $16
	JGE  dmi
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
dmi:
	KMOVW AX, K2
	VMOVUPS.Z (R8)(R10*4), K1, Z0
	VPXORD Z19, Z0, Z0 // −l[j]
	EXP16
	VMOVAPS.Z Z3, K2, Z3
	VMOVUPS Z3, K1, (BX)(R10*4)
	ADDQ $16, R10
	JMP  dmvec
dmzero:
	VMOVUPS Z20, K1, (BX)(R10*4)
	ADDQ $16, R10
	JMP  dmvec
dmnext:
	LEAQ (BX)(DX*4), BX
	INCQ R9
	JMP  dmrow
dmdone:
	VZEROUPPER
	RET
