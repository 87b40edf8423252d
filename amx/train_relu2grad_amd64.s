//go:build amd64 && !purego

#include "textflag.h"

// Rounding constants of toBF16AVX2 (elementwise_amd64.s).
DATA rgc<>+0(SB)/4, $1
DATA rgc<>+4(SB)/4, $0x7fff
DATA rgc<>+8(SB)/4, $0x7fffffff
DATA rgc<>+12(SB)/4, $0x7f800000
DATA rgc<>+16(SB)/4, $0x40
GLOBL rgc<>(SB), RODATA|NOPTR, $20

// func relu2GradAVX2(dst *BF16, du, act *float32, n int)
// du = du·(2·√act) in place (multiplied in this order, as the generic
// code), dst = bf16(du) rounded to nearest even; n is a multiple of 8.
TEXT ·relu2GradAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ du+8(FP), SI
	MOVQ act+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   rgdone
	VPBROADCASTD rgc<>+0(SB), Y10
	VPBROADCASTD rgc<>+4(SB), Y11
	VPBROADCASTD rgc<>+8(SB), Y12
	VPBROADCASTD rgc<>+12(SB), Y13
	VPBROADCASTD rgc<>+16(SB), Y14
rgloop:
	VSQRTPS   (DX), Y0
	VADDPS    Y0, Y0, Y0         // 2·√act (exact doubling)
	VMULPS    (SI), Y0, Y0
	VMOVUPS   Y0, (SI)
	VPSRLD    $16, Y0, Y1        // h
	VPAND     Y10, Y1, Y2        // h&1
	VPADDD    Y11, Y2, Y2
	VPADDD    Y0, Y2, Y2
	VPSRLD    $16, Y2, Y2        // rounded
	VPAND     Y12, Y0, Y3        // |u|
	VPCMPGTD  Y13, Y3, Y3        // NaN lanes
	VPOR      Y14, Y1, Y1        // h|0x40
	VPBLENDVB Y3, Y1, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPACKUSDW X3, X2, X2
	VMOVDQU   X2, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DX
	ADDQ      $16, DI
	DECQ      CX
	JNZ       rgloop
rgdone:
	VZEROUPPER
	RET
