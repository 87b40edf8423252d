//go:build amd64 && !purego

#include "textflag.h"

// Constants of quantRows512: the bf16 magnitude mask (two words), the
// bytes' top bits, and 127.0 as fp32.
DATA q8c<>+0(SB)/4, $0x7fff7fff
DATA q8c<>+4(SB)/4, $0x80808080
DATA q8c<>+8(SB)/4, $0x42fe0000
GLOBL q8c<>(SB), RODATA|NOPTR, $12

// func quantRows512(m int, a *BF16, lda, k int, dst *uint8, ldd int, scales *float32)
TEXT ·quantRows512(SB), NOSPLIT, $0-56
	MOVQ m+0(FP), R8
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R9
	SHLQ $1, R9
	MOVQ k+24(FP), R10
	MOVQ dst+32(FP), DI
	MOVQ ldd+40(FP), R11
	MOVQ scales+48(FP), R12
	VPBROADCASTD q8c<>+0(SB), Z31
	VPBROADCASTD q8c<>+4(SB), Z28
	VMOVSS q8c<>+8(SB), X3
	// K1: the last k%32 words of a row (pass 1); K2: the last k%16 (pass 2).
	MOVQ R10, CX
	ANDQ $31, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVD AX, K1
	MOVQ R10, CX
	ANDQ $15, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K2
	TESTQ R8, R8
	JZ done

row:
	// Pass 1: the largest magnitude, as 16-bit patterns.
	VPXORD Z0, Z0, Z0
	MOVQ SI, BX
	MOVQ R10, CX
	SHRQ $5, CX
	JZ p1tail

p1loop:
	VPANDD (BX), Z31, Z1
	VPMAXUW Z1, Z0, Z0
	ADDQ $64, BX
	DECQ CX
	JNZ p1loop

p1tail:
	TESTQ $31, R10
	JZ p1done
	VMOVDQU16.Z (BX), K1, Z1
	VPANDD Z31, Z1, Z1
	VPMAXUW Z1, Z0, Z0

p1done:
	VEXTRACTI64X4 $1, Z0, Y1
	VPMAXUW Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUW X1, X0, X0
	VPSRLDQ $8, X0, X1
	VPMAXUW X1, X0, X0
	VPSRLDQ $4, X0, X1
	VPMAXUW X1, X0, X0
	VPSRLDQ $2, X0, X1
	VPMAXUW X1, X0, X0
	VMOVD X0, AX
	ANDL $0xffff, AX
	SHLL $16, AX
	VMOVD AX, X2
	VDIVSS X3, X2, X4 // scale = max/127
	VMOVSS X4, (R12)
	VXORPS X5, X5, X5
	TESTL AX, AX
	JZ scaled
	VDIVSS X2, X3, X5 // 1/scale as 127/max (0 for an all-zero row)

scaled:
	VBROADCASTSS X5, Z5

	// Pass 2: RNE(a·127/max), +128, as bytes. |a·(127/max)| ≤ 127·(1+2⁻²⁴)²
	// before rounding, so the result is within ±127 without a clamp, its
	// low byte is the int8, and +128 is flipping that byte's top bit.
	MOVQ SI, BX
	MOVQ DI, DX
	MOVQ R10, CX
	SHRQ $4, CX
	JZ p2tail

p2loop:
	VPMOVZXWD (BX), Z1
	VPSLLD $16, Z1, Z1
	VMULPS Z5, Z1, Z1
	VCVTPS2DQ Z1, Z1
	VPMOVDB Z1, X1
	VPXORD X28, X1, X1
	VMOVDQU X1, (DX)
	ADDQ $32, BX
	ADDQ $16, DX
	DECQ CX
	JNZ p2loop

p2tail:
	TESTQ $15, R10
	JZ p2done
	VMOVDQU16.Z (BX), K2, Y1
	VPMOVZXWD Y1, Z1
	VPSLLD $16, Z1, Z1
	VMULPS Z5, Z1, Z1
	VCVTPS2DQ Z1, Z1
	VPMOVDB Z1, X1
	VPXORD X28, X1, X1
	VMOVDQU8 X1, K2, (DX)

p2done:
	ADDQ R9, SI
	ADDQ R11, DI
	ADDQ $4, R12
	DECQ R8
	JNZ row

done:
	VZEROUPPER
	RET
