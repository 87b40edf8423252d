package amx

import "testing"

// BenchmarkRMSNormRows times RMSNormRows over a 1024-row pass of width 128
// (a narrow model's prefill norm), bf16 output only and both outputs.
func BenchmarkRMSNormRows(b *testing.B) {
	const rows, D = 1024, 128
	x := make([]float32, rows*D)
	for i := range x {
		x[i] = float32(i%97) * 0.01
	}
	g := make([]float32, D)
	for i := range g {
		g[i] = 1
	}
	dst := make([]float32, rows*D)
	db := make([]BF16, rows*D)
	b.Run("bf16", func(b *testing.B) {
		for b.Loop() {
			RMSNormRows(nil, db, x, g, D, 1e-5)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
	b.Run("both", func(b *testing.B) {
		for b.Loop() {
			RMSNormRows(dst, db, x, g, D, 1e-5)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
}
