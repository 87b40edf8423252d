package amx

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// Kernel names one GEMM implementation.
type Kernel uint8

// The kernels, worst to best.
const (
	KernelGeneric    Kernel = iota // pure Go, fp32 accumulate
	KernelAVX2                     // AVX2/FMA on fp32-widened weights
	KernelAVX512BF16               // VDPBF16PS
	KernelAMX                      // TDPBF16PS tiles
	numKernels
)

var kernelNames = [...]string{"generic", "avx2", "avx512bf16", "amx"}

// String returns the name ONECORE_KERNEL accepts.
func (k Kernel) String() string {
	if int(k) < len(kernelNames) {
		return kernelNames[k]
	}
	return fmt.Sprintf("kernel(%d)", k)
}

// ParseKernel maps a name (as in ONECORE_KERNEL) to a Kernel.
func ParseKernel(name string) (Kernel, error) {
	for i, n := range kernelNames {
		if strings.EqualFold(name, n) {
			return Kernel(i), nil
		}
	}
	return 0, fmt.Errorf("unknown kernel %q (want one of %s)", name, strings.Join(kernelNames[:], ", "))
}

// Supported reports whether k can run on this CPU in this build.
func (k Kernel) Supported() bool {
	if k >= numKernels {
		return false
	}
	return k == KernelGeneric || cpuSupports(k)
}

// Available lists the kernels this CPU and build can run, best first.
func Available() []Kernel {
	var ks []Kernel
	for k := numKernels - 1; ; k-- {
		if k.Supported() {
			ks = append(ks, k)
		}
		if k == 0 {
			return ks
		}
	}
}

var (
	selectOnce sync.Once
	selected   Kernel
	selectErr  error
)

// Selected returns the kernel Pack uses by default: ONECORE_KERNEL if set,
// else the best available. An unusable ONECORE_KERNEL is reported by
// SelectionError and falls back to the best available kernel.
func Selected() Kernel {
	selectOnce.Do(func() {
		selected = Available()[0]
		if env := os.Getenv("ONECORE_KERNEL"); env != "" {
			k, err := ParseKernel(env)
			switch {
			case err != nil:
				selectErr = fmt.Errorf("ONECORE_KERNEL: %w", err)
			case !k.Supported():
				selectErr = fmt.Errorf("ONECORE_KERNEL=%s: not supported on this CPU/build (available: %v)", env, Available())
			default:
				selected = k
			}
		}
	})
	return selected
}

// SelectionError reports a bad ONECORE_KERNEL value; the CLI refuses to run
// with one rather than silently picking another kernel.
func SelectionError() error {
	Selected()
	return selectErr
}
