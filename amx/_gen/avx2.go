package main

import "fmt"

// Offsets into fmaArgs (gemm_avx2_amd64.go); keep in sync.
const (
	f2A     = 0
	f2Lda   = 8
	f2M     = 16
	f2B     = 24
	f2K     = 32
	f2C     = 40
	f2Ldc   = 48
	f2Flags = 56
	f2Scale = 64
	f2Bias  = 72
	f2CS    = 80
)

// mr2 is the AVX2 register tile height: mr2 rows × 16 columns = 12
// accumulators (Y4..Y15), B's two ymm in Y0/Y1, A's broadcast in Y2/Y3.
const mr2 = 6

// genAVX2 writes fmaPanel: one full 16-column panel of C = A·B for all M
// rows, A already widened to fp32, with the epilogue (everything but the
// bf16 copy). Each element is one VFMADD231PS chain over k ascending,
// whatever the row block: batch invariant.
func genAVX2(a *asm) {
	a.raw("// func fmaPanel(p *fmaArgs)\nTEXT ·fmaPanel(SB), NOSPLIT, $0-8\n")
	a.i("MOVQ p+0(FP), DI")
	a.label("loop")
	a.i("MOVQ %d(DI), CX", f2M)
	a.i("CMPQ CX, $%d", mr2)
	a.i("JLT tail")
	block2(a, mr2)
	a.i("MOVQ %d(DI), AX", f2Lda)
	a.i("IMULQ $%d, AX", mr2)
	a.i("ADDQ AX, %d(DI)", f2A)
	a.i("MOVQ %d(DI), AX", f2Ldc)
	a.i("IMULQ $%d, AX", mr2)
	a.i("ADDQ AX, %d(DI)", f2C)
	a.i("SUBQ $%d, %d(DI)", mr2, f2M)
	a.i("JMP loop")
	a.label("tail")
	for mr := mr2 - 1; mr >= 1; mr-- {
		a.i("CMPQ CX, $%d", mr)
		a.i("JEQ rows%d", mr)
	}
	a.i("JMP done")
	for mr := mr2 - 1; mr >= 1; mr-- {
		a.label("rows%d", mr)
		block2(a, mr)
		a.i("JMP done")
	}
	a.label("done")
	a.i("VZEROUPPER")
	a.i("RET")
}

func acc2(r, z int) int { return 4 + 2*r + z }

func block2(a *asm, mr int) {
	t := fmt.Sprint(mr)
	a.i("MOVQ %d(DI), R8", f2A)
	a.i("MOVQ %d(DI), BX", f2Lda)
	for r := 1; r < mr; r++ {
		a.i("LEAQ (%s)(BX*1), %s", rowReg[r-1], rowReg[r])
	}
	a.i("MOVQ %d(DI), SI", f2B)
	a.i("MOVQ %d(DI), CX", f2K)
	a.i("XORQ DX, DX")
	for r := 0; r < mr; r++ {
		for z := 0; z < 2; z++ {
			a.i("VXORPS Y%d, Y%d, Y%d", acc2(r, z), acc2(r, z), acc2(r, z))
		}
	}
	a.i("TESTQ CX, CX")
	a.i("JZ epi2_" + t)
	a.label("k2loop" + t)
	a.i("VMOVUPS (SI), Y0")
	a.i("VMOVUPS 32(SI), Y1")
	for r := 0; r < mr; r++ {
		ar := 2 + r&1
		a.i("VBROADCASTSS (%s)(DX*1), Y%d", rowReg[r], ar)
		a.i("VFMADD231PS Y0, Y%d, Y%d", ar, acc2(r, 0))
		a.i("VFMADD231PS Y1, Y%d, Y%d", ar, acc2(r, 1))
	}
	a.i("ADDQ $64, SI")
	a.i("ADDQ $4, DX")
	a.i("DECQ CX")
	a.i("JNZ k2loop" + t)
	a.label("epi2_" + t)

	all := func(f func(r, z int)) {
		for r := 0; r < mr; r++ {
			for z := 0; z < 2; z++ {
				f(r, z)
			}
		}
	}
	a.i("MOVQ %d(DI), R14", f2Flags)
	a.i("TESTQ $%d, R14", fScale)
	a.i("JZ noscale2_" + t)
	a.i("VBROADCASTSS %d(DI), Y0", f2Scale)
	all(func(r, z int) { a.i("VMULPS Y0, Y%d, Y%d", acc2(r, z), acc2(r, z)) })
	a.label("noscale2_" + t)
	a.i("TESTQ $%d, R14", fBias)
	a.i("JZ nobias2_" + t)
	a.i("MOVQ %d(DI), SI", f2Bias)
	a.i("VMOVUPS (SI), Y0")
	a.i("VMOVUPS 32(SI), Y1")
	all(func(r, z int) { a.i("VADDPS Y%d, Y%d, Y%d", z, acc2(r, z), acc2(r, z)) })
	a.label("nobias2_" + t)
	a.i("TESTQ $%d, R14", fReLU2)
	a.i("JZ norelu2_" + t)
	a.i("VXORPS Y0, Y0, Y0")
	all(func(r, z int) {
		a.i("VMAXPS Y%d, Y0, Y%d", acc2(r, z), acc2(r, z))
		a.i("VMULPS Y%d, Y%d, Y%d", acc2(r, z), acc2(r, z), acc2(r, z))
	})
	a.label("norelu2_" + t)
	a.i("TESTQ $%d, R14", fColScale)
	a.i("JZ nocs2_" + t)
	a.i("MOVQ %d(DI), SI", f2CS)
	a.i("VMOVUPS (SI), Y0")
	a.i("VMOVUPS 32(SI), Y1")
	all(func(r, z int) { a.i("VMULPS Y%d, Y%d, Y%d", z, acc2(r, z), acc2(r, z)) })
	a.label("nocs2_" + t)
	a.i("MOVQ %d(DI), SI", f2C)
	a.i("MOVQ %d(DI), DX", f2Ldc)
	a.i("TESTQ $%d, R14", fAccum)
	a.i("JZ plain2_" + t)
	for r := 0; r < mr; r++ {
		for z := 0; z < 2; z++ {
			a.i("VADDPS %d(SI), Y%d, Y%d", 32*z, acc2(r, z), acc2(r, z))
		}
		a.i("ADDQ DX, SI")
	}
	a.i("MOVQ %d(DI), SI", f2C)
	a.label("plain2_" + t)
	for r := 0; r < mr; r++ {
		for z := 0; z < 2; z++ {
			a.i("VMOVUPS Y%d, %d(SI)", acc2(r, z), 32*z)
		}
		a.i("ADDQ DX, SI")
	}
}

// genPeak2 writes fmaPeak(n): n iterations of 12 independent VFMADD231PS
// on ymm registers (16 FLOPs each).
func genPeak2(a *asm) {
	a.raw("\n// func fmaPeak(n int)\nTEXT ·fmaPeak(SB), NOSPLIT, $0-8\n")
	a.i("MOVQ n+0(FP), CX")
	for r := 0; r < 16; r++ {
		a.i("VXORPS Y%d, Y%d, Y%d", r, r, r)
	}
	a.i("TESTQ CX, CX")
	a.i("JZ fpeakdone")
	a.label("fpeakloop")
	for i := 0; i < 2; i++ {
		for r := 4; r < 16; r++ {
			a.i("VFMADD231PS Y%d, Y%d, Y%d", r&1, 2+r&1, r)
		}
	}
	a.i("DECQ CX")
	a.i("JNZ fpeakloop")
	a.label("fpeakdone")
	a.i("VZEROUPPER")
	a.i("RET")
}
