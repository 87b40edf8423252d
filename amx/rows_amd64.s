//go:build amd64 && !purego

#include "textflag.h"
#include "exp512_amd64.h"
#include "bf16round512_amd64.h"

// AVX-512 row-batched kernels (rows_amd64.go). The exp (EXP16) comes
// from exp512_amd64.h, shared with softmax_amd64.s; the bf16 rounding
// (BFCONST, BF16) from bf16round512_amd64.h, shared with split_amd64.s.

DATA rowc<>+12(SB)/4, $0x80000000
DATA rowc<>+16(SB)/8, $1.0
DATA rowc<>+24(SB)/4, $2.0
DATA rowc<>+28(SB)/4, $0.07692307692307693 // 1/13
DATA rowc<>+32(SB)/4, $0.09090909090909091 // 1/11
DATA rowc<>+36(SB)/4, $0.1111111111111111  // 1/9
DATA rowc<>+40(SB)/4, $0.14285714285714285 // 1/7
DATA rowc<>+44(SB)/4, $0.2                // 1/5
DATA rowc<>+48(SB)/4, $0.3333333333333333 // 1/3
GLOBL rowc<>(SB), RODATA|NOPTR, $52

// HSUM reduces the 16 lanes of Z0 to X0 (fixed order).
#define HSUM \
	VEXTRACTF32X8 $1, Z0, Y1 \
	VADDPS Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X0, X1, X1 \
	VADDPS X1, X0, X0 \
	VPSHUFD $1, X0, X1 \
	VADDSS X1, X0, X0

// func mulExpDiffBF16x512(dst *BF16, x, l *float32, n int, c float32)
// dst[i] = bf16(x[i]·exp(c − l[i])), computed as exp((−l) − (−c)).
TEXT ·mulExpDiffBF16x512(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ l+16(FP), R8
	MOVQ n+24(FP), DX
	VPBROADCASTD rowc<>+12(SB), Z19 // sign bit
	VBROADCASTSS c+32(FP), Z15
	VPXORD Z19, Z15, Z15
	EXPCONST
	BFCONST
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   medtail
medloop:
	VPXORD (R8), Z19, Z0
	EXP16
	VMULPS (SI), Z3, Z3
	BF16(Z3, Z5)
	VPMOVDW Z5, (DI)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $32, DI
	DECQ BX
	JNZ  medloop
medtail:
	TAILMASK(DX)
	KORTESTW K1, K1
	JZ   meddone
	VMOVUPS.Z (R8), K1, Z0
	VPXORD Z19, Z0, Z0
	EXP16
	VMOVUPS.Z (SI), K1, Z20
	VMULPS Z20, Z3, Z3
	BF16(Z3, Z5)
	VPMOVDW Z5, K1, (DI)
meddone:
	VZEROUPPER
	RET

// func scaleBF16x512(dst *BF16, x *float32, n int, s float32)
// dst[i] = bf16(x[i]·s).
TEXT ·scaleBF16x512(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), DX
	VBROADCASTSS s+24(FP), Z1
	BFCONST
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   sbtail
sbloop:
	VMULPS (SI), Z1, Z3
	BF16(Z3, Z5)
	VPMOVDW Z5, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ BX
	JNZ  sbloop
sbtail:
	TAILMASK(DX)
	VMULPS.Z (SI), Z1, K1, Z3
	BF16(Z3, Z5)
	VPMOVDW Z5, K1, (DI)
	VZEROUPPER
	RET

// func sumSqGroups512(out, x *float32, units, group int)
// group is a multiple of 16. out[u] = Σx² over x[u·group : (u+1)·group],
// in 2×16 lanes (even and odd vectors, an odd count starting with one),
// added and reduced by HSUM: the order rmsInv's callers have always used.
TEXT ·sumSqGroups512(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ units+16(FP), R11
	MOVQ group+24(FP), R13
ssunit:
	VPXORD Z0, Z0, Z0
	VPXORD Z3, Z3, Z3
	MOVQ R13, CX
	SHRQ $4, CX
	TESTQ $1, CX
	JZ   ss2
	VMOVUPS (SI), Z2
	VFMADD231PS Z2, Z2, Z0
	ADDQ $64, SI
	DECQ CX
	JZ   sssum
ss2:
	VMOVUPS (SI), Z2
	VMOVUPS 64(SI), Z1
	VFMADD231PS Z2, Z2, Z0
	VFMADD231PS Z1, Z1, Z3
	ADDQ $128, SI
	SUBQ $2, CX
	JNZ  ss2
sssum:
	VADDPS Z3, Z0, Z0
	HSUM
	VMOVSS X0, (DI)
	ADDQ $4, DI
	DECQ R11
	JNZ  ssunit
	VZEROUPPER
	RET

// func scaleGroups512(dst *float32, dstBF16 *BF16, x, gain, inv *float32, rows, rowLen, group int)
// group is a multiple of 16 dividing rowLen; dst and dstBF16 may be nil.
// y = x·inv[u]·g per group u (in row order), the gain restarting each row.
TEXT ·scaleGroups512(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ dstBF16+8(FP), R9
	MOVQ x+16(FP), SI
	MOVQ gain+24(FP), R10
	MOVQ inv+32(FP), R8
	MOVQ rows+40(FP), R11
	MOVQ rowLen+48(FP), R12
	MOVQ group+56(FP), R13
	BFCONST
sgrow:
	MOVQ R10, R14
	MOVQ R12, R15
sggroup:
	VBROADCASTSS (R8), Z1
	ADDQ $4, R8
	MOVQ R13, CX
	SHRQ $4, CX
sgscale:
	VMULPS (SI), Z1, Z2
	VMULPS (R14), Z2, Z2
	TESTQ DI, DI
	JZ   sgnof
	VMOVUPS Z2, (DI)
	ADDQ $64, DI
sgnof:
	TESTQ R9, R9
	JZ   sgnob
	BF16(Z2, Z5)
	VPMOVDW Z5, (R9)
	ADDQ $32, R9
sgnob:
	ADDQ $64, SI
	ADDQ $64, R14
	DECQ CX
	JNZ  sgscale
	SUBQ R13, R15
	JNZ  sggroup
	DECQ R11
	JNZ  sgrow
	VZEROUPPER
	RET

// func ropeHeads512(x *float32, dst *BF16, heads, half int, cos, sin *float32, inPlace int)
// half is a multiple of 16. Per head, (lo, hi) ← (lo·c − hi·s, hi·c + lo·s)
// (products rounded, then the sum, as ropeGeneric), stored in place if
// inPlace != 0, and bf16 copies to dst if non-nil.
TEXT ·ropeHeads512(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ heads+16(FP), R11
	MOVQ half+24(FP), R12
	MOVQ cos+32(FP), R8
	MOVQ sin+40(FP), R9
	MOVQ inPlace+48(FP), R10
	BFCONST
	MOVQ R12, R13
	SHLQ $2, R13 // half in bytes (fp32)
	MOVQ R12, R14
	SHLQ $1, R14 // half in bytes (bf16)
rphead:
	MOVQ R12, CX
	SHRQ $4, CX
	XORQ AX, AX // fp32 byte offset within the half
	XORQ BX, BX // bf16 byte offset
rpvec:
	LEAQ (SI)(AX*1), DX
	VMOVUPS (DX), Z0          // a = lo
	VMOVUPS (DX)(R13*1), Z1   // b = hi
	VMOVUPS (R8)(AX*1), Z2    // c
	VMOVUPS (R9)(AX*1), Z3    // s
	VMULPS Z2, Z0, Z6         // a·c
	VMULPS Z3, Z1, Z7         // b·s
	VSUBPS Z7, Z6, Z6         // lo'
	VMULPS Z2, Z1, Z8         // b·c
	VMULPS Z3, Z0, Z9         // a·s
	VADDPS Z9, Z8, Z8         // hi'
	TESTQ R10, R10
	JZ   rpnof
	VMOVUPS Z6, (DX)
	VMOVUPS Z8, (DX)(R13*1)
rpnof:
	TESTQ DI, DI
	JZ   rpnob
	LEAQ (DI)(BX*1), R15
	BF16(Z6, Z5)
	VPMOVDW Z5, (R15)
	BF16(Z8, Z5)
	VPMOVDW Z5, (R15)(R14*1)
rpnob:
	ADDQ $64, AX
	ADDQ $32, BX
	DECQ CX
	JNZ  rpvec
	LEAQ (SI)(R13*2), SI
	TESTQ DI, DI
	JZ   rpnext
	LEAQ (DI)(R14*2), DI
rpnext:
	DECQ R11
	JNZ  rphead
	VZEROUPPER
	RET

// SOFTPLUS16 computes Z5 = log(1 + e^Z24) = max(x, 0) + log1p(e^−|x|),
// log1p(e) = 2·atanh(s) = 2s(1 + s²/3 + … + s¹²/13) with s = e/(2+e) ≤ 1/3
// (series error < 2e-8 relative; no cancellation for tiny e). Needs
// EXPCONST, Z15 = 0, Z19 = sign bit, Z21 = 2, Z22 = 0; clobbers Z0..Z3.
#define SOFTPLUS16 \
	VPORD Z19, Z24, Z0 \
	EXP16 \
	VADDPS Z21, Z3, Z1 \
	VDIVPS Z1, Z3, Z1 \
	VMULPS Z1, Z1, Z2 \
	VBROADCASTSS rowc<>+28(SB), Z5 \
	VFMADD213PS.BCST rowc<>+32(SB), Z2, Z5 \
	VFMADD213PS.BCST rowc<>+36(SB), Z2, Z5 \
	VFMADD213PS.BCST rowc<>+40(SB), Z2, Z5 \
	VFMADD213PS.BCST rowc<>+44(SB), Z2, Z5 \
	VFMADD213PS.BCST rowc<>+48(SB), Z2, Z5 \
	VFMADD213PS Z7, Z2, Z5 \
	VMULPS Z5, Z1, Z5 \
	VADDPS Z5, Z5, Z5 \
	VMAXPS Z22, Z24, Z0 \
	VADDPS Z0, Z5, Z5

// func softplus512(dst, x *float32, n int)
TEXT ·softplus512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), DX
	EXPCONST
	VPXORD Z15, Z15, Z15
	VPXORD Z22, Z22, Z22
	VPBROADCASTD rowc<>+12(SB), Z19
	VBROADCASTSS rowc<>+24(SB), Z21
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   sptail
sploop:
	VMOVUPS (SI), Z24
	SOFTPLUS16
	VMOVUPS Z5, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ BX
	JNZ  sploop
sptail:
	TAILMASK(DX)
	KORTESTW K1, K1
	JZ   spdone
	VMOVUPS.Z (SI), K1, Z24
	SOFTPLUS16
	VMOVUPS Z5, K1, (DI)
spdone:
	VZEROUPPER
	RET

// LANEMASK sets kreg to the low min(max(r, 0), 16) lanes (r in a
// register; clobbers AX, CX).
#define LANEMASK(r, kreg) \
	MOVQ r, CX \
	CMPQ CX, $16 \
	JLE  2(PC) \
	MOVQ $16, CX \
	XORQ AX, AX \
	TESTQ CX, CX \
	JLE  4(PC) \
	MOVQ $1, AX \
	SHLQ CX, AX \
	DECQ AX \
	KMOVW AX, kreg

// func decayMaskBF16x512(dst *BF16, x, l *float32, n int)
// Row i < n: dst[i·n+j] = bf16(x[i·n+j]·exp(l[i] − l[j])) for j ≤ i, 0 for
// i < j < n, computed as exp((−l[j]) − (−l[i])) like mulExpDiffBF16x512.
TEXT ·decayMaskBF16x512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ l+16(FP), R8
	MOVQ n+24(FP), DX
	VPBROADCASTD rowc<>+12(SB), Z19
	EXPCONST
	BFCONST
	XORQ R9, R9 // i
dmrow:
	CMPQ R9, DX
	JGE  dmdone
	VBROADCASTSS (R8)(R9*4), Z15
	VPXORD Z19, Z15, Z15
	XORQ R10, R10 // j0 = 16v
dmvec:
	CMPQ R10, DX
	JGE  dmnext
	MOVQ R9, R11
	INCQ R11
	SUBQ R10, R11 // valid lanes: i+1−j0
	MOVQ DX, R12
	SUBQ R10, R12 // in-row lanes: n−j0
	LANEMASK(R12, K3)
	TESTQ R11, R11
	JLE  dmzero
	LANEMASK(R11, K1)
	VMOVUPS.Z (R8)(R10*4), K1, Z0
	VPXORD Z19, Z0, Z0
	EXP16
	VMOVUPS.Z (SI)(R10*4), K1, Z20
	VMULPS Z20, Z3, Z3
	BF16(Z3, Z5)
	VMOVDQA32.Z Z5, K1, Z5
	VPMOVDW Z5, K3, (DI)(R10*2)
	ADDQ $16, R10
	JMP  dmvec
dmzero:
	VPXORD Z5, Z5, Z5
	VPMOVDW Z5, K3, (DI)(R10*2)
	ADDQ $16, R10
	JMP  dmvec
dmnext:
	LEAQ (SI)(DX*4), SI
	LEAQ (DI)(DX*2), DI
	INCQ R9
	JMP  dmrow
dmdone:
	VZEROUPPER
	RET

// func scaleRowsBF16x512(dst *BF16, lddBytes int, x *float32, ldxBytes int, s *float32, rows, cols int)
// dst row i = bf16(x row i · s[i]), cols ≥ 1 elements per row.
TEXT ·scaleRowsBF16x512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ lddBytes+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ ldxBytes+24(FP), R9
	MOVQ s+32(FP), R10
	MOVQ rows+40(FP), R11
	MOVQ cols+48(FP), DX
	BFCONST
	TAILMASK(DX)
	TESTQ R11, R11
	JZ   srdone
srrow:
	VBROADCASTSS (R10), Z1
	MOVQ SI, R12
	MOVQ DI, R13
	MOVQ DX, BX
	SHRQ $4, BX
	JZ   srtail
srvec:
	VMULPS (R12), Z1, Z3
	BF16(Z3, Z5)
	VPMOVDW Z5, (R13)
	ADDQ $64, R12
	ADDQ $32, R13
	DECQ BX
	JNZ  srvec
srtail:
	KORTESTW K1, K1
	JZ   srnext
	VMULPS.Z (R12), Z1, K1, Z3
	BF16(Z3, Z5)
	VPMOVDW Z5, K1, (R13)
srnext:
	ADDQ R9, SI
	ADDQ R8, DI
	ADDQ $4, R10
	DECQ R11
	JNZ  srrow
srdone:
	VZEROUPPER
	RET
