package amx

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchShapes are the engine's GEMM shapes (the acceptance set).
var benchShapes = []shape{
	{256, 256, 256}, {256, 256, 640}, {256, 640, 256}, {256, 256, 1024}, {256, 256, 16384}, {16, 256, 256},
}

// BenchmarkMatMul times MatMul as the engine calls it: weights packed
// once, C reused. Pin it for single-core numbers:
// taskset -c 0 go test -run - -bench . ./amx/
func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, kern := range Available() {
		for _, s := range benchShapes {
			b.Run(fmt.Sprintf("%v/M%d_K%d_N%d", kern, s.m, s.k, s.n), func(b *testing.B) {
				a := randBF16(r, s.m*s.k)
				pb := PackFor(kern, nil, s.k, s.n, randBF16(r, s.k*s.n), s.n)
				c := make([]float32, s.m*s.n)
				b.SetBytes(0)
				for b.Loop() {
					MatMul(s.m, a, s.k, pb, c, s.n, nil)
				}
				b.ReportMetric(FLOPs(s.m, s.k, s.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkPeak times each kernel's bare multiply-add loop.
func BenchmarkPeak(b *testing.B) {
	for _, kern := range Available() {
		b.Run(kern.String(), func(b *testing.B) {
			var f float64
			for b.Loop() {
				f += PeakLoop(kern, 1000)
			}
			b.ReportMetric(f/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkElementwise compares the fast elementwise kernels with the
// generic ones at the model's sizes.
func BenchmarkElementwise(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x, g := randF32(r, 512), randF32(r, 512)
	dst, dbf := make([]float32, 512), make([]BF16, 512)
	for _, c := range []struct {
		name string
		fast func()
		gen  func()
	}{
		{"SoftmaxRow512", func() { copy(dst, x); SoftmaxRow(dst) }, func() { copy(dst, x); softmaxGeneric(dst) }},
		{"RMSNorm256", func() { RMSNorm(dst[:256], dbf[:256], x[:256], g[:256], 1e-5) }, func() { rmsNormGeneric(dst[:256], dbf[:256], x[:256], g[:256], 1e-5) }},
		{"ToBF16_512", func() { ToBF16(dbf, x) }, func() { toBF16Generic(dbf, x) }},
	} {
		b.Run(c.name+"/"+ElementwiseKernel(), func(b *testing.B) {
			for b.Loop() {
				c.fast()
			}
		})
		b.Run(c.name+"/generic", func(b *testing.B) {
			for b.Loop() {
				c.gen()
			}
		})
	}
}

// BenchmarkPack times packing per-call operands (attention keys and
// values), which the engine repacks for every chunk.
func BenchmarkPack(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, kern := range Available() {
		for _, s := range []struct {
			k, n  int
			trans bool
		}{{64, 512, true}, {512, 64, false}, {256, 640, false}} {
			name := fmt.Sprintf("%v/K%d_N%d", kern, s.k, s.n)
			if s.trans {
				name += "_T"
			}
			b.Run(name, func(b *testing.B) {
				src := randBF16(r, s.k*s.n)
				var m Matrix
				for b.Loop() {
					if s.trans {
						PackTransposedFor(kern, &m, s.k, s.n, src, s.k)
					} else {
						PackFor(kern, &m, s.k, s.n, src, s.n)
					}
				}
			})
		}
	}
}
