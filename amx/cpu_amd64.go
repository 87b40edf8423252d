//go:build amd64 && !purego

package amx

import (
	"strings"
	"sync"
)

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

// Linux arch_prctl codes for the AMX tile-data permission (see
// Documentation/arch/x86/xstate.rst).
const (
	archReqXcompPerm  = 0x1023
	xfeatureXTileData = 18
)

var cpuOnce sync.Once

// detectCPU fills cpuInfo once: CPUID leaves 0, 1, 7.0, 7.1, the brand
// string, XCR0 (what the OS saves on context switch), and for AMX the
// arch_prctl permission request that Linux requires before the first tile
// instruction.
func detectCPU() {
	cpuOnce.Do(func() {
		c := &cpuInfo
		maxLeaf, b, cx, d := cpuid(0, 0)
		c.Vendor = string(le32(b)) + string(le32(d)) + string(le32(cx))
		if maxExt, _, _, _ := cpuid(0x80000000, 0); maxExt >= 0x80000004 {
			var brand []byte
			for leaf := uint32(0x80000002); leaf <= 0x80000004; leaf++ {
				a, b, cx, d := cpuid(leaf, 0)
				brand = append(brand, le32(a)...)
				brand = append(brand, le32(b)...)
				brand = append(brand, le32(cx)...)
				brand = append(brand, le32(d)...)
			}
			c.Model = strings.TrimSpace(strings.TrimRight(string(brand), "\x00"))
		}
		if maxLeaf < 1 {
			return
		}
		_, _, ecx1, _ := cpuid(1, 0)
		c.FMA = ecx1&(1<<12) != 0
		osxsave := ecx1&(1<<27) != 0
		avx := ecx1&(1<<28) != 0
		if osxsave {
			lo, hi := xgetbv()
			c.XCR0 = uint64(hi)<<32 | uint64(lo)
		}
		if maxLeaf >= 7 {
			eax7, ebx7, ecx7, edx7 := cpuid(7, 0)
			c.AVX2 = avx && ebx7&(1<<5) != 0
			c.AVX512F = ebx7&(1<<16) != 0
			c.AVX512BW = ebx7&(1<<30) != 0
			c.AVX512VNNI = ecx7&(1<<11) != 0
			c.AMXBF16 = edx7&(1<<22) != 0
			c.AMXTile = edx7&(1<<24) != 0
			if eax7 >= 1 {
				eax71, _, _, _ := cpuid(7, 1)
				c.AVX512BF16 = eax71&(1<<5) != 0
			}
		}
		// XCR0: bits 1-2 SSE/AVX state, 5-7 opmask/ZMM_Hi256/Hi16_ZMM,
		// 17-18 XTILECFG/XTILEDATA.
		c.OSAVX = c.XCR0&0x6 == 0x6
		c.OSAVX512 = c.OSAVX && c.XCR0&0xe0 == 0xe0
		c.OSAMX = c.XCR0&(3<<17) == 3<<17
		if c.AMXTile && c.AMXBF16 && c.OSAMX {
			if err := requestAMXPermission(); err != nil {
				c.AMXPermErr = err
			} else {
				c.AMXPerm = true
			}
		}
	})
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// cpuSupports reports whether kernel k has both the instructions and the
// OS support (XCR0 state, AMX permission) it needs, and is built in.
func cpuSupports(k Kernel) bool {
	c := CPU()
	switch k {
	case KernelAVX2:
		return c.AVX2 && c.FMA && c.OSAVX && matmulImpl[k] != nil
	case KernelAVX512BF16:
		return c.AVX512F && c.AVX512BW && c.AVX512BF16 && c.OSAVX512 && matmulImpl[k] != nil
	case KernelAMX:
		if amxSimulated {
			return c.AVX512F && c.AVX512BW && c.OSAVX512
		}
		return c.AMXTile && c.AMXBF16 && c.OSAMX && c.AMXPerm && c.AVX512F && c.OSAVX512 && matmulImpl[k] != nil
	}
	return false
}
