package amx

// CPUInfo is what feature detection found: instruction-set support from
// CPUID and the OS's consent from XCR0 (and, for AMX, arch_prctl). In a
// purego build or on other architectures it is all zero.
type CPUInfo struct {
	Vendor, Model string
	// Instruction sets (CPUID).
	AVX2, FMA, AVX512F, AVX512BW, AVX512BF16, AMXTile, AMXBF16 bool
	// AVX512VNNI: VPDPBUSD, the int8 dot product of the int8 weight path.
	AVX512VNNI bool
	// XCR0 is the extended-control register: which register state the OS
	// saves. OSAVX: bits 1-2; OSAVX512: bits 5-7; OSAMX: bits 17-18.
	XCR0                   uint64
	OSAVX, OSAVX512, OSAMX bool
	// AMXPerm is true when arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)
	// succeeded; AMXPermErr holds its error otherwise (nil if not tried).
	AMXPerm    bool
	AMXPermErr error
}

var cpuInfo CPUInfo

// CPU returns the detected CPU features (detected once per process).
func CPU() CPUInfo {
	detectCPU()
	return cpuInfo
}
