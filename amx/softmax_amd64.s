//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 softmax pieces: 16 lanes, any n (the last partial vector is
// done with a lane mask, so nothing past x[n-1] is read or written).
// Same exp algorithm and constants as expSubSumAVX2 (elementwise_amd64.s).

DATA exp5c<>+0(SB)/4, $88.3762626647949
DATA exp5c<>+4(SB)/4, $-88.3762626647949
DATA exp5c<>+8(SB)/4, $1.44269504088896341
DATA exp5c<>+12(SB)/4, $0.5
DATA exp5c<>+16(SB)/4, $0.693359375
DATA exp5c<>+20(SB)/4, $-2.12194440e-4
DATA exp5c<>+24(SB)/4, $1.9875691500e-4
DATA exp5c<>+28(SB)/4, $1.3981999507e-3
DATA exp5c<>+32(SB)/4, $8.3334519073e-3
DATA exp5c<>+36(SB)/4, $4.1665795894e-2
DATA exp5c<>+40(SB)/4, $1.6666665459e-1
DATA exp5c<>+44(SB)/4, $5.0000001201e-1
DATA exp5c<>+48(SB)/4, $1.0
DATA exp5c<>+52(SB)/4, $127
DATA exp5c<>+56(SB)/4, $0xff800000 // -Inf
GLOBL exp5c<>(SB), RODATA|NOPTR, $60

// tailMask sets K1 to the low n&15 lanes.
#define TAILMASK(n) \
	MOVQ n, AX \
	ANDQ $15, AX \
	MOVQ AX, CX \
	MOVQ $1, AX \
	SHLQ CX, AX \
	DECQ AX \
	KMOVW AX, K1

// func max512(x *float32, n int) float32 — n ≥ 1.
TEXT ·max512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), DX
	VPBROADCASTD exp5c<>+56(SB), Z0
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   m5tail
m5loop:
	VMAXPS (SI), Z0, Z0
	ADDQ $64, SI
	DECQ BX
	JNZ  m5loop
m5tail:
	TAILMASK(DX)
	VMAXPS (SI), Z0, K1, Z0
	VEXTRACTF32X8 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VMAXPS X1, X0, X0
	VPSHUFD $1, X0, X1
	VMAXSS X1, X0, X0
	MOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// EXP16 computes Z3 = exp(Z0 − Z15) (constants in Z6..Z13).
#define EXP16 \
	VSUBPS  Z15, Z0, Z0 \
	VMINPS  Z13, Z0, Z0 \
	VMAXPS  Z12, Z0, Z0 \
	VMOVAPS Z10, Z1 \
	VFMADD231PS Z11, Z0, Z1 \
	VRNDSCALEPS $1, Z1, Z1 \
	VFNMADD231PS Z9, Z1, Z0 \
	VFNMADD231PS Z8, Z1, Z0 \
	VMULPS Z0, Z0, Z2 \
	VBROADCASTSS exp5c<>+24(SB), Z3 \
	VFMADD213PS.BCST exp5c<>+28(SB), Z0, Z3 \
	VFMADD213PS.BCST exp5c<>+32(SB), Z0, Z3 \
	VFMADD213PS.BCST exp5c<>+36(SB), Z0, Z3 \
	VFMADD213PS.BCST exp5c<>+40(SB), Z0, Z3 \
	VFMADD213PS.BCST exp5c<>+44(SB), Z0, Z3 \
	VFMADD213PS Z0, Z2, Z3 \
	VADDPS Z7, Z3, Z3 \
	VCVTPS2DQ Z1, Z1 \
	VPADDD Z6, Z1, Z1 \
	VPSLLD $23, Z1, Z1 \
	VMULPS Z1, Z3, Z3

// func expSubSum512(x *float32, n int, m float32) float32
// x[i] = exp(x[i] − m); returns Σ x[i] (16 lane sums, fixed order).
TEXT ·expSubSum512(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), DX
	VBROADCASTSS m+16(FP), Z15
	VPXORD Z14, Z14, Z14
	VBROADCASTSS exp5c<>+0(SB), Z13
	VBROADCASTSS exp5c<>+4(SB), Z12
	VBROADCASTSS exp5c<>+8(SB), Z11
	VBROADCASTSS exp5c<>+12(SB), Z10
	VBROADCASTSS exp5c<>+16(SB), Z9
	VBROADCASTSS exp5c<>+20(SB), Z8
	VBROADCASTSS exp5c<>+48(SB), Z7
	VPBROADCASTD exp5c<>+52(SB), Z6
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   e5tail
e5loop:
	VMOVUPS (SI), Z0
	EXP16
	VMOVUPS Z3, (SI)
	VADDPS Z3, Z14, Z14
	ADDQ $64, SI
	DECQ BX
	JNZ  e5loop
e5tail:
	TAILMASK(DX)
	VMOVUPS.Z (SI), K1, Z0
	EXP16
	VMOVUPS Z3, K1, (SI)
	VADDPS Z3, Z14, K1, Z14
	VEXTRACTF32X8 $1, Z14, Y1
	VADDPS Y1, Y14, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VPSHUFD $1, X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func scale512(x *float32, n int, s float32)
TEXT ·scale512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), DX
	VBROADCASTSS s+16(FP), Z1
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   s5tail
s5loop:
	VMULPS (SI), Z1, Z0
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	DECQ BX
	JNZ  s5loop
s5tail:
	TAILMASK(DX)
	VMULPS.Z (SI), Z1, K1, Z0
	VMOVUPS Z0, K1, (SI)
	VZEROUPPER
	RET
