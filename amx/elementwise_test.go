package amx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// raggedLens cover every tail length of the 8- and 32-wide fast paths.
func raggedLens() []int {
	var ns []int
	for n := 0; n <= 70; n++ {
		ns = append(ns, n)
	}
	return append(ns, 255, 256, 257, 640, 1000)
}

// specials are fp32 values whose bf16 rounding is easy to get wrong.
var specials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000),
	math.Float32frombits(0x3f808000),                                   // tie, round to even (down)
	math.Float32frombits(0x3f818000),                                   // tie, round to even (up)
	math.Float32frombits(0x3f808001), math.Float32frombits(0x7f7fffff), // rounds to Inf
	math.Float32frombits(0x00000001), math.Float32frombits(0x807fffff), // denormals
}

func TestBF16Conversion(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range raggedLens() {
		src := make([]float32, n)
		for i := range src {
			if i%3 == 0 {
				src[i] = specials[r.IntN(len(specials))]
			} else {
				src[i] = math.Float32frombits(r.Uint32())
			}
		}
		got, want := make([]BF16, n+1), make([]BF16, n+1)
		got[n], want[n] = 0xbeef, 0xbeef
		ToBF16(got, src)
		toBF16Generic(want, src)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("ToBF16 n=%d [%d] %#08x: got %#04x want %#04x", n, i, math.Float32bits(src[i]), got[i], want[i])
			}
		}
		back, backWant := make([]float32, n+1), make([]float32, n+1)
		ToFloat32(back, got[:n])
		toFloat32Generic(backWant, got[:n])
		for i := range back {
			if math.Float32bits(back[i]) != math.Float32bits(backWant[i]) {
				t.Fatalf("ToFloat32 n=%d [%d]: got %g want %g", n, i, back[i], backWant[i])
			}
		}
	}
}

func bitsEqual(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestElementwiseExact: ReLU², Add, Axpy and RoPE do the same roundings in
// the same order as the generic code, so they must agree bit for bit.
func TestElementwiseExact(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range raggedLens() {
		x, y := randF32(r, n), randF32(r, n)
		if n > 3 {
			x[1] = float32(math.NaN())
			x[2] = float32(math.Copysign(0, -1))
		}
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		ReLU2(got)
		relu2Generic(want)
		if i := bitsEqual(got, want); i >= 0 {
			t.Fatalf("ReLU2 n=%d [%d]: %g vs %g", n, i, got[i], want[i])
		}
		got, want = append([]float32(nil), y...), append([]float32(nil), y...)
		Add(got, x)
		addGeneric(want, x)
		if i := bitsEqual(got, want); i >= 0 {
			t.Fatalf("Add n=%d [%d]", n, i)
		}
		got, want = append([]float32(nil), y...), append([]float32(nil), y...)
		Axpy(0.37, x, got)
		axpyGeneric(0.37, x, want)
		if i := bitsEqual(got, want); i >= 0 {
			t.Fatalf("Axpy n=%d [%d]", n, i)
		}
		h := n / 2
		cs, sn := randF32(r, h), randF32(r, h)
		got, want = append([]float32(nil), y...), append([]float32(nil), y...)
		RoPE(got, cs, sn)
		ropeGeneric(want[:h], want[h:2*h], cs, sn)
		if i := bitsEqual(got, want); i >= 0 {
			t.Fatalf("RoPE n=%d [%d]", n, i)
		}
	}
}

// TestElementwiseReductions: Dot, RMSNorm and softmax sum in a different
// order (8 lanes) than the generic loop, and softmax uses a polynomial
// exp, so they agree within a few fp32 ulps, not bitwise. Bounds: a sum of
// n terms differs by ≤ n·2⁻²³·Σ|terms| between orders; the exp polynomial
// is good to ~2 ulps.
func TestElementwiseReductions(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range raggedLens() {
		a, b := randF32(r, n), randF32(r, n)
		var mag float64
		for i := range a {
			mag += math.Abs(float64(a[i] * b[i]))
		}
		got, want := Dot(a, b), dotGeneric(a, b)
		if tol := float64(n+1) * 0x1p-23 * mag; math.Abs(float64(got-want)) > tol {
			t.Fatalf("Dot n=%d: %g vs %g (tol %g)", n, got, want, tol)
		}
		if n == 0 {
			continue
		}
		g := randF32(r, n)
		d1, d2 := make([]float32, n), make([]float32, n)
		b1, b2 := make([]BF16, n), make([]BF16, n)
		RMSNorm(d1, b1, a, g, 1e-5)
		rmsNormGeneric(d2, b2, a, g, 1e-5)
		for i := range d1 {
			if math.Abs(float64(d1[i]-d2[i])) > float64(n+8)*0x1p-23*math.Abs(float64(d2[i])) {
				t.Fatalf("RMSNorm n=%d [%d]: %g vs %g", n, i, d1[i], d2[i])
			}
			if b1[i] != FromFloat32(d1[i]) {
				t.Fatalf("RMSNorm bf16 n=%d [%d]: %#x is not bf16(%g)", n, i, b1[i], d1[i])
			}
		}
		// Only one destination: the other must be optional.
		RMSNorm(nil, b1, a, g, 1e-5)
		RMSNorm(d1, nil, a, g, 1e-5)

		s1 := make([]float32, n)
		for i := range s1 {
			s1[i] = 8 * a[i]
		}
		if n > 2 {
			s1[n/2] = float32(math.Inf(-1))
		}
		s2 := append([]float32(nil), s1...)
		SoftmaxRow(s1)
		softmaxGeneric(s2)
		for i := range s1 {
			if math.Abs(float64(s1[i]-s2[i])) > float64(n+8)*0x1p-23*float64(s2[i])+1e-30 {
				t.Fatalf("SoftmaxRow n=%d [%d]: %g vs %g", n, i, s1[i], s2[i])
			}
		}
		if n > 2 && s1[n/2] != 0 {
			t.Fatalf("SoftmaxRow n=%d: exp(-Inf) = %g", n, s1[n/2])
		}
		inf := make([]float32, n)
		for i := range inf {
			inf[i] = float32(math.Inf(-1))
		}
		SoftmaxRow(inf)
		for i, v := range inf {
			if v != 0 {
				t.Fatalf("SoftmaxRow all -Inf n=%d [%d] = %g", n, i, v)
			}
		}
	}
}

func TestSelfTestElementwise(t *testing.T) {
	if err := SelfTestElementwise(); err != nil {
		t.Fatal(err)
	}
}
