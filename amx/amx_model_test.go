//go:build amd64 && !purego

package amx

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// tile is one AMX tile register as palette 1 configures it here:
// 16 rows × 64 bytes.
type tile [16][64]byte

// tileLoad is TILELOADD: 16 rows of 64 bytes from base + row·stride.
func tileLoad(base unsafe.Pointer, stride uintptr) (t tile) {
	for r := range t {
		copy(t[r][:], unsafe.Slice((*byte)(unsafe.Add(base, uintptr(r)*stride)), 64))
	}
	return t
}

// tileStore is TILESTORED.
func tileStore(base unsafe.Pointer, stride uintptr, t *tile) {
	for r := range t {
		copy(unsafe.Slice((*byte)(unsafe.Add(base, uintptr(r)*stride)), 64), t[r][:])
	}
}

func (t *tile) f32(r, c int) *float32 { return (*float32)(unsafe.Pointer(&t[r][4*c])) }
func (t *tile) bf16(r, c int) BF16    { return BF16(t[r][2*c]) | BF16(t[r][2*c+1])<<8 }

// tdpbf16ps follows Intel's pseudo-code for TDPBF16PS: for each row m,
// K-pair k and column n, C[m][n] += A[m][2k]·B[k][2n] + A[m][2k+1]·B[k][2n+1].
func tdpbf16ps(c, a, b *tile) {
	for m := 0; m < 16; m++ {
		for k := 0; k < 16; k++ {
			for n := 0; n < 16; n++ {
				p := c.f32(m, n)
				*p += a.bf16(m, 2*k).Float32() * b.bf16(k, 2*n).Float32()
				*p += a.bf16(m, 2*k+1).Float32() * b.bf16(k, 2*n+1).Float32()
			}
		}
	}
}

// amxTilesModel is the software model of the amxTiles tile program: the
// same loops, addresses and strides as amx/_gen/amx.go, with each tile
// instruction done in Go.
func amxTilesModel(p *amxArgs) {
	var tc [4]tile
	// Addresses are formed only when used (checkptr rejects pointers past
	// an allocation, which the assembly's loop increments would make).
	for rb := 0; rb < p.blocks; rb++ {
		aBase := unsafe.Add(p.a, uintptr(rb)*32*p.lda)
		out := unsafe.Add(p.out, uintptr(rb)*32*p.ldo)
		for s := 0; s < p.nsub; s++ {
			tc = [4]tile{}
			bSub := uintptr(s) * uintptr(p.kt) * 2048
			for kt := 0; kt < p.kt; kt++ {
				ta0 := tileLoad(unsafe.Add(aBase, kt*64), p.lda)
				ta1 := tileLoad(unsafe.Add(aBase, 16*p.lda+uintptr(kt)*64), p.lda)
				tb0 := tileLoad(unsafe.Add(p.b, bSub+uintptr(kt)*2048), 64)
				tb1 := tileLoad(unsafe.Add(p.b, bSub+uintptr(kt)*2048+1024), 64)
				tdpbf16ps(&tc[0], &ta0, &tb0)
				tdpbf16ps(&tc[1], &ta0, &tb1)
				tdpbf16ps(&tc[2], &ta1, &tb0)
				tdpbf16ps(&tc[3], &ta1, &tb1)
			}
			o := unsafe.Add(out, uintptr(s)*128)
			tileStore(o, p.ldo, &tc[0])
			tileStore(unsafe.Add(o, 64), p.ldo, &tc[1])
			tileStore(unsafe.Add(o, 16*p.ldo), p.ldo, &tc[2])
			tileStore(unsafe.Add(o, 16*p.ldo+64), p.ldo, &tc[3])
		}
	}
}

// simulateAMX makes KernelAMX available, running the tile model.
func simulateAMX(t *testing.T) {
	if !KernelAVX512BF16.Supported() {
		t.Fatalf("the AMX driver's epilogue needs AVX-512 (CPU: %+v)", CPU())
	}
	amxSimulated, amxTilesSim = true, func(p amxArgs) { amxTilesModel(&p) }
	t.Cleanup(func() { amxSimulated, amxTilesSim = false, nil })
}

// TestAMXModel runs the AMX packing, blocking, padding and epilogue with
// the software tile model against the float64 reference and the guards.
func TestAMXModel(t *testing.T) {
	simulateAMX(t)
	var shapes []shape
	for _, s := range shapeMix() {
		if s.m*s.k*s.n <= 64*64*640 { // the model is slow; keep the suite light
			shapes = append(shapes, s)
		}
	}
	shapes = append(shapes, shape{33, 64, 129}, shape{64, 96, 65}, shape{31, 256, 256})
	checkKernels(t, []Kernel{KernelAMX}, shapes)

	// The transposed pack multiplies exactly like the plain one.
	r := rand.New(rand.NewPCG(17, 18))
	for _, s := range []shape{{7, 31, 17}, {33, 64, 100}} {
		b := randBF16(r, s.k*s.n)
		bt := make([]BF16, s.n*s.k)
		for kk := 0; kk < s.k; kk++ {
			for j := 0; j < s.n; j++ {
				bt[j*s.k+kk] = b[kk*s.n+j]
			}
		}
		a := randBF16(r, s.m*s.k)
		c1, c2 := make([]float32, s.m*s.n), make([]float32, s.m*s.n)
		MatMul(s.m, a, s.k, PackFor(KernelAMX, nil, s.k, s.n, b, s.n), c1, s.n, nil)
		MatMul(s.m, a, s.k, PackTransposedFor(KernelAMX, nil, s.k, s.n, bt, s.k), c2, s.n, nil)
		if i := bitsEqual(c1, c2); i >= 0 {
			t.Fatalf("AMX %v: transposed pack differs at %d", s, i)
		}
	}
}

// TestAMXObjectCode checks that the built package holds the intended AMX
// instructions: the bytes of TDPBF16PS/TILELOADD/TILESTORED/LDTILECFG/
// TILERELEASE in amxTiles (go tool objdump cannot name them), and the
// mnemonics when GNU objdump is installed.
func TestAMXObjectCode(t *testing.T) {
	// The binary `go test` runs has no symbol table: build one that has.
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(t.TempDir(), "amx.test")
	if out, err := exec.Command(goBin, "test", "-c", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	out, err := exec.Command(goBin, "tool", "objdump", "-s", `amx\.amxTiles`, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool objdump: %v\n%s", err, out)
	}
	// Columns: file:line, address, hex bytes, disassembly.
	var code []byte
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.HasPrefix(f[1], "0x") {
			b, err := hex.DecodeString(f[2])
			if err == nil {
				code = append(code, b...)
			}
		}
	}
	if len(code) == 0 {
		t.Fatalf("no code for amxTiles in objdump output:\n%s", out)
	}
	for name, want := range map[string][]byte{
		"LDTILECFG (AX)":               {0xc4, 0xe2, 0x78, 0x49, 0x00},
		"TILELOADD TMM4, (AX)(BX*1)":   {0xc4, 0xe2, 0x7b, 0x4b, 0x24, 0x18},
		"TILELOADD TMM7, (R12)(R13*1)": {0xc4, 0x82, 0x7b, 0x4b, 0x3c, 0x2c},
		"TDPBF16PS TMM0, TMM4, TMM6":   {0xc4, 0xe2, 0x4a, 0x5c, 0xc4},
		"TDPBF16PS TMM3, TMM5, TMM7":   {0xc4, 0xe2, 0x42, 0x5c, 0xdd},
		"TILESTORED (AX)(CX*1), TMM0":  {0xc4, 0xe2, 0x7a, 0x4b, 0x04, 0x08},
		"TILERELEASE":                  {0xc4, 0xe2, 0x78, 0x49, 0xc0},
	} {
		if !bytes.Contains(code, want) {
			t.Errorf("amxTiles lacks %s (% x)", name, want)
		}
	}
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Logf("GNU objdump not installed: mnemonics not checked (bytes were)")
		return
	}
	out, err = exec.Command(objdump, "-d", "--no-show-raw-insn", bin).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	fn := regexp.MustCompile(`(?s)<github.com/onecore-dev/onecore/amx.amxTiles.abi0>:\n(.*?)\n\n`).FindSubmatch(out)
	if fn == nil {
		t.Fatalf("objdump: amxTiles not found")
	}
	for _, m := range []string{"ldtilecfg", "tilezero", "tileloadd", "tdpbf16ps", "tilestored", "tilerelease"} {
		if !bytes.Contains(fn[1], []byte(m)) {
			t.Errorf("objdump of amxTiles has no %s", m)
		}
	}
}
