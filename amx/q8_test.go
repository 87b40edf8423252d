package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// q8Ref is the exact product of the int8 path's inputs (bf16 A, fp32 W)
// in float64, with, per element, a bound on the quantization error:
// |a − â| ≤ max_k|a|/254 and |w − ŵ| ≤ max_k|w|/254 (half a step each),
// so |A·W − Â·Ŵ| ≤ Σ_k (δa·|w| + |a|·δw + δa·δw).
func q8Ref(m, k, n int, a []BF16, lda int, w []float32, ldw int) (ref, bound []float64) {
	ref, bound = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		var amax float64
		for kk := 0; kk < k; kk++ {
			amax = math.Max(amax, math.Abs(float64(a[i*lda+kk].Float32())))
		}
		for j := 0; j < n; j++ {
			var wmax float64
			for kk := 0; kk < k; kk++ {
				wmax = math.Max(wmax, math.Abs(float64(w[kk*ldw+j])))
			}
			da, dw := amax/254*1.001, wmax/254*1.001
			var s, b float64
			for kk := 0; kk < k; kk++ {
				x, y := float64(a[i*lda+kk].Float32()), float64(w[kk*ldw+j])
				s += x * y
				b += da*math.Abs(y) + math.Abs(x)*dw + da*dw
			}
			ref[i*n+j], bound[i*n+j] = s, b+1e-6*math.Abs(s)+1e-30
		}
	}
	return ref, bound
}

// TestQ8Accuracy: on ragged shapes, the int8 product (whichever
// implementation this machine runs) is within the quantization bound of
// the exact product, and its error is small on average (~1 % of the
// values' spread for Gaussian data), so the scales are applied right.
func TestQ8Accuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, s := range []shape{{1, 1, 1}, {7, 5, 3}, {6, 128, 384}, {13, 384, 128}, {5, 130, 65}, {33, 600, 129}, {2, 1030, 70}} {
		lda, ldw := s.k+2, s.n+3
		a := randBF16(r, (s.m-1)*lda+s.k)
		w := randF32(r, (s.k-1)*ldw+s.n)
		pb := PackQ8(Selected(), s.k, s.n, w, ldw)
		if !pb.Int8() {
			t.Fatal("PackQ8: not int8")
		}
		c := make([]float32, s.m*s.n)
		MatMul(s.m, a, lda, pb, c, s.n, nil)
		ref, bound := q8Ref(s.m, s.k, s.n, a, lda, w, ldw)
		var errSq, refSq float64
		for i, v := range c {
			d := float64(v) - ref[i]
			if math.Abs(d) > bound[i] {
				t.Fatalf("%v: C[%d] = %g, want %g ± %g", s, i, v, ref[i], bound[i])
			}
			errSq += d * d
			refSq += ref[i] * ref[i]
		}
		if s.k >= 64 {
			if rel := math.Sqrt(errSq / refSq); rel > 0.02 {
				t.Fatalf("%v: relative RMS error %.4f, want < 0.02", s, rel)
			}
		}
	}
}

// TestQ8Zeros: an all-zero row of A or column of W gives exactly the
// epilogue of 0 (scales of 0 never divide).
func TestQ8Zeros(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	m, k, n := 4, 37, 70
	a := randBF16(r, m*k)
	clear(a[2*k : 3*k])
	w := randF32(r, k*n)
	for kk := 0; kk < k; kk++ {
		w[kk*n+5] = 0
	}
	bias := randF32(r, n)
	c := make([]float32, m*n)
	MatMul(m, a, k, PackQ8(Selected(), k, n, w, n), c, n, &Epilogue{Bias: bias})
	for j := 0; j < n; j++ {
		if c[2*n+j] != bias[j] {
			t.Fatalf("zero row: C[2][%d] = %g, want the bias %g", j, c[2*n+j], bias[j])
		}
	}
	for i := 0; i < m; i++ {
		if c[i*n+5] != bias[5] {
			t.Fatalf("zero column: C[%d][5] = %g, want the bias %g", i, c[i*n+5], bias[5])
		}
	}
	// K = 0: every sum is 0, C is the epilogue's bias alone
	clear(c)
	MatMul(m, nil, 0, PackQ8(Selected(), 0, n, nil, n), c, n, &Epilogue{Bias: bias})
	for j := 0; j < n; j++ {
		if c[j] != bias[j] || c[(m-1)*n+j] != bias[j] {
			t.Fatalf("K=0: C[.][%d] = %g, %g, want the bias %g", j, c[j], c[(m-1)*n+j], bias[j])
		}
	}
}

// TestQ8BatchInvariance: an int8 row's result is bit-identical whatever
// rows are multiplied with it (activations are quantized per row).
func TestQ8BatchInvariance(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, s := range []shape{{257, 640, 129}, {61, 33, 65}, {100, 384, 128}} {
		pb := PackQ8(Selected(), s.k, s.n, randF32(r, s.k*s.n), s.n)
		checkRowsAlone(t, "int8", s, randBF16(r, s.m*s.k), pb, &Epilogue{Bias: randF32(r, s.n), Act: ActReLU2})
	}
}

// TestQ8Quantize pins the quantization rule on hand-checked values.
func TestQ8Quantize(t *testing.T) {
	a := []BF16{FromFloat32(1), FromFloat32(-2), FromFloat32(0.5), FromFloat32(0.0078125)}
	dst := make([]uint8, 8)
	scales := make([]float32, 1)
	quantRowsImpl(1, a, 4, 4, dst, 4, scales)
	// max 2: scale 2/127; 1 → 63.5 → 64 (ties to even); −2 → −127;
	// 0.5 → 31.75 → 32; 1/128 → 0.496 → 0.
	if want := []uint8{128 + 64, 128 - 127, 128 + 32, 128}; fmt.Sprint(dst[:4]) != fmt.Sprint(want) {
		t.Fatalf("quantized %v, want %v", dst[:4], want)
	}
	if scales[0] != float32(2)/127 {
		t.Fatalf("scale %g, want 2/127", scales[0])
	}
}

// BenchmarkMatMulQ8 times the engine's weight shapes (a pack of 2048
// tokens, base-small's widths) bf16 against int8, activation
// quantization included: compare the two lines of one shape.
func BenchmarkMatMulQ8(b *testing.B) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, s := range []shape{{2048, 128, 384}, {2048, 384, 128}, {2048, 128, 516}, {2048, 256, 1024}} {
		a := randBF16(r, s.m*s.k)
		w := randF32(r, s.k*s.n)
		wb := make([]BF16, len(w))
		ToBF16(wb, w)
		out := make([]BF16, s.m*s.n)
		for _, q := range []bool{false, true} {
			pb := PackFor(Selected(), nil, s.k, s.n, wb, s.n)
			name := "bf16"
			if q {
				pb, name = PackQ8(Selected(), s.k, s.n, w, s.n), "int8"
			}
			b.Run(fmt.Sprintf("%dx%dx%d/%s", s.m, s.k, s.n, name), func(b *testing.B) {
				ep := &Epilogue{OutBF16: out}
				for b.Loop() {
					MatMul(s.m, a, s.k, pb, nil, 0, ep)
				}
				b.ReportMetric(float64(2*s.m*s.k*s.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestSelfTestQ8: the doctor's int8 self-test passes, and fails when the
// int8 product is off in one element.
func TestSelfTestQ8(t *testing.T) {
	if err := SelfTestQ8(); err != nil {
		t.Fatal(err)
	}
	if Selected() == KernelGeneric {
		return // ONECORE_KERNEL=generic: the int8 path is the reference itself
	}
	saved := matmulQ8Impl
	defer func() { matmulQ8Impl = saved }()
	matmulQ8Impl = func(m int, aq []uint8, ldd int, rs []float32, b *Matrix, c []float32, ldc int, ep *Epilogue) {
		saved(m, aq, ldd, rs, b, c, ldc, ep)
		if c != nil && m > 3 && b.N > 3 {
			c[3*ldc+3] += 1
		}
	}
	if err := SelfTestQ8(); err == nil {
		t.Fatal("SelfTestQ8 passed with a broken int8 product")
	}
}
