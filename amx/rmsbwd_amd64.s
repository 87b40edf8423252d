//go:build amd64 && !purego

#include "textflag.h"

// func rmsNormBwdRows512(dx, dg, x, gain, dy, r *float32, rows, width, group int, acc bool, invGroup float32)
// RMSNormBwdRows for group a multiple of 16: per row and group, pass 1
// accumulates Σ g·d·x (16 lanes, then a fixed-order horizontal sum) and
// dg += d·x·inv; pass 2 writes dx (+)= inv·g·d − x·c, c = inv³·Σ/group.
TEXT ·rmsNormBwdRows512(SB), NOSPLIT, $0-80
	MOVQ dx+0(FP), DI
	MOVQ x+16(FP), BX
	MOVQ dy+32(FP), SI
	MOVQ r+40(FP), R10
	MOVQ rows+48(FP), DX
	MOVQ group+64(FP), R13
	SHLQ $2, R13 // group bytes
	MOVBQZX acc+72(FP), R11
	VBROADCASTSS invGroup+76(FP), Z15
rbrow:
	MOVQ gain+24(FP), R8
	MOVQ dg+8(FP), R9
	MOVQ width+56(FP), R14
	SHLQ $2, R14 // bytes left in the row
rbgroup:
	VBROADCASTSS (R10), Z14 // inv
	VPXORD Z13, Z13, Z13
	XORQ R12, R12
rbp1:
	VMOVUPS (R8)(R12*1), Z0
	VMOVUPS (SI)(R12*1), Z1
	VMOVUPS (BX)(R12*1), Z2
	VMULPS Z1, Z0, Z3
	VFMADD231PS Z2, Z3, Z13
	VMULPS Z2, Z1, Z4
	VMOVUPS (R9)(R12*1), Z5
	VFMADD231PS Z14, Z4, Z5
	VMOVUPS Z5, (R9)(R12*1)
	ADDQ $64, R12
	CMPQ R12, R13
	JLT  rbp1
	// c = Σ·inv³/group, broadcast to Z12
	VEXTRACTF32X8 $1, Z13, Y6
	VADDPS Y6, Y13, Y6
	VEXTRACTF128 $1, Y6, X7
	VADDPS X7, X6, X6
	VMOVHLPS X6, X7, X7
	VADDPS X7, X6, X6
	VPSHUFD $1, X6, X7
	VADDSS X7, X6, X6
	VMULSS X14, X6, X6
	VMULSS X14, X6, X6
	VMULSS X14, X6, X6
	VMULSS X15, X6, X6
	VBROADCASTSS X6, Z12
	XORQ R12, R12
rbp2:
	VMOVUPS (R8)(R12*1), Z0
	VMULPS (SI)(R12*1), Z0, Z0
	VMULPS Z14, Z0, Z0
	VMOVUPS (BX)(R12*1), Z2
	VFNMADD231PS Z12, Z2, Z0
	TESTQ R11, R11
	JZ   rbstore
	VADDPS (DI)(R12*1), Z0, Z0
rbstore:
	VMOVUPS Z0, (DI)(R12*1)
	ADDQ $64, R12
	CMPQ R12, R13
	JLT  rbp2
	ADDQ R13, R8
	ADDQ R13, R9
	ADDQ R13, BX
	ADDQ R13, SI
	ADDQ R13, DI
	ADDQ $4, R10
	SUBQ R13, R14
	JNZ  rbgroup
	DECQ DX
	JNZ  rbrow
	VZEROUPPER
	RET
