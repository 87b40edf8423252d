//go:build amd64 && !purego

#include "textflag.h"

// func adamWAVX2(w, gr, m, v *float32, n int, c *AdamWConsts)
// adamWGeneric on 8 lanes, the same operations in the same order (no FMA);
// n is a multiple of 8. AdamWConsts field offsets: GradScale 0, Beta1 4,
// Beta2 8, OneMinusB1 12, OneMinusB2 16, Decay 20, InvC2 24, Eps 28,
// StepSize 32.
TEXT ·adamWAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	SHRQ $3, CX
	JZ   awdone
	VBROADCASTSS 0(AX), Y8   // GradScale
	VBROADCASTSS 4(AX), Y9   // Beta1
	VBROADCASTSS 8(AX), Y10  // Beta2
	VBROADCASTSS 12(AX), Y11 // 1−Beta1
	VBROADCASTSS 16(AX), Y12 // 1−Beta2
	VBROADCASTSS 20(AX), Y13 // Decay
	VBROADCASTSS 24(AX), Y14 // InvC2
	VBROADCASTSS 28(AX), Y15 // Eps
	VBROADCASTSS 32(AX), Y7  // StepSize
awloop:
	VMULPS  (SI), Y8, Y0     // g' = g·GradScale
	VMULPS  (R8), Y9, Y1     // Beta1·m
	VMULPS  Y0, Y11, Y2      // (1−Beta1)·g'
	VADDPS  Y2, Y1, Y1       // m
	VMOVUPS Y1, (R8)
	VMULPS  (R9), Y10, Y3    // Beta2·v
	VMULPS  Y0, Y12, Y4      // (1−Beta2)·g'
	VMULPS  Y0, Y4, Y4       // ·g'
	VADDPS  Y4, Y3, Y3       // v
	VMOVUPS Y3, (R9)
	VMULPS  Y14, Y3, Y6      // v·InvC2
	VSQRTPS Y6, Y6
	VADDPS  Y15, Y6, Y6      // + Eps
	VMULPS  Y1, Y7, Y5       // StepSize·m
	VDIVPS  Y6, Y5, Y5       // / denominator
	VMULPS  (DI), Y13, Y2    // w·Decay
	VSUBPS  Y5, Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	DECQ    CX
	JNZ     awloop
awdone:
	VZEROUPPER
	RET
