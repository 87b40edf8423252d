package amx

// PeakLoop runs the multiply-add instruction that kernel kern is built
// on, on registers only, about iters·1536 FLOPs' worth, and returns the
// FLOPs it did. Timing it gives this core's throughput ceiling for kern
// (`onecore bench peak`); a GEMM's GFLOP/s divided by it is its
// efficiency.
func PeakLoop(kern Kernel, iters int) float64 {
	if f := peakImpl[kern]; f != nil && kern.Supported() {
		return f(iters)
	}
	return peakGeneric(iters)
}

// peakImpl holds the fast kernels' peak loops (see *_amd64.go).
var peakImpl [numKernels]func(iters int) float64

// peakSink keeps peakGeneric's result alive.
var peakSink float32

// peakGeneric is the pure-Go kernel's ceiling: 8 independent fp32
// multiply-add chains (Go does not fuse them), 1536 FLOPs per iteration.
func peakGeneric(iters int) float64 {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	x, y := float32(1.0000001), float32(0.9999999)
	for i := 0; i < iters; i++ {
		for j := 0; j < 96; j++ {
			s0 = s0*x + y
			s1 = s1*x + y
			s2 = s2*x + y
			s3 = s3*x + y
			s4 = s4*y + x
			s5 = s5*y + x
			s6 = s6*y + x
			s7 = s7*y + x
		}
	}
	peakSink = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
	return float64(iters) * 96 * 16
}
