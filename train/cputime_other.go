//go:build !unix

package train

// cpuSeconds is unavailable here; rates per CPU-second are then omitted.
func cpuSeconds() float64 { return 0 }
