//go:build amd64 && !purego

#include "textflag.h"
#include "exp512_amd64.h"

// AVX-512 softmax pieces: 16 lanes, any n (the last partial vector is
// done with a lane mask, so nothing past x[n-1] is read or written).
// The exp (EXP16) comes from exp512_amd64.h, shared with rows_amd64.s.

DATA ninf<>+0(SB)/4, $0xff800000 // -Inf
GLOBL ninf<>(SB), RODATA|NOPTR, $4

// func max512(x *float32, n int) float32 — n ≥ 1.
TEXT ·max512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), DX
	VPBROADCASTD ninf<>+0(SB), Z0
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

// func expSubSum512(x *float32, n int, m float32) float32
// x[i] = exp(x[i] − m); returns Σ x[i] (16 lane sums, fixed order).
TEXT ·expSubSum512(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), DX
	VBROADCASTSS m+16(FP), Z15
	VPXORD Z14, Z14, Z14
	EXPCONST
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
