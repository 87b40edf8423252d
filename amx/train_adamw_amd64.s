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

// AWSTEP16(k) is one adamWGeneric step on 16 lanes under mask k (K0: all
// lanes): loads zero the lanes outside k, stores leave them alone. Same
// operations, same order and roundings as adamWAVX2.
#define AWSTEP16(k) \
	VMULPS.Z  (SI), Z8, k, Z0; \
	VMULPS.Z  (R8), Z9, k, Z1; \
	VMULPS    Z0, Z11, Z2; \
	VADDPS    Z2, Z1, Z1; \
	VMOVUPS   Z1, k, (R8); \
	VMULPS.Z  (R9), Z10, k, Z3; \
	VMULPS    Z0, Z12, Z4; \
	VMULPS    Z0, Z4, Z4; \
	VADDPS    Z4, Z3, Z3; \
	VMOVUPS   Z3, k, (R9); \
	VMULPS    Z14, Z3, Z6; \
	VSQRTPS   Z6, Z6; \
	VADDPS    Z15, Z6, Z6; \
	VMULPS    Z1, Z7, Z5; \
	VDIVPS    Z6, Z5, Z5; \
	VMULPS.Z  (DI), Z13, k, Z2; \
	VSUBPS    Z5, Z2, Z2; \
	VMOVUPS   Z2, k, (DI)

// func adamW512(w, gr, m, v *float32, n int, c *AdamWConsts)
// adamWAVX2 on 16 lanes, any n ≥ 0: the last partial vector is masked,
// so nothing outside the n elements is read or written.
TEXT ·adamW512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), DX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Z8   // GradScale
	VBROADCASTSS 4(AX), Z9   // Beta1
	VBROADCASTSS 8(AX), Z10  // Beta2
	VBROADCASTSS 12(AX), Z11 // 1−Beta1
	VBROADCASTSS 16(AX), Z12 // 1−Beta2
	VBROADCASTSS 20(AX), Z13 // Decay
	VBROADCASTSS 24(AX), Z14 // InvC2
	VBROADCASTSS 28(AX), Z15 // Eps
	VBROADCASTSS 32(AX), Z7  // StepSize
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   aw5tail
	MOVQ $-1, AX
	KMOVW AX, K1 // all lanes: the loop shares the masked macro
aw5loop:
	AWSTEP16(K1)
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, R9
	DECQ BX
	JNZ  aw5loop
aw5tail:
	ANDQ $15, DX
	JZ   aw5done
	MOVQ DX, CX
	MOVQ $-1, AX
	SHLQ CX, AX
	NOTQ AX // low n&15 lanes
	KMOVW AX, K1
	AWSTEP16(K1)
aw5done:
	VZEROUPPER
	RET
