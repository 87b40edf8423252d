package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// selfTestShapes are ragged M×K×N shapes: tails of every register tile
// (6×64, 6×16, 32×32 AMX blocks), odd K, K across the AVX-512 K chunk.
var selfTestShapes = [][3]int{
	{1, 1, 1}, {2, 3, 5}, {7, 17, 33}, {15, 16, 17}, {16, 31, 64}, {17, 32, 65},
	{31, 33, 127}, {32, 64, 128}, {33, 255, 129}, {6, 257, 63}, {40, 640, 70},
	{65, 100, 300},
}

// SelfTest multiplies ragged shapes with kernel k and with the generic
// kernel, with guard cells around every output, under several epilogues,
// and returns an error describing the first disagreement: a result off
// by more than the fp32 summation bound, or a write outside the output.
// `onecore doctor` runs it for every available kernel; it is how the AMX
// path is verified on a machine that has AMX.
func SelfTest(k Kernel) error {
	if !k.Supported() {
		return fmt.Errorf("kernel %v not supported here", k)
	}
	r := rand.New(rand.NewPCG(42, uint64(k)))
	rnd := func(n int) []BF16 {
		s := make([]BF16, n)
		for i := range s {
			s[i] = FromFloat32(float32(r.NormFloat64()))
		}
		return s
	}
	const guard = 16
	sentinel := math.Float32frombits(0x7fc0beef)
	for _, sh := range selfTestShapes {
		m, kk, n := sh[0], sh[1], sh[2]
		lda, ldb, ldc := kk+1, n+3, n+2
		a, b := rnd((m-1)*lda+kk), rnd((kk-1)*ldb+n)
		bias := make([]float32, n)
		for i := range bias {
			bias[i] = float32(r.NormFloat64())
		}
		for ei, ep := range []*Epilogue{nil, {Scale: 0.5, Bias: bias, Act: ActReLU2}, {Accumulate: true, OutBF16: make([]BF16, m*n), LdOut: n}} {
			var outs [2][]float32
			var outBF [2][]BF16
			for v, kern := range []Kernel{KernelGeneric, k} {
				buf := make([]float32, (m-1)*ldc+n+2*guard)
				for i := range buf {
					buf[i] = sentinel
				}
				c := buf[guard : guard+(m-1)*ldc+n]
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						c[i*ldc+j] = float32(i-j) / 8
					}
				}
				var e *Epilogue
				if ep != nil {
					cp := *ep
					if cp.OutBF16 != nil {
						cp.OutBF16 = make([]BF16, m*n)
					}
					e = &cp
				}
				MatMul(m, a, lda, PackFor(kern, nil, kk, n, b, ldb), c, ldc, e)
				for i, x := range buf {
					j := i - guard
					if (j < 0 || j >= len(c) || j%ldc >= n) && math.Float32bits(x) != math.Float32bits(sentinel) {
						return fmt.Errorf("%v: M=%d K=%d N=%d epilogue %d: wrote outside C at offset %d", kern, m, kk, n, ei, j)
					}
				}
				outs[v] = c
				if e != nil {
					outBF[v] = e.OutBF16
				}
			}
			// Both sums are fp32 over K bf16 products (exact in fp32),
			// in different orders: they differ by ≤ 2·K·2⁻²⁴·Σ|a·b|,
			// bounded here by K·2⁻²³·(Σ|a|·|b| per element).
			for i := 0; i < m; i++ {
				var amag float64
				for x := 0; x < kk; x++ {
					amag = max(amag, math.Abs(float64(a[i*lda+x].Float32())))
				}
				for j := 0; j < n; j++ {
					var bmag float64
					for x := 0; x < kk; x++ {
						bmag += math.Abs(float64(b[x*ldb+j].Float32()))
					}
					mag := amag*bmag + 1
					if ep != nil && ep.Act == ActReLU2 {
						mag *= 2 * (amag*bmag + 4)
					}
					tol := float64(kk+8) * 0x1p-23 * mag
					g, f := float64(outs[0][i*ldc+j]), float64(outs[1][i*ldc+j])
					if math.Abs(g-f) > tol || math.IsNaN(f) {
						return fmt.Errorf("%v: M=%d K=%d N=%d epilogue %d: C[%d][%d] = %g, generic %g (tolerance %g)", k, m, kk, n, ei, i, j, f, g, tol)
					}
					if outBF[1] != nil && outBF[1][i*n+j] != FromFloat32(outs[1][i*ldc+j]) {
						return fmt.Errorf("%v: M=%d K=%d N=%d: OutBF16[%d][%d] is not bf16(C)", k, m, kk, n, i, j)
					}
				}
			}
		}
	}
	return nil
}

// SelfTestElementwise checks the installed elementwise fast paths against
// the generic code on ragged lengths: bit-exact where the operations are
// the same (bf16 conversion, ReLU², Add, Axpy, RoPE, SplitBF16, CopyRows,
// the decode attention kernels), within the fp32 summation bound where the
// order differs (Dot, RMSNorm, SoftmaxRow, RMSNormBwdRows, DecayMatrix).
func SelfTestElementwise() error {
	if err := selfTestRows(); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(7, 7))
	for n := 0; n <= 67; n++ {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		if n > 4 {
			x[1], x[3] = float32(math.Inf(-1)), math.Float32frombits(0x3f808000) // −Inf, a tie
		}
		b1, b2 := make([]BF16, n), make([]BF16, n)
		ToBF16(b1, x)
		toBF16Generic(b2, x)
		for i := range b1 {
			if b1[i] != b2[i] {
				return fmt.Errorf("ToBF16 n=%d [%d]: %#x, generic %#x", n, i, b1[i], b2[i])
			}
		}
		exact := func(name string, fast, gen func(v []float32)) error {
			v1, v2 := append([]float32(nil), y...), append([]float32(nil), y...)
			fast(v1)
			gen(v2)
			for i := range v1 {
				if math.Float32bits(v1[i]) != math.Float32bits(v2[i]) {
					return fmt.Errorf("%s n=%d [%d]: %g, generic %g", name, n, i, v1[i], v2[i])
				}
			}
			return nil
		}
		h := n / 2
		for _, err := range []error{
			exact("ReLU2", ReLU2, relu2Generic),
			exact("Add", func(v []float32) { Add(v, x) }, func(v []float32) { addGeneric(v, x) }),
			exact("Axpy", func(v []float32) { Axpy(0.3, x, v) }, func(v []float32) { axpyGeneric(0.3, x, v) }),
			exact("RoPE", func(v []float32) { RoPE(v, y[:h], x[n-h:]) }, func(v []float32) { ropeGeneric(v[:h], v[h:2*h], y[:h], x[n-h:]) }),
		} {
			if err != nil {
				return err
			}
		}
		var mag float64
		for i := range y {
			mag += math.Abs(float64(y[i] * y[i]))
		}
		tol := float64(n+8) * 0x1p-23
		if d, g := Dot(y, y), dotGeneric(y, y); math.Abs(float64(d-g)) > tol*mag {
			return fmt.Errorf("Dot n=%d: %g, generic %g", n, d, g)
		}
		if n == 0 {
			continue
		}
		d1, d2 := make([]float32, n), make([]float32, n)
		RMSNorm(d1, nil, y, x, 1e-5)
		rmsNormGeneric(d2, nil, y, x, 1e-5)
		s1, s2 := append([]float32(nil), x...), append([]float32(nil), x...)
		SoftmaxRow(s1)
		softmaxGeneric(s2)
		for i := range d1 {
			if math.Abs(float64(d1[i]-d2[i])) > tol*math.Abs(float64(d2[i])) || math.IsNaN(float64(d1[i])) != math.IsNaN(float64(d2[i])) {
				return fmt.Errorf("RMSNorm n=%d [%d]: %g, generic %g", n, i, d1[i], d2[i])
			}
			if math.Abs(float64(s1[i]-s2[i])) > tol*float64(s2[i])+1e-30 {
				return fmt.Errorf("SoftmaxRow n=%d [%d]: %g, generic %g", n, i, s1[i], s2[i])
			}
		}
	}
	return nil
}

// selfTestRows checks the row kernels of training and decode.
func selfTestRows() error {
	r := rand.New(rand.NewPCG(8, 8))
	randf := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	randb := func(n int) []BF16 {
		b := make([]BF16, n)
		ToBF16(b, randf(n))
		return b
	}
	eqF := func(name string, a, b []float32, tol float64) error {
		for i := range a {
			if d := math.Abs(float64(a[i] - b[i])); d > tol*(1+math.Abs(float64(b[i]))) || (tol == 0 && math.Float32bits(a[i]) != math.Float32bits(b[i])) {
				return fmt.Errorf("%s [%d]: %g, generic %g", name, i, a[i], b[i])
			}
		}
		return nil
	}
	for _, n := range []int{1, 15, 16, 17, 33, 64} {
		x := randf(n)
		h1, l1, h2, l2 := make([]BF16, n), make([]BF16, n), make([]BF16, n), make([]BF16, n)
		SplitBF16(h1, l1, x)
		splitBF16Generic(h2, l2, x)
		for i := range h1 {
			if h1[i] != h2[i] || l1[i] != l2[i] {
				return fmt.Errorf("SplitBF16 n=%d [%d] differs from generic", n, i)
			}
		}
		l := make([]float32, n)
		s := 0.0
		for i := range l {
			s -= r.Float64()
			l[i] = float32(s)
		}
		m1, m2 := make([]float32, n*n), make([]float32, n*n)
		DecayMatrix(m1, l, n)
		decayMatrixGeneric(m2, l, n)
		if err := eqF(fmt.Sprintf("DecayMatrix n=%d", n), m1, m2, 1e-6); err != nil {
			return err
		}
		c1, c2 := make([]float32, 3*n+2), make([]float32, 3*n+2)
		src := randf(3 * (n + 1))
		CopyRows(c1, n+1, src, n+1, 3, n)
		copyRowsGeneric(c2, n+1, src, n+1, 3, n)
		if err := eqF(fmt.Sprintf("CopyRows n=%d", n), c1, c2, 0); err != nil {
			return err
		}
	}
	for _, grp := range []int{16, 32, 256} {
		D := 256
		x, g, dy, rr := randf(3*D), randf(D), randf(3*D), randf(3*D/grp)
		dx1, dg1 := randf(3*D), randf(D)
		dx2, dg2 := append([]float32(nil), dx1...), append([]float32(nil), dg1...)
		RMSNormBwdRows(dx1, dg1, x, g, dy, rr, D, grp, true)
		rmsNormBwdRowsGeneric(dx2, dg2, x, g, dy, rr, D, grp, true)
		if err := eqF(fmt.Sprintf("RMSNormBwdRows group=%d", grp), dx1, dx2, 1e-4); err != nil {
			return err
		}
		if err := eqF(fmt.Sprintf("RMSNormBwdRows group=%d dg", grp), dg1, dg2, 1e-4); err != nil {
			return err
		}
	}
	for _, hd := range []int{32, 64} {
		for _, nk := range []int{1, 2, 17, 255, 256} {
			ldk := nk + 3
			q, k, v := randb(hd), randb(hd*ldk), randb((nk+1)/2*2*hd)
			s1, s2 := make([]float32, nk), make([]float32, nk)
			decodeScoresImpl(s1, q, k, ldk, 0.125)
			decodeScoresGeneric(s2, q, k, ldk, 0.125)
			if err := eqF(fmt.Sprintf("decode scores hd=%d nk=%d", hd, nk), s1, s2, 0); err != nil {
				return err
			}
			p := make([]BF16, nk)
			SoftmaxRowBF16(p, s2)
			o1, o2 := make([]float32, hd), make([]float32, hd)
			decodePVImpl(o1, p, v)
			decodePVGeneric(o2, p, v)
			if err := eqF(fmt.Sprintf("decode P·V hd=%d nk=%d", hd, nk), o1, o2, 0); err != nil {
				return err
			}
		}
		S := randf(32 * hd)
		S2 := append([]float32(nil), S...)
		q, k, v := randf(32), randf(32), randf(hd)
		o1, o2 := make([]float32, hd), make([]float32, hd)
		LinAttnStep(o1, S, q, k, v, 0.9, 0.17)
		linAttnStepGeneric(o2, S2, q, k, v, 0.9, 0.17)
		if err := eqF(fmt.Sprintf("LinAttnStep hd=%d", hd), o1, o2, 0); err != nil {
			return err
		}
		if err := eqF(fmt.Sprintf("LinAttnStep hd=%d state", hd), S, S2, 0); err != nil {
			return err
		}
	}
	return nil
}
