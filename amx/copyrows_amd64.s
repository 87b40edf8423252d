//go:build amd64 && !purego

#include "textflag.h"

// func copyRows512(dst *float32, lddBytes uintptr, src *float32, ldsBytes uintptr, rows, cols int)
// Row by row: whole 16-float vectors, then the row's tail under a mask
// (K1), so nothing past a row's cols is read or written.
TEXT ·copyRows512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ lddBytes+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ ldsBytes+24(FP), R9
	MOVQ rows+32(FP), DX
	MOVQ cols+40(FP), BX
	MOVQ BX, CX
	ANDQ $15, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	SHRQ $4, BX // whole vectors per row
crrow:
	XORQ R10, R10
	MOVQ BX, R11
	TESTQ R11, R11
	JZ   crtail
crvec:
	VMOVUPS (SI)(R10*1), Z0
	VMOVUPS Z0, (DI)(R10*1)
	ADDQ $64, R10
	DECQ R11
	JNZ  crvec
crtail:
	KORTESTW K1, K1
	JZ   crnext
	VMOVUPS.Z (SI)(R10*1), K1, Z0
	VMOVUPS Z0, K1, (DI)(R10*1)
crnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ DX
	JNZ  crrow
	VZEROUPPER
	RET

// func addRows512(dst *float32, lddBytes uintptr, src *float32, ldsBytes uintptr, rows, cols int)
// copyRows512 with dst += src.
TEXT ·addRows512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ lddBytes+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ ldsBytes+24(FP), R9
	MOVQ rows+32(FP), DX
	MOVQ cols+40(FP), BX
	MOVQ BX, CX
	ANDQ $15, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	SHRQ $4, BX
arrow:
	XORQ R10, R10
	MOVQ BX, R11
	TESTQ R11, R11
	JZ   artail
arvec:
	VMOVUPS (DI)(R10*1), Z0
	VADDPS (SI)(R10*1), Z0, Z0
	VMOVUPS Z0, (DI)(R10*1)
	ADDQ $64, R10
	DECQ R11
	JNZ  arvec
artail:
	KORTESTW K1, K1
	JZ   arnext
	VMOVUPS.Z (SI)(R10*1), K1, Z1
	VMOVUPS.Z (DI)(R10*1), K1, Z0
	VADDPS Z1, Z0, Z0
	VMOVUPS Z0, K1, (DI)(R10*1)
arnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ DX
	JNZ  arrow
	VZEROUPPER
	RET
