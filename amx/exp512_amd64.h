// AVX-512 exp shared by softmax_amd64.s and rows_amd64.s (included by
// both: Go assembler macros and file-local data are per file). exp(x) as
// 2^n·p(r) with a degree-5 polynomial, the algorithm and constants of
// expSubSumAVX2 (elementwise_amd64.s).

DATA expc<>+0(SB)/4, $88.3762626647949
DATA expc<>+4(SB)/4, $-88.3762626647949
DATA expc<>+8(SB)/4, $1.44269504088896341
DATA expc<>+12(SB)/4, $0.5
DATA expc<>+16(SB)/4, $0.693359375
DATA expc<>+20(SB)/4, $-2.12194440e-4
DATA expc<>+24(SB)/4, $1.9875691500e-4
DATA expc<>+28(SB)/4, $1.3981999507e-3
DATA expc<>+32(SB)/4, $8.3334519073e-3
DATA expc<>+36(SB)/4, $4.1665795894e-2
DATA expc<>+40(SB)/4, $1.6666665459e-1
DATA expc<>+44(SB)/4, $5.0000001201e-1
DATA expc<>+48(SB)/4, $1.0
DATA expc<>+52(SB)/4, $127
GLOBL expc<>(SB), RODATA|NOPTR, $56

// TAILMASK sets K1 to the low n&15 lanes.
#define TAILMASK(n) \
	MOVQ n, AX \
	ANDQ $15, AX \
	MOVQ AX, CX \
	MOVQ $1, AX \
	SHLQ CX, AX \
	DECQ AX \
	KMOVW AX, K1

// EXPCONST loads EXP16's constants into Z6..Z13.
#define EXPCONST \
	VBROADCASTSS expc<>+0(SB), Z13 \
	VBROADCASTSS expc<>+4(SB), Z12 \
	VBROADCASTSS expc<>+8(SB), Z11 \
	VBROADCASTSS expc<>+12(SB), Z10 \
	VBROADCASTSS expc<>+16(SB), Z9 \
	VBROADCASTSS expc<>+20(SB), Z8 \
	VBROADCASTSS expc<>+48(SB), Z7 \
	VPBROADCASTD expc<>+52(SB), Z6

// EXP16 computes Z3 = exp(Z0 − Z15) (clobbers Z0..Z2).
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
	VBROADCASTSS expc<>+24(SB), Z3 \
	VFMADD213PS.BCST expc<>+28(SB), Z0, Z3 \
	VFMADD213PS.BCST expc<>+32(SB), Z0, Z3 \
	VFMADD213PS.BCST expc<>+36(SB), Z0, Z3 \
	VFMADD213PS.BCST expc<>+40(SB), Z0, Z3 \
	VFMADD213PS.BCST expc<>+44(SB), Z0, Z3 \
	VFMADD213PS Z0, Z2, Z3 \
	VADDPS Z7, Z3, Z3 \
	VCVTPS2DQ Z1, Z1 \
	VPADDD Z6, Z1, Z1 \
	VPSLLD $23, Z1, Z1 \
	VMULPS Z1, Z3, Z3
