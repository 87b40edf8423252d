package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bf16Close reports whether two bf16 values are within one bf16 ulp (or
// both tiny): the fast paths' exp and summation order differ from the
// reference by a few fp32 ulp, which can move a bf16 rounding by one step.
func bf16Close(a, b BF16, tiny float64) bool {
	if a == b {
		return true
	}
	fa, fb := float64(a.Float32()), float64(b.Float32())
	if math.Abs(fa) < tiny && math.Abs(fb) < tiny {
		return true
	}
	d := int(a) - int(b)
	return (a^b)&0x8000 == 0 && (d == 1 || d == -1)
}

func TestRMSNormRows(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	cases := []struct{ group, perRow, rows int }{
		{256, 1, 1}, {256, 1, 7}, {32, 8, 1}, {32, 8, 5}, {16, 3, 4}, {48, 2, 3},
		{64, 1, 2}, {8, 4, 3}, {20, 2, 2}, {1, 5, 2}, // not whole vectors: per-group path
		// the AVX-512 path's blocks of 64 groups: several, a ragged last
		// one, and rows wider than a block
		{128, 1, 150}, {32, 4, 37}, {16, 80, 2},
	}
	for _, c := range cases {
		rowLen := c.group * c.perRow
		x, g := randF32(r, rowLen*c.rows), randF32(r, rowLen)
		for i := range x {
			x[i] *= float32(1 + i%5)
		}
		n := len(x)
		got, want := make([]float32, n+1), make([]float32, n+1)
		gotB, wantB := make([]BF16, n+1), make([]BF16, n+1)
		got[n], want[n], gotB[n], wantB[n] = 7, 7, 7, 7
		RMSNormRows(got, gotB, x, g, c.group, 1e-5)
		rmsNormRowsWith(rmsNormGeneric, want, wantB, x, g, c.group, 1e-5)
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 4e-6*math.Abs(float64(want[i]))+1e-30 {
				t.Fatalf("%+v [%d]: %g vs %g", c, i, got[i], want[i])
			}
			if !bf16Close(gotB[i], wantB[i], 0) {
				t.Fatalf("%+v bf16 [%d]: %#x vs %#x", c, i, gotB[i], wantB[i])
			}
		}
		// Either destination alone gives the same values.
		only := make([]float32, n)
		RMSNormRows(only, nil, x, g, c.group, 1e-5)
		onlyB := make([]BF16, n)
		RMSNormRows(nil, onlyB, x, g, c.group, 1e-5)
		for i := range only {
			if only[i] != got[i] || onlyB[i] != gotB[i] {
				t.Fatalf("%+v [%d]: single destination differs", c, i)
			}
		}
	}
}

func TestRMSNormRowsBadShape(t *testing.T) {
	for _, c := range []struct{ nx, ng, group int }{{10, 4, 4}, {8, 6, 4}, {8, 4, 0}, {8, 0, 4}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v: no panic", c)
				}
			}()
			RMSNormRows(make([]float32, c.nx), nil, make([]float32, c.nx), make([]float32, c.ng), c.group, 1e-5)
		}()
	}
}

func TestRoPEHeads(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, hd := range []int{2, 6, 32, 64, 96, 128} {
		for _, heads := range []int{1, 2, 8} {
			n := hd * heads
			x := randF32(r, n)
			cs, sn := make([]float32, hd/2), make([]float32, hd/2)
			for i := range cs {
				a := r.Float64() * 100
				cs[i], sn[i] = float32(math.Cos(a)), float32(math.Sin(a))
			}
			got, want := append([]float32(nil), x...), append([]float32(nil), x...)
			gotB, wantB := make([]BF16, n+1), make([]BF16, n+1)
			gotB[n], wantB[n] = 9, 9
			RoPEHeads(got, gotB, hd, cs, sn)
			ropeHeadsWith(ropeGeneric, toBF16Generic, want, wantB, hd, cs, sn)
			if i := bitsEqual(got, want); i >= 0 {
				t.Fatalf("hd=%d heads=%d [%d]: %g vs %g", hd, heads, i, got[i], want[i])
			}
			for i := range gotB {
				if gotB[i] != wantB[i] {
					t.Fatalf("hd=%d heads=%d bf16 [%d]: %#x vs %#x", hd, heads, i, gotB[i], wantB[i])
				}
			}
			onlyB, keep := make([]BF16, n+1), append([]float32(nil), x...)
			onlyB[n] = 9
			RoPEHeadsBF16(onlyB, keep, hd, cs, sn)
			if i := bitsEqual(keep, x); i >= 0 {
				t.Fatalf("hd=%d heads=%d: RoPEHeadsBF16 changed x[%d]", hd, heads, i)
			}
			for i := range onlyB {
				if onlyB[i] != wantB[i] {
					t.Fatalf("hd=%d heads=%d RoPEHeadsBF16 [%d]: %#x vs %#x", hd, heads, i, onlyB[i], wantB[i])
				}
			}
			noB := append([]float32(nil), x...)
			RoPEHeads(noB, nil, hd, cs, sn)
			if i := bitsEqual(noB, want); i >= 0 {
				t.Fatalf("hd=%d heads=%d without bf16 [%d]", hd, heads, i)
			}
		}
	}
}

func TestSoftmaxRowBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for _, n := range raggedLens() {
		for _, allInf := range []bool{false, true} {
			x := randF32(r, n)
			for i := range x {
				x[i] *= 8
				if allInf || i%9 == 4 {
					x[i] = float32(math.Inf(-1))
				}
			}
			ref := append([]float32(nil), x...)
			softmaxGeneric(ref)
			want := make([]BF16, n+1)
			toBF16Generic(want, ref)
			got := make([]BF16, n+1)
			for i := range got {
				got[i] = 0x1234 // must be overwritten (all −Inf: with zeros)
			}
			got[n], want[n] = 5, 5
			SoftmaxRowBF16(got, append([]float32(nil), x...))
			for i := range got {
				if !bf16Close(got[i], want[i], 1e-30) {
					t.Fatalf("n=%d allInf=%v [%d]: %g vs %g", n, allInf, i, got[i].Float32(), want[i].Float32())
				}
			}
		}
	}
}

func TestMulExpDiffBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	for _, n := range raggedLens() {
		x, l := randF32(r, n), make([]float32, n)
		c := float32(r.NormFloat64() * 20)
		for i := range l {
			// exponents c−l from +5 down to −120 (past fp32's range: 0)
			l[i] = c + float32(r.Float64()*125-5)
		}
		got, want := make([]BF16, n+1), make([]BF16, n+1)
		got[n], want[n] = 3, 3
		MulExpDiffBF16(got, x, l, c)
		mulExpDiffBF16Generic(want, x, l, c)
		for i := range got {
			if !bf16Close(got[i], want[i], 1e-37) {
				t.Fatalf("n=%d [%d] x=%g c−l=%g: %g vs %g", n, i, x[i], c-l[i], got[i].Float32(), want[i].Float32())
			}
		}
	}
}

func TestTransposeF32(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, s := range []struct{ rows, cols int }{{1, 1}, {16, 16}, {64, 32}, {17, 33}, {40, 16}, {16, 50}, {7, 100}, {100, 7}, {64, 64}} {
		lds, ldd := s.cols+3, s.rows+5
		src := randF32(r, s.rows*lds)
		dst := make([]float32, s.cols*ldd)
		for i := range dst {
			dst[i] = -1234
		}
		TransposeF32(dst, ldd, src, lds, s.rows, s.cols)
		for c := 0; c < s.cols; c++ {
			for i := 0; i < ldd; i++ {
				want := float32(-1234) // padding stays untouched
				if i < s.rows {
					want = src[i*lds+c]
				}
				if dst[c*ldd+i] != want {
					t.Fatalf("%+v: dst[%d][%d] = %g, want %g", s, c, i, dst[c*ldd+i], want)
				}
			}
		}
	}
}

func TestSoftplus(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	fixed := []float32{0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 0.5, -0.5, 20, -20, 87, -87, 88.5, -88.5, 89, -89, 100, -100, 1e6, -1e6}
	for _, n := range raggedLens() {
		x := make([]float32, n)
		for i := range x {
			if i%4 == 0 {
				x[i] = fixed[r.IntN(len(fixed))]
			} else {
				x[i] = float32(r.NormFloat64() * 10)
			}
		}
		got, want := make([]float32, n+1), make([]float32, n+1)
		got[n], want[n] = 11, 11
		Softplus(got, x)
		softplusGeneric(want, x)
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 4e-7*math.Abs(float64(want[i]))+1.2e-38 {
				t.Fatalf("n=%d [%d] softplus(%g) = %g, want %g", n, i, x[i], got[i], want[i])
			}
		}
		in := append([]float32(nil), x...)
		Softplus(in, in) // in place
		if i := bitsEqual(in, got[:n]); i >= 0 {
			t.Fatalf("n=%d: in place differs at %d", n, i)
		}
	}
}

func TestDecayMaskBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, n := range []int{0, 1, 2, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100} {
		x, l := randF32(r, n*n), make([]float32, n)
		var L float32
		for i := range l {
			L -= float32(r.Float64() * 3) // cumulative log-decays: decreasing
			l[i] = L
		}
		got, want := make([]BF16, n*n+1), make([]BF16, n*n+1)
		for i := range got {
			got[i] = 0x4321 // every element must be written
		}
		got[n*n], want[n*n] = 6, 6
		DecayMaskBF16(got, x, l, n)
		for i := 0; i < n; i++ {
			mulExpDiffBF16Generic(want[i*n:i*n+i+1], x[i*n:i*n+i+1], l[:i+1], l[i])
		}
		for i := range got {
			if !bf16Close(got[i], want[i], 1e-37) {
				t.Fatalf("n=%d [%d,%d]: %g vs %g", n, i/max(n, 1), i%max(n, 1), got[i].Float32(), want[i].Float32())
			}
		}
	}
}

func TestScaleRowsBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, s := range []struct{ rows, cols int }{{1, 1}, {3, 15}, {64, 32}, {5, 16}, {7, 17}, {2, 100}} {
		ldx, ldd := s.cols+5, s.cols+2
		x, sc := randF32(r, s.rows*ldx), randF32(r, s.rows)
		got, want := make([]BF16, s.rows*ldd), make([]BF16, s.rows*ldd)
		for i := range got {
			got[i], want[i] = 0x77, 0x77 // row padding stays untouched
		}
		ScaleRowsBF16(got, ldd, x, ldx, sc, s.rows, s.cols)
		scaleRowsBF16Generic(want, ldd, x, ldx, sc, s.rows, s.cols)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%+v [%d]: %#x vs %#x", s, i, got[i], want[i])
			}
		}
	}
}

func TestScale(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	for _, n := range raggedLens() {
		x := randF32(r, n+1)
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		Scale(got[:n], 0.37)
		scaleGeneric(want[:n], 0.37)
		if i := bitsEqual(got, want); i >= 0 {
			t.Fatalf("n=%d [%d]: %g vs %g", n, i, got[i], want[i])
		}
	}
}
