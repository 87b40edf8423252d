//go:build amd64 && !purego

#include "textflag.h"

// AVX2 elementwise kernels. Each handles n rounded down to a multiple of
// 8 (or 32 for the reductions); the Go wrappers in elementwise_amd64.go do
// the tails with the generic code.

DATA ewc<>+0(SB)/4, $1
DATA ewc<>+4(SB)/4, $0x7fff
DATA ewc<>+8(SB)/4, $0x7fffffff
DATA ewc<>+12(SB)/4, $0x7f800000
DATA ewc<>+16(SB)/4, $0x40
GLOBL ewc<>(SB), RODATA|NOPTR, $20

// func toFloat32AVX2(dst *float32, src *BF16, n int)
TEXT ·toFloat32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   f32done
f32loop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       f32loop
f32done:
	VZEROUPPER
	RET

// func toBF16AVX2(dst *BF16, src *float32, n int)
// Round to nearest even: (u + 0x7fff + ((u>>16)&1)) >> 16; NaN → (u>>16)|0x40.
TEXT ·toBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   bfdone
	VPBROADCASTD ewc<>+0(SB), Y10
	VPBROADCASTD ewc<>+4(SB), Y11
	VPBROADCASTD ewc<>+8(SB), Y12
	VPBROADCASTD ewc<>+12(SB), Y13
	VPBROADCASTD ewc<>+16(SB), Y14
bfloop:
	VMOVDQU   (SI), Y0
	VPSRLD    $16, Y0, Y1        // h
	VPAND     Y10, Y1, Y2        // h&1
	VPADDD    Y11, Y2, Y2
	VPADDD    Y0, Y2, Y2
	VPSRLD    $16, Y2, Y2        // rounded
	VPAND     Y12, Y0, Y3        // |u|
	VPCMPGTD  Y13, Y3, Y3        // NaN lanes (|u| > 0x7f800000, signed compare is fine)
	VPOR      Y14, Y1, Y1        // h|0x40
	VPBLENDVB Y3, Y1, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPACKUSDW X3, X2, X2
	VMOVDQU   X2, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       bfloop
bfdone:
	VZEROUPPER
	RET

// func dotAVX2(a, b *float32, n int) float32
// Four 8-lane partial sums over blocks of 32, combined in a fixed order.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ $5, CX
	JZ   dotsum
dotloop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  dotloop
dotsum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VPSHUFD $1, X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func scaleMulAVX2(dst *float32, dstBF16 *BF16, x, gain *float32, s float32, n int)
// y = x·s·g (in that order, like the generic RMSNorm), stored to dst and/or
// rounded to dstBF16 (either may be nil).
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ dstBF16+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ gain+24(FP), DX
	VBROADCASTSS s+32(FP), Y9
	MOVQ n+40(FP), CX
	SHRQ $3, CX
	JZ   smdone
	VPBROADCASTD ewc<>+0(SB), Y10
	VPBROADCASTD ewc<>+4(SB), Y11
	VPBROADCASTD ewc<>+8(SB), Y12
	VPBROADCASTD ewc<>+12(SB), Y13
	VPBROADCASTD ewc<>+16(SB), Y14
smloop:
	VMULPS (SI), Y9, Y0
	VMULPS (DX), Y0, Y0
	TESTQ DI, DI
	JZ    smnof32
	VMOVUPS Y0, (DI)
	ADDQ  $32, DI
smnof32:
	TESTQ R8, R8
	JZ    smnobf
	VPSRLD    $16, Y0, Y1
	VPAND     Y10, Y1, Y2
	VPADDD    Y11, Y2, Y2
	VPADDD    Y0, Y2, Y2
	VPSRLD    $16, Y2, Y2
	VPAND     Y12, Y0, Y3
	VPCMPGTD  Y13, Y3, Y3
	VPOR      Y14, Y1, Y1
	VPBLENDVB Y3, Y1, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPACKUSDW X3, X2, X2
	VMOVDQU   X2, (R8)
	ADDQ      $16, R8
smnobf:
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ  smloop
smdone:
	VZEROUPPER
	RET

// func relu2AVX2(x *float32, n int)
TEXT ·relu2AVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ   rdone
	VXORPS Y1, Y1, Y1
rloop:
	VMOVUPS (DI), Y0
	VMAXPS  Y0, Y1, Y0 // max(0, v), v second: NaN stays NaN
	VMULPS  Y0, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ  rloop
rdone:
	VZEROUPPER
	RET

// func addAVX2(dst, x *float32, n int)
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   adone
aloop:
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  aloop
adone:
	VZEROUPPER
	RET

// func axpyAVX2(alpha float32, x, y *float32, n int)
// y += alpha·x with a separate multiply and add, like the generic code.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Y2
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   axdone
axloop:
	VMULPS  (SI), Y2, Y0
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  axloop
axdone:
	VZEROUPPER
	RET

// func ropeAVX2(lo, hi, cos, sin *float32, n int)
// (lo, hi) ← (lo·c − hi·s, hi·c + lo·s), products rounded separately.
TEXT ·ropeAVX2(SB), NOSPLIT, $0-40
	MOVQ lo+0(FP), DI
	MOVQ hi+8(FP), SI
	MOVQ cos+16(FP), R8
	MOVQ sin+24(FP), R9
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   ropedone
ropeloop:
	VMOVUPS (DI), Y0 // a
	VMOVUPS (SI), Y1 // b
	VMOVUPS (R8), Y2 // c
	VMOVUPS (R9), Y3 // s
	VMULPS Y2, Y0, Y4
	VMULPS Y3, Y1, Y5
	VSUBPS Y5, Y4, Y4 // a·c − b·s
	VMULPS Y2, Y1, Y6
	VMULPS Y3, Y0, Y7
	VADDPS Y7, Y6, Y6 // b·c + a·s
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, (SI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  ropeloop
ropedone:
	VZEROUPPER
	RET

// Cephes-style expf constants.
DATA expc<>+0(SB)/4, $88.3762626647949
DATA expc<>+4(SB)/4, $-88.3762626647949
DATA expc<>+8(SB)/4, $1.44269504088896341 // log2(e)
DATA expc<>+12(SB)/4, $0.5
DATA expc<>+16(SB)/4, $0.693359375        // ln2 high part
DATA expc<>+20(SB)/4, $-2.12194440e-4     // ln2 low part (subtracted)
DATA expc<>+24(SB)/4, $1.9875691500e-4
DATA expc<>+28(SB)/4, $1.3981999507e-3
DATA expc<>+32(SB)/4, $8.3334519073e-3
DATA expc<>+36(SB)/4, $4.1665795894e-2
DATA expc<>+40(SB)/4, $1.6666665459e-1
DATA expc<>+44(SB)/4, $5.0000001201e-1
DATA expc<>+48(SB)/4, $1.0
DATA expc<>+52(SB)/4, $127
GLOBL expc<>(SB), RODATA|NOPTR, $56

// func maxAVX2(x *float32, n int) float32 — n ≥ 8, a multiple of 8.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VMOVUPS (SI), Y0
mxloop:
	VMAXPS (SI), Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ  mxloop
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X1, X1
	VMAXPS X1, X0, X0
	VPSHUFD $1, X0, X1
	VMAXSS X1, X0, X0
	MOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func expSubSumAVX2(x *float32, n int, m float32) float32
// x[i] = exp(x[i] − m) for n (a multiple of 8) elements; returns Σ x[i]
// (8 partial sums, combined in a fixed order). exp of anything below
// −88.37 (including −Inf) is 0.
TEXT ·expSubSumAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Y15
	VXORPS Y14, Y14, Y14 // sum
	SHRQ $3, CX
	JZ   exdone
	VBROADCASTSS expc<>+0(SB), Y13
	VBROADCASTSS expc<>+4(SB), Y12
	VBROADCASTSS expc<>+8(SB), Y11
	VBROADCASTSS expc<>+12(SB), Y10
	VBROADCASTSS expc<>+16(SB), Y9
	VBROADCASTSS expc<>+20(SB), Y8
	VBROADCASTSS expc<>+48(SB), Y7
	VPBROADCASTD expc<>+52(SB), Y6
exloop:
	VMOVUPS (SI), Y0
	VSUBPS  Y15, Y0, Y0
	VMINPS  Y13, Y0, Y0
	VMAXPS  Y12, Y0, Y0
	VMOVAPS Y10, Y1
	VFMADD231PS Y11, Y0, Y1 // x·log2e + 0.5
	VROUNDPS $1, Y1, Y1    // fx = floor
	VFNMADD231PS Y9, Y1, Y0 // x −= fx·C1
	VFNMADD231PS Y8, Y1, Y0 // x −= fx·C2
	VMULPS Y0, Y0, Y2       // z = x²
	VBROADCASTSS expc<>+24(SB), Y3
	VBROADCASTSS expc<>+28(SB), Y4
	VFMADD213PS Y4, Y0, Y3  // y = p0·x + p1
	VBROADCASTSS expc<>+32(SB), Y4
	VFMADD213PS Y4, Y0, Y3
	VBROADCASTSS expc<>+36(SB), Y4
	VFMADD213PS Y4, Y0, Y3
	VBROADCASTSS expc<>+40(SB), Y4
	VFMADD213PS Y4, Y0, Y3
	VBROADCASTSS expc<>+44(SB), Y4
	VFMADD213PS Y4, Y0, Y3
	VFMADD213PS Y0, Y2, Y3  // y = y·z + x
	VADDPS Y7, Y3, Y3       // + 1
	VCVTPS2DQ Y1, Y1        // n (fx is integral)
	VPADDD Y6, Y1, Y1
	VPSLLD $23, Y1, Y1      // 2^n
	VMULPS Y1, Y3, Y3
	VMOVUPS Y3, (SI)
	VADDPS Y3, Y14, Y14
	ADDQ $32, SI
	DECQ CX
	JNZ  exloop
exdone:
	VEXTRACTF128 $1, Y14, X1
	VADDPS X1, X14, X0
	VMOVHLPS X0, X1, X1
	VADDPS X1, X0, X0
	VPSHUFD $1, X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func scaleAVX2(x *float32, n int, s float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y1
	SHRQ $3, CX
	JZ   scdone
scloop:
	VMULPS (DI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ  scloop
scdone:
	VZEROUPPER
	RET

// AVX-512 FromFloat32 (toBF16x512): the integer rounding of
// toBF16AVX2 on 16 lanes. Not VCVTNEPS2BF16: it flushes denormals to
// zero, FromFloat32 rounds them like any other value.
DATA bf5c<>+0(SB)/4, $0x7fff
DATA bf5c<>+4(SB)/4, $1
DATA bf5c<>+8(SB)/4, $0x400000 // the bf16 quiet bit 0x40, before the >>16
DATA bf5c<>+12(SB)/4, $0x10000 // the bit that becomes the bf16 lsb
GLOBL bf5c<>(SB), RODATA|NOPTR, $16

// VPERMT2W index: the high word of each of 32 dwords in two registers.
DATA bf5hi<>+0(SB)/8, $0x0007000500030001
DATA bf5hi<>+8(SB)/8, $0x000f000d000b0009
DATA bf5hi<>+16(SB)/8, $0x0017001500130011
DATA bf5hi<>+24(SB)/8, $0x001f001d001b0019
DATA bf5hi<>+32(SB)/8, $0x0027002500230021
DATA bf5hi<>+40(SB)/8, $0x002f002d002b0029
DATA bf5hi<>+48(SB)/8, $0x0037003500330031
DATA bf5hi<>+56(SB)/8, $0x003f003d003b0039
GLOBL bf5hi<>(SB), RODATA|NOPTR, $64

// BF16RND(u, t) puts FromFloat32(u) in the high word of each dword of t:
// t = u + 0x7fff + (u>>16)&1 (the +1 as a masked add on the lanes whose
// bit 16 is set), or u | 0x400000 on NaN lanes (unordered compare).
// Needs Z16..Z18, Z20 from bf5c; clobbers K2, K3.
#define BF16RND(u, t) \
	VPTESTMD Z20, u, K3; \
	VPADDD   Z16, u, t; \
	VPADDD   Z17, t, K3, t; \
	VCMPPS   $3, u, u, K2; \
	VPORD    Z18, u, K2, t

// func toBF16x512(dst *BF16, src *float32, n int)
// Any n: 32 floats per iteration, their 32 high words gathered by one
// VPERMT2W; then up to two vectors of 16 narrowed by VPMOVDW, the last
// one masked, so nothing outside src[:n] and dst[:n] is touched.
TEXT ·toBF16x512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), DX
	VPBROADCASTD bf5c<>+0(SB), Z16
	VPBROADCASTD bf5c<>+4(SB), Z17
	VPBROADCASTD bf5c<>+8(SB), Z18
	VPBROADCASTD bf5c<>+12(SB), Z20
	MOVQ DX, BX
	SHRQ $5, BX
	JZ   b5tail
	VMOVDQU64 bf5hi<>+0(SB), Z19
b5loop:
	VMOVDQU32 (SI), Z0
	VMOVDQU32 64(SI), Z1
	BF16RND(Z0, Z2)
	BF16RND(Z1, Z3)
	VPERMT2W Z3, Z19, Z2
	VMOVDQU32 Z2, (DI)
	ADDQ $128, SI
	ADDQ $64, DI
	DECQ BX
	JNZ  b5loop
b5tail:
	ANDQ $31, DX // 0..31 left: a full-or-partial vector, then a partial one
	JZ   b5done
	MOVQ $-1, AX
	CMPQ DX, $16
	JB   b5last
	VMOVDQU32 (SI), Z0
	BF16RND(Z0, Z2)
	VPSRLD  $16, Z2, Z2
	VPMOVDW Z2, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, DX
	JZ   b5done
b5last:
	MOVQ DX, CX
	SHLQ CX, AX
	NOTQ AX // low n lanes
	KMOVW AX, K1
	VMOVDQU32.Z (SI), K1, Z0
	BF16RND(Z0, Z2)
	VPSRLD  $16, Z2, Z2
	VPMOVDW Z2, K1, (DI)
b5done:
	VZEROUPPER
	RET
