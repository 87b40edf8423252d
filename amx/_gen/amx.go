package main

import "fmt"

// Offsets into amxArgs (gemm_amx_amd64.go); keep in sync.
const (
	xA      = 0
	xLda    = 8
	xBlocks = 16
	xB      = 24
	xKt     = 32
	xNsub   = 40
	xOut    = 48
	xLdo    = 56
	xCfg    = 64
)

// x86 register numbers for encodings.
var regNum = map[string]byte{"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14}

// vex3 returns the three-byte VEX prefix for map 0F38, W0, L0.
func vex3(rExt, xExt, bExt bool, vvvv, pp byte) []byte {
	b1 := byte(0x02)
	if !rExt {
		b1 |= 0x80
	}
	if !xExt {
		b1 |= 0x40
	}
	if !bExt {
		b1 |= 0x20
	}
	return []byte{0xC4, b1, (^vvvv&15)<<3 | pp}
}

// tileMem encodes TILELOADD (pp=F2) / TILESTORED (pp=F3), opcode 4B,
// with a [base + index*1] memory operand.
func tileMem(pp byte, tmm int, base, index string) []byte {
	b, x := regNum[base], regNum[index]
	out := vex3(false, x >= 8, b >= 8, 0, pp)
	return append(out, 0x4B, byte(tmm&7)<<3|0x04, (x&7)<<3|b&7)
}

// tdpbf16ps encodes TDPBF16PS tmm(dst) += tmm(a)·tmm(b):
// VEX.128.F3.0F38.W0 5C /r with dst in ModRM.reg, a in ModRM.rm, b in vvvv.
func tdpbf16ps(dst, a, b int) []byte {
	return append(vex3(false, false, false, byte(b), 2), 0x5C, 0xC0|byte(dst)<<3|byte(a))
}

const (
	ppNone = 0
	ppF3   = 2
	ppF2   = 3
)

// genAMX writes amxTiles: for each 32-row block of A (bf16, K padded to
// a multiple of 32) and each of nsub 32-column sub-panels of one packed
// B panel, a 2×2 block of 16×16 fp32 tiles accumulated over the K tiles
// (C in tmm0-3, A in tmm4-5, B in tmm6-7), stored as fp32 rows of 64
// floats (stride ldo) for the AVX-512 epilogue. The tile configuration is
// loaded and released inside the call, so a goroutine moving threads
// between calls never finds stale tile state.
func genAMX(a *asm) {
	a.raw("\n// func amxTiles(p *amxArgs)\nTEXT ·amxTiles(SB), NOSPLIT, $0-8\n")
	a.i("MOVQ p+0(FP), DI")
	a.i("MOVQ %d(DI), AX", xCfg)
	a.bytes("LDTILECFG (AX)", 0xC4, 0xE2, 0x78, 0x49, 0x00)
	a.i("MOVQ %d(DI), R8", xBlocks)
	a.i("MOVQ %d(DI), SI", xA)
	a.i("MOVQ %d(DI), BX", xLda)
	a.i("MOVQ %d(DI), R9", xOut)
	a.i("MOVQ $64, R13")
	a.label("rbloop")
	a.i("XORQ R10, R10")
	a.i("MOVQ %d(DI), R11", xB)
	a.label("subloop")
	for t := 0; t < 4; t++ {
		a.bytes(fmt.Sprintf("TILEZERO TMM%d", t), 0xC4, 0xE2, 0x7B, 0x49, 0xC0|byte(t)<<3)
	}
	a.i("MOVQ SI, AX") // A rows 0-15
	a.i("MOVQ BX, CX")
	a.i("SHLQ $4, CX")
	a.i("ADDQ SI, CX") // A rows 16-31
	a.i("MOVQ R11, DX")
	a.i("MOVQ %d(DI), R14", xKt)
	a.label("ktloop")
	a.i("LEAQ 1024(DX), R12")
	a.bytes("TILELOADD TMM4, (AX)(BX*1)", tileMem(ppF2, 4, "AX", "BX")...)
	a.bytes("TILELOADD TMM5, (CX)(BX*1)", tileMem(ppF2, 5, "CX", "BX")...)
	a.bytes("TILELOADD TMM6, (DX)(R13*1)", tileMem(ppF2, 6, "DX", "R13")...)
	a.bytes("TILELOADD TMM7, (R12)(R13*1)", tileMem(ppF2, 7, "R12", "R13")...)
	for _, op := range [][3]int{{0, 4, 6}, {1, 4, 7}, {2, 5, 6}, {3, 5, 7}} {
		a.bytes(fmt.Sprintf("TDPBF16PS TMM%d, TMM%d, TMM%d", op[0], op[1], op[2]), tdpbf16ps(op[0], op[1], op[2])...)
	}
	a.i("ADDQ $64, AX")
	a.i("ADDQ $64, CX")
	a.i("ADDQ $2048, DX")
	a.i("DECQ R14")
	a.i("JNZ ktloop")
	// Store: sub-panel s's columns start at float 32·s of the out rows.
	a.i("MOVQ R10, AX")
	a.i("SHLQ $7, AX")
	a.i("ADDQ R9, AX")
	a.i("MOVQ %d(DI), CX", xLdo)
	a.bytes("TILESTORED (AX)(CX*1), TMM0", tileMem(ppF3, 0, "AX", "CX")...)
	a.i("LEAQ 64(AX), DX")
	a.bytes("TILESTORED (DX)(CX*1), TMM1", tileMem(ppF3, 1, "DX", "CX")...)
	a.i("MOVQ CX, R12")
	a.i("SHLQ $4, R12")
	a.i("ADDQ R12, AX")
	a.bytes("TILESTORED (AX)(CX*1), TMM2", tileMem(ppF3, 2, "AX", "CX")...)
	a.i("LEAQ 64(AX), DX")
	a.bytes("TILESTORED (DX)(CX*1), TMM3", tileMem(ppF3, 3, "DX", "CX")...)
	a.i("MOVQ %d(DI), R12", xKt)
	a.i("SHLQ $11, R12")
	a.i("ADDQ R12, R11") // next sub-panel: kt·2048 bytes on
	a.i("INCQ R10")
	a.i("CMPQ R10, %d(DI)", xNsub)
	a.i("JLT subloop")
	a.i("MOVQ BX, R12")
	a.i("SHLQ $5, R12")
	a.i("ADDQ R12, SI")
	a.i("MOVQ %d(DI), R12", xLdo)
	a.i("SHLQ $5, R12")
	a.i("ADDQ R12, R9")
	a.i("DECQ R8")
	a.i("JNZ rbloop")
	a.bytes("TILERELEASE", 0xC4, 0xE2, 0x78, 0x49, 0xC0)
	a.i("RET")
}

// genPeakAMX writes amxPeak(cfg, n): n iterations of 4 independent
// TDPBF16PS (16·16·32·2 = 16384 FLOPs each) on zeroed tiles.
func genPeakAMX(a *asm) {
	a.raw("\n// func amxPeak(cfg *byte, n int)\nTEXT ·amxPeak(SB), NOSPLIT, $0-16\n")
	a.i("MOVQ cfg+0(FP), AX")
	a.i("MOVQ n+8(FP), CX")
	a.bytes("LDTILECFG (AX)", 0xC4, 0xE2, 0x78, 0x49, 0x00)
	for t := 0; t < 8; t++ {
		a.bytes(fmt.Sprintf("TILEZERO TMM%d", t), 0xC4, 0xE2, 0x7B, 0x49, 0xC0|byte(t)<<3)
	}
	a.i("TESTQ CX, CX")
	a.i("JZ xpeakdone")
	a.label("xpeakloop")
	for _, op := range [][3]int{{0, 4, 6}, {1, 4, 7}, {2, 5, 6}, {3, 5, 7}} {
		a.bytes(fmt.Sprintf("TDPBF16PS TMM%d, TMM%d, TMM%d", op[0], op[1], op[2]), tdpbf16ps(op[0], op[1], op[2])...)
	}
	a.i("DECQ CX")
	a.i("JNZ xpeakloop")
	a.label("xpeakdone")
	a.bytes("TILERELEASE", 0xC4, 0xE2, 0x78, 0x49, 0xC0)
	a.i("RET")
}
