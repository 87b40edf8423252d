package main

import "fmt"

// Offsets into dpArgs (gemm_avx512_amd64.go); keep in sync.
const (
	offA     = 0
	offLda   = 8
	offM     = 16
	offB     = 24
	offKp    = 32
	offKodd  = 40
	offC     = 48
	offLdc   = 56
	offMask  = 64
	offFlags = 72
	offScale = 80
	offBias  = 88
	offCS    = 96
	offOut   = 104
	offLdo   = 112
	offAcc   = 120
	offPf    = 128
	offRs    = 136 // int8 path: row scales of this block's first row
	offComp  = 144 // int8 path: 128·column sums of Wq at the panel's first column
	offWs    = 152 // int8 path: weight column scales likewise
)

// Epilogue flags (dpArgs.flags); keep in sync with the Go side.
const (
	fScale    = 1
	fBias     = 2
	fReLU2    = 4
	fColScale = 8
	fAccum    = 16
	fStoreC   = 32
	fBF16     = 64
	fLoadAcc  = 128 // start from the partial sums at p.acc (a later K chunk)
	fRawStore = 256 // store the raw sums to p.acc, no epilogue (not the last K chunk)
	fPrefetch = 512 // prefetch the next B panel from p.pf while multiplying
)

// mr512 is the register tile height: mr512 rows × 64 columns = 4·mr512
// accumulators (Z8..Z31), B's four zmm of K-pairs in Z0..Z3, A's
// broadcast pair in Z4/Z5. 24 independent VDPBF16PS chains cover the
// instruction's latency at two per cycle.
const mr512 = 6

func acc(r, z int) int { return 8 + 4*r + z }

// variant selects the panel kernel the shared code emits: dpbf16Panel
// (bf16 pairs, VDPBF16PS) or dpbusdPanel (the int8 path: quads of
// unsigned activation bytes × signed weight bytes, VPDPBUSD, int32 sums
// turned to fp32 before the epilogue).
type variant struct {
	name string
	q8   bool
}

var (
	bf16Variant = variant{name: "dpbf16Panel"}
	q8Variant   = variant{name: "dpbusdPanel", q8: true}
)

var rowReg = [mr512]string{"R8", "R9", "R10", "R11", "R12", "R13"}

// genAVX512 writes dpbf16Panel and its int8 twin dpbusdPanel: one
// 64-column panel of C for all M rows.
//
// Every output element is the same chain of VDPBF16PS over K-pairs in
// ascending order (then one zero-padded pair if K is odd), whichever row
// block (6 rows or a 1..5-row tail) computes it: batch invariant.
func genAVX512(a *asm) {
	genPanel(a, bf16Variant)
	genPanel(a, q8Variant)
}

// genPanel writes one panel kernel (see variant); the bf16 conversion
// constants go with the first.
func genPanel(a *asm, v variant) {
	if v.q8 {
		a.raw("\n")
	} else {
		genBF16Consts(a)
	}
	a.raw(fmt.Sprintf("// func %s(p *dpArgs)\nTEXT ·%s(SB), NOSPLIT, $0-8\n", v.name, v.name))
	genPanelBody(a, v)
}

func genBF16Consts(a *asm) {
	a.raw(`// Constants for the round-to-nearest-even fp32→bf16 conversion.
DATA bf16c<>+0(SB)/4, $1
DATA bf16c<>+4(SB)/4, $0x7fff
DATA bf16c<>+8(SB)/4, $0x7fffffff
DATA bf16c<>+12(SB)/4, $0x7f800000
DATA bf16c<>+16(SB)/4, $0x40
GLOBL bf16c<>(SB), RODATA|NOPTR, $20

`)
}

func genPanelBody(a *asm, v variant) {
	a.i("MOVQ p+0(FP), DI")
	a.i("MOVQ %d(DI), AX", offMask)
	for z := 0; z < 4; z++ {
		a.i("KMOVW AX, K%d", z+1)
		a.i("SHRQ $16, AX")
	}
	a.label("loop6")
	a.i("MOVQ %d(DI), CX", offM)
	a.i("CMPQ CX, $%d", mr512)
	a.i("JLT tail")
	block(a, mr512, v)
	// Advance A, C and OutBF16 (and the row scales) by mr512 rows.
	a.i("MOVQ %d(DI), AX", offLda)
	a.i("IMULQ $%d, AX", mr512)
	a.i("ADDQ AX, %d(DI)", offA)
	a.i("MOVQ %d(DI), AX", offLdc)
	a.i("IMULQ $%d, AX", mr512)
	a.i("ADDQ AX, %d(DI)", offC)
	a.i("MOVQ %d(DI), AX", offLdo)
	a.i("IMULQ $%d, AX", mr512)
	a.i("ADDQ AX, %d(DI)", offOut)
	a.i("ADDQ $%d, %d(DI)", mr512*256, offAcc)
	if v.q8 {
		a.i("ADDQ $%d, %d(DI)", mr512*4, offRs)
	}
	a.i("ANDQ $~%d, %d(DI)", fPrefetch, offFlags) // only the first block prefetches
	a.i("SUBQ $%d, %d(DI)", mr512, offM)
	a.i("JMP loop6")
	a.label("tail")
	for mr := mr512 - 1; mr >= 1; mr-- {
		a.i("CMPQ CX, $%d", mr)
		a.i("JEQ rows%d", mr)
	}
	a.i("JMP done")
	for mr := mr512 - 1; mr >= 1; mr-- {
		a.label("rows%d", mr)
		block(a, mr, v)
		a.i("JMP done")
	}
	a.label("done")
	a.i("VZEROUPPER")
	a.i("RET")
}

// block emits the full-K product and epilogue for mr rows at p.a.
func block(a *asm, mr int, v variant) {
	t := fmt.Sprint(mr)
	a.i("MOVQ %d(DI), R8", offA)
	a.i("MOVQ %d(DI), BX", offLda)
	for r := 1; r < mr; r++ {
		a.i("LEAQ (%s)(BX*1), %s", rowReg[r-1], rowReg[r])
	}
	a.i("MOVQ %d(DI), SI", offB)
	a.i("MOVQ %d(DI), CX", offKp)
	a.i("XORQ DX, DX")
	a.i("MOVQ %d(DI), R14", offFlags)
	a.i("TESTQ $%d, R14", fLoadAcc)
	a.i("JNZ load" + t)
	for r := 0; r < mr; r++ {
		for z := 0; z < 4; z++ {
			a.i("VPXORD Z%d, Z%d, Z%d", acc(r, z), acc(r, z), acc(r, z))
		}
	}
	a.i("JMP loaded" + t)
	a.label("load" + t)
	a.i("MOVQ %d(DI), R14", offAcc)
	for r := 0; r < mr; r++ {
		for z := 0; z < 4; z++ {
			a.i("VMOVUPS %d(R14), Z%d", 256*r+64*z, acc(r, z))
		}
	}
	a.label("loaded" + t)
	// Pull this block's C (and bf16 output) lines toward L1 for writing
	// now, so the epilogue's stores don't wait for them after the K loop
	// (matters when C is far bigger than the caches). Prefetches never
	// fault, so nil pointers are harmless.
	a.i("MOVQ %d(DI), AX", offC)
	a.i("MOVQ %d(DI), R14", offLdc)
	for r := 0; r < mr; r++ {
		for z := 0; z < 4; z++ {
			a.prefetchw(64 * z)
		}
		a.i("ADDQ R14, AX")
	}
	a.i("MOVQ %d(DI), AX", offOut)
	a.i("MOVQ %d(DI), R14", offLdo)
	for r := 0; r < mr; r++ {
		a.prefetchw(0)
		a.prefetchw(64)
		a.i("ADDQ R14, AX")
	}
	a.i("TESTQ CX, CX")
	a.i("JZ ktail" + t)
	a.i("MOVQ %d(DI), R14", offFlags)
	a.i("TESTQ $%d, R14", fPrefetch)
	a.i("JZ kloop" + t)
	// Same loop, also pulling the next panel (p.pf) toward L1, 256 bytes
	// per K-pair: the first row block of a panel hides the next one's
	// memory latency.
	a.i("MOVQ %d(DI), AX", offPf)
	a.label("kloopPF" + t)
	kstep(a, mr, true, v)
	a.i("JNZ kloopPF" + t)
	a.i("JMP ktail" + t)
	a.label("kloop" + t)
	kstep(a, mr, false, v)
	a.i("JNZ kloop" + t)
	a.label("ktail" + t)
	// Odd K: the last pair is (A[K-1], 0) against (B[K-1], 0): read A's
	// last element alone so the row end is never overrun. (The int8 path
	// pads K to whole quads with zero weight rows: no tail.)
	if !v.q8 {
		a.i("CMPQ %d(DI), $0", offKodd)
		a.i("JEQ epi" + t)
		for z := 0; z < 4; z++ {
			a.i("VMOVUPS %d(SI), Z%d", 64*z, z)
		}
		for r := 0; r < mr; r++ {
			ar := 4 + r&1
			a.i("MOVWLZX (%s)(DX*1), R14", rowReg[r])
			a.i("VPBROADCASTD R14, Z%d", ar)
			for z := 0; z < 4; z++ {
				a.vdpbf16ps(acc(r, z), ar, z)
			}
		}
	}
	a.label("epi" + t)
	a.i("MOVQ %d(DI), R14", offFlags)
	a.i("TESTQ $%d, R14", fRawStore)
	a.i("JZ final" + t)
	a.i("MOVQ %d(DI), R14", offAcc)
	for r := 0; r < mr; r++ {
		for z := 0; z < 4; z++ {
			a.i("VMOVUPS Z%d, %d(R14)", acc(r, z), 256*r+64*z)
		}
	}
	a.i("JMP end" + t)
	a.label("final" + t)
	if v.q8 {
		dequant(a, mr)
	}
	epilogue(a, mr)
	a.label("end" + t)
}

// kstep emits one K step of the register tile (a K-pair of bf16, or a
// K-quad of bytes for int8: 4 bytes of each A row and 256 of B either
// way), ending with the loop counter's DECQ (the caller emits the branch).
func kstep(a *asm, mr int, prefetch bool, v variant) {
	for z := 0; z < 4; z++ {
		a.i("VMOVUPS %d(SI), Z%d", 64*z, z)
	}
	for r := 0; r < mr; r++ {
		ar := 4 + r&1
		a.i("VPBROADCASTD (%s)(DX*1), Z%d", rowReg[r], ar)
		for z := 0; z < 4; z++ {
			if v.q8 {
				// acc += Σ4 u8(A quad) · s8(B quad), Go operand order.
				a.i("VPDPBUSD Z%d, Z%d, Z%d", z, ar, acc(r, z))
			} else {
				a.vdpbf16ps(acc(r, z), ar, z)
			}
		}
		if prefetch && r < 4 {
			a.i("PREFETCHT1 %d(AX)", 64*r)
		}
	}
	for r := mr; prefetch && r < 4; r++ {
		a.i("PREFETCHT1 %d(AX)", 64*r)
	}
	if prefetch {
		a.i("ADDQ $256, AX")
	}
	a.i("ADDQ $256, SI")
	a.i("ADDQ $4, DX")
	a.i("DECQ CX")
}

// dequant turns the int8 path's int32 sums into fp32, in the order of
// the package comment: v = float32(acc − comp[j]) · ws[j] · rs[i]. comp
// and ws are padded to whole panels, so their loads need no mask.
func dequant(a *asm, mr int) {
	a.i("MOVQ %d(DI), SI", offComp)
	a.i("MOVQ %d(DI), AX", offWs)
	a.i("MOVQ %d(DI), BX", offRs)
	for z := 0; z < 4; z++ {
		a.i("VMOVDQU32 %d(SI), Z%d", 64*z, z)
		a.i("VMOVUPS %d(AX), Z%d", 64*z, 4+z)
	}
	for r := 0; r < mr; r++ {
		for z := 0; z < 4; z++ {
			v := acc(r, z)
			a.i("VPSUBD Z%d, Z%d, Z%d", z, v, v)
			a.i("VCVTDQ2PS Z%d, Z%d", v, v)
			a.i("VMULPS Z%d, Z%d, Z%d", 4+z, v, v)
			a.i("VMULPS.BCST %d(BX), Z%d, Z%d", 4*r, v, v)
		}
	}
}

// epilogue applies dpArgs.flags to the mr×64 accumulator tile, in the
// order of Epilogue's doc: scale, bias, activation, column scale,
// accumulate into C, store C, store bf16. Memory operands are masked by
// K1..K4 (the panel's valid columns), so nothing past N is read or written.
func epilogue(a *asm, mr int) {
	t := fmt.Sprint(mr)
	all := func(f func(r, z int)) {
		for r := 0; r < mr; r++ {
			for z := 0; z < 4; z++ {
				f(r, z)
			}
		}
	}
	a.i("MOVQ %d(DI), R14", offFlags)

	a.i("TESTQ $%d, R14", fScale)
	a.i("JZ noscale" + t)
	a.i("VBROADCASTSS %d(DI), Z0", offScale)
	all(func(r, z int) { a.i("VMULPS Z0, Z%d, Z%d", acc(r, z), acc(r, z)) })
	a.label("noscale" + t)

	a.i("TESTQ $%d, R14", fBias)
	a.i("JZ nobias" + t)
	a.i("MOVQ %d(DI), SI", offBias)
	all(func(r, z int) { a.i("VADDPS %d(SI), Z%d, K%d, Z%d", 64*z, acc(r, z), z+1, acc(r, z)) })
	a.label("nobias" + t)

	a.i("TESTQ $%d, R14", fReLU2)
	a.i("JZ norelu" + t)
	a.i("VPXORD Z1, Z1, Z1")
	// max(0, v) with v as the second source keeps NaN (like v < 0 ? 0 : v).
	all(func(r, z int) {
		a.i("VMAXPS Z%d, Z1, Z%d", acc(r, z), acc(r, z))
		a.i("VMULPS Z%d, Z%d, Z%d", acc(r, z), acc(r, z), acc(r, z))
	})
	a.label("norelu" + t)

	a.i("TESTQ $%d, R14", fColScale)
	a.i("JZ nocs" + t)
	a.i("MOVQ %d(DI), SI", offCS)
	all(func(r, z int) { a.i("VMULPS %d(SI), Z%d, K%d, Z%d", 64*z, acc(r, z), z+1, acc(r, z)) })
	a.label("nocs" + t)

	a.i("TESTQ $%d, R14", fStoreC)
	a.i("JZ nostore" + t)
	a.i("MOVQ %d(DI), SI", offC)
	a.i("MOVQ %d(DI), DX", offLdc)
	a.i("TESTQ $%d, R14", fAccum)
	a.i("JZ plain" + t)
	for r := 0; r < mr; r++ {
		for z := 0; z < 4; z++ {
			a.i("VADDPS %d(SI), Z%d, K%d, Z%d", 64*z, acc(r, z), z+1, acc(r, z))
			a.i("VMOVUPS Z%d, K%d, %d(SI)", acc(r, z), z+1, 64*z)
		}
		a.i("ADDQ DX, SI")
	}
	a.i("JMP nostore" + t)
	a.label("plain" + t)
	for r := 0; r < mr; r++ {
		for z := 0; z < 4; z++ {
			a.i("VMOVUPS Z%d, K%d, %d(SI)", acc(r, z), z+1, 64*z)
		}
		a.i("ADDQ DX, SI")
	}
	a.label("nostore" + t)

	a.i("TESTQ $%d, R14", fBF16)
	a.i("JZ nobf" + t)
	a.i("MOVQ %d(DI), SI", offOut)
	a.i("MOVQ %d(DI), DX", offLdo)
	a.i("VPBROADCASTD bf16c<>+0(SB), Z4")  // 1
	a.i("VPBROADCASTD bf16c<>+4(SB), Z5")  // 0x7fff
	a.i("VPBROADCASTD bf16c<>+8(SB), Z6")  // 0x7fffffff
	a.i("VPBROADCASTD bf16c<>+12(SB), Z7") // 0x7f800000
	a.i("VPBROADCASTD bf16c<>+16(SB), Z1") // 0x40 (quiet-NaN bit)
	for r := 0; r < mr; r++ {
		for z := 0; z < 4; z++ {
			v := acc(r, z)
			// u + 0x7fff + ((u>>16)&1), >>16; NaN: (u>>16)|0x40.
			a.i("VPSRLD $16, Z%d, Z2", v)
			a.i("VPANDD Z4, Z2, Z3")
			a.i("VPADDD Z5, Z3, Z3")
			a.i("VPADDD Z%d, Z3, Z3", v)
			a.i("VPSRLD $16, Z3, Z3")
			a.i("VPANDD Z6, Z%d, Z0", v)
			a.i("VPCMPUD $6, Z7, Z0, K5")
			a.i("VPORD Z1, Z2, K5, Z3")
			a.i("VPMOVDW Z3, Y3")
			a.i("VMOVDQU16 Y3, K%d, %d(SI)", z+1, 32*z)
		}
		a.i("ADDQ DX, SI")
	}
	a.label("nobf" + t)
}

// genPeak512 writes dpbf16Peak(n): n iterations of 24 independent
// VDPBF16PS on registers only, the instruction's throughput ceiling
// (64 FLOPs each) that `onecore bench peak` measures.
func genPeak512(a *asm) {
	a.raw("\n// func dpbf16Peak(n int)\nTEXT ·dpbf16Peak(SB), NOSPLIT, $0-8\n")
	a.i("MOVQ n+0(FP), CX")
	for r := 0; r < 8; r++ {
		a.i("VPXORD Z%d, Z%d, Z%d", r, r, r)
	}
	for z := 8; z < 32; z++ {
		a.i("VPXORD Z%d, Z%d, Z%d", z, z, z)
	}
	a.i("TESTQ CX, CX")
	a.i("JZ peakdone")
	a.label("peakloop")
	for z := 8; z < 32; z++ {
		a.vdpbf16ps(z, z&3, 4+z&3)
	}
	a.i("DECQ CX")
	a.i("JNZ peakloop")
	a.label("peakdone")
	a.i("VZEROUPPER")
	a.i("RET")
}

// prefetchw emits PREFETCHW disp(AX) (0F 0D /1, disp32), which Go's
// assembler lacks.
func (a *asm) prefetchw(disp int) {
	a.bytes(fmt.Sprintf("PREFETCHW %d(AX)", disp), 0x0F, 0x0D, 0x88, byte(disp), byte(disp>>8), byte(disp>>16), byte(disp>>24))
}
