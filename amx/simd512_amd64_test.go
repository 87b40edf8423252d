//go:build amd64 && !purego

package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Every fast ToBF16 path (AVX2, and AVX-512 where the CPU has it) and the
// AVX2 AdamWStep against the generic code, bit for bit, whichever one init
// installed.

type toBF16Variant struct {
	name string
	f    func([]BF16, []float32)
}

type adamWVariant struct {
	name string
	f    func(w, g, m, v []float32, c *AdamWConsts)
}

func toBF16Variants(t testing.TB) []toBF16Variant {
	c := CPU()
	var vs []toBF16Variant
	if c.AVX2 && c.FMA && c.OSAVX {
		vs = append(vs, toBF16Variant{"avx2", toBF16Fast})
	}
	if c.AVX512F && c.AVX512BW && c.OSAVX512 {
		vs = append(vs, toBF16Variant{"avx512", toBF16Fast512})
	}
	if len(vs) == 0 {
		t.Skipf("no SIMD ToBF16 on this CPU: %+v", c)
	}
	return vs
}

func adamWVariants(t testing.TB) []adamWVariant {
	c := CPU()
	var vs []adamWVariant
	if c.AVX2 && c.OSAVX {
		vs = append(vs, adamWVariant{"avx2", adamWFast})
	}
	if len(vs) == 0 {
		t.Skipf("no SIMD AdamWStep on this CPU: %+v", c)
	}
	return vs
}

// simdLens: every tail length of the 8-, 16- and 32-wide loops, and the
// brief's ragged sizes.
func simdLens() []int {
	return append(raggedLens(), 4099, 1<<12)
}

// bf16Input fills n floats: specials, random bit patterns (every NaN
// payload, denormals), and exact ties between two bf16s.
func bf16Input(r *rand.Rand, dst []float32) {
	for i := range dst {
		switch i % 4 {
		case 0:
			dst[i] = specials[r.IntN(len(specials))]
		case 1:
			dst[i] = math.Float32frombits(r.Uint32()&0xffff0000 | 0x8000) // a tie
		default:
			dst[i] = math.Float32frombits(r.Uint32())
		}
	}
}

func checkToBF16(t *testing.T, name string, got, want []BF16, src []float32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s n=%d [%d] %#08x: got %#04x want %#04x", name, len(src), i, math.Float32bits(src[i]), got[i], want[i])
		}
	}
}

// TestToBF16Variants: each kernel on ragged lengths, with src and dst
// ending at a guard page (a read or write past n faults).
func TestToBF16Variants(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, v := range toBF16Variants(t) {
		for _, n := range simdLens() {
			src, dst := guarded32(t, n), guarded16(t, n)
			bf16Input(r, src)
			want := make([]BF16, n)
			toBF16Generic(want, src)
			v.f(dst, src)
			checkToBF16(t, v.name, dst, want, src)
		}
	}
}

// TestToBF16Exhaustive16: every value of the upper 16 bits with a few
// lower halves (zero, the tie, just below and above it, all ones): all
// signs, exponents (denormals, Inf, NaN) and the rounding cases.
func TestToBF16Exhaustive16(t *testing.T) {
	lows := []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff}
	src := make([]float32, 0, 1<<16*len(lows))
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range lows {
			src = append(src, math.Float32frombits(hi<<16|lo))
		}
	}
	want := make([]BF16, len(src))
	toBF16Generic(want, src)
	for _, v := range toBF16Variants(t) {
		got := make([]BF16, len(src))
		v.f(got, src)
		checkToBF16(t, v.name, got, want, src)
	}
}

// FuzzToBF16: arbitrary bytes as float32s (any length, any bits).
func FuzzToBF16(f *testing.F) {
	f.Add([]byte{0, 0, 0xc0, 0x7f, 1, 0, 0x80, 0x7f, 0, 0x80, 0x80, 0x3f})
	f.Add(make([]byte, 4*33))
	f.Fuzz(func(t *testing.T, b []byte) {
		src := make([]float32, len(b)/4)
		for i := range src {
			src[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
		}
		want := make([]BF16, len(src)+1)
		toBF16Generic(want, src)
		for _, v := range toBF16Variants(t) {
			got := make([]BF16, len(src)+1)
			v.f(got, src)
			checkToBF16(t, v.name, got, want, src)
		}
	})
}

// adamWConsts are realistic step constants (step 3, lr 1e-3, decay 0.1).
func adamWConsts() *AdamWConsts {
	b1, b2 := float32(0.9), float32(0.95)
	return &AdamWConsts{GradScale: 0.7, Beta1: b1, Beta2: b2, OneMinusB1: 1 - b1, OneMinusB2: 1 - b2,
		Decay: 1 - 1e-3*0.1, InvC2: 1 / (1 - b2*b2*b2), Eps: 1e-8, StepSize: 1e-3 / (1 - b1*b1*b1)}
}

// adamWInput fills the four arrays with typical magnitudes and, every
// few elements, zeros, denormals, huge values, ±Inf and NaN.
func adamWInput(r *rand.Rand, w, g, m, v []float32) {
	odd := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -1e-45, 3e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for i := range w {
		w[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64()*1e-3)
		m[i], v[i] = float32(r.NormFloat64()*1e-3), float32(r.Float64()*1e-6)
		if r.IntN(8) == 0 {
			p := []*float32{&w[i], &g[i], &m[i], &v[i]}[r.IntN(4)]
			*p = odd[r.IntN(len(odd))]
		}
	}
}

// TestAdamWVariants: each kernel against the generic one, bit for bit
// (NaNs compared as NaN), on ragged lengths at guard pages.
func TestAdamWVariants(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	c := adamWConsts()
	for _, vr := range adamWVariants(t) {
		for _, n := range simdLens() {
			w, g, m, v := guarded32(t, n), guarded32(t, n), guarded32(t, n), guarded32(t, n)
			adamWInput(r, w, g, m, v)
			w2, m2, v2 := append([]float32(nil), w...), append([]float32(nil), m...), append([]float32(nil), v...)
			vr.f(w, g, m, v, c)
			adamWGeneric(w2, g, m2, v2, c)
			for _, a := range []struct {
				name      string
				got, want []float32
			}{{"w", w, w2}, {"m", m, m2}, {"v", v, v2}} {
				if i := bitsEqualNaN(a.got, a.want); i >= 0 {
					t.Fatalf("%s n=%d %s[%d]: %g (%#x) vs generic %g (%#x)", vr.name, n, a.name, i,
						a.got[i], math.Float32bits(a.got[i]), a.want[i], math.Float32bits(a.want[i]))
				}
			}
		}
	}
}

// FuzzAdamWStep: random lengths, inputs (with zeros, denormals, huge,
// ±Inf, NaN) and constants taken from the fuzzer's bits.
func FuzzAdamWStep(f *testing.F) {
	f.Add(uint16(33), uint64(1), uint32(0x3f333333), uint32(0x322bcc77))
	f.Add(uint16(4099), uint64(2), uint32(0x3f800000), uint32(0))
	f.Fuzz(func(t *testing.T, n16 uint16, seed uint64, scaleBits, epsBits uint32) {
		n := int(n16) % 5000
		r := rand.New(rand.NewPCG(seed, 35))
		c := adamWConsts()
		c.GradScale, c.Eps = math.Float32frombits(scaleBits), math.Float32frombits(epsBits)
		w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		adamWInput(r, w, g, m, v)
		w2, m2, v2 := append([]float32(nil), w...), append([]float32(nil), m...), append([]float32(nil), v...)
		adamWGeneric(w2, g, m2, v2, c)
		for _, vr := range adamWVariants(t) {
			w1, m1, v1 := append([]float32(nil), w...), append([]float32(nil), m...), append([]float32(nil), v...)
			vr.f(w1, g, m1, v1, c)
			if i := max(bitsEqualNaN(w1, w2), bitsEqualNaN(m1, m2), bitsEqualNaN(v1, v2)); i >= 0 {
				t.Fatalf("%s n=%d: element %d differs from the generic step", vr.name, n, i)
			}
		}
	})
}

// bitsEqualNaN is bitsEqual but any NaN equals any NaN (x86 and Go may
// pick different NaN payloads for an invalid operation like Inf−Inf).
func bitsEqualNaN(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}

// BenchmarkToBF16Kernels times the generic, AVX2 and AVX-512 kernels side
// by side: a head row (the training step's most frequent call), a small,
// an L2-sized and a DRAM-sized slice.
func BenchmarkToBF16Kernels(b *testing.B) {
	for _, n := range []int{32, 2048, 131072, 1 << 20} {
		src, dst := make([]float32, n), make([]BF16, n)
		bf16Input(rand.New(rand.NewPCG(1, 2)), src)
		vs := append([]toBF16Variant{{"generic", toBF16Generic}}, toBF16Variants(b)...)
		for _, v := range vs {
			b.Run(fmt.Sprintf("n=%d/%s", n, v.name), func(b *testing.B) {
				b.SetBytes(int64(6 * n))
				for b.Loop() {
					v.f(dst, src)
				}
			})
		}
	}
}

// BenchmarkAdamWKernels: AdamWStep per kernel (7 streams of 4 bytes per
// element: read w, g, m, v; write w, m, v).
func BenchmarkAdamWKernels(b *testing.B) {
	c := adamWConsts()
	for _, n := range []int{2048, 131072, 1 << 20} {
		w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		r := rand.New(rand.NewPCG(3, 4))
		for i := range w {
			w[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64()*1e-3)
			m[i], v[i] = float32(r.NormFloat64()*1e-3), float32(r.Float64()*1e-6)
		}
		vs := append([]adamWVariant{{"generic", adamWGeneric}}, adamWVariants(b)...)
		for _, vr := range vs {
			b.Run(fmt.Sprintf("n=%d/%s", n, vr.name), func(b *testing.B) {
				b.SetBytes(int64(28 * n))
				for b.Loop() {
					vr.f(w, g, m, v, c)
				}
			})
		}
	}
}

type transposeVariant struct {
	name string
	f    func(dst, src []BF16, r, c int)
}

func transposeVariants(t testing.TB) []transposeVariant {
	c := CPU()
	var vs []transposeVariant
	if c.AVX2 && c.OSAVX {
		vs = append(vs, transposeVariant{"avx2", transposeBF16AVX2})
	}
	if c.AVX512F && c.AVX512BW && c.OSAVX512 {
		vs = append(vs, transposeVariant{"avx512", transposeBF16x512})
	}
	if len(vs) == 0 {
		t.Skipf("no SIMD transpose on this CPU: %+v", c)
	}
	return vs
}

// TestTransposeVariants: every kernel on every combination of ragged
// sizes around the 16-wide blocks, src and dst at guard pages.
func TestTransposeVariants(t *testing.T) {
	sizes := []int{0, 1, 7, 15, 16, 17, 31, 32, 33, 48, 100}
	for _, v := range transposeVariants(t) {
		for _, r := range sizes {
			for _, c := range append(sizes, 640) {
				src, dst := guarded16(t, r*c), guarded16(t, r*c)
				for i := range src {
					src[i] = BF16(i*7 + 3)
					dst[i] = 0xdead
				}
				checkTranspose(t, v, dst, src, r, c)
			}
		}
		for _, sh := range [][2]int{{4096, 640}, {1000, 48}, {48, 1000}} { // odd and even block counts, big strides
			r, c := sh[0], sh[1]
			src, dst := guarded16(t, r*c), guarded16(t, r*c)
			for i := range src {
				src[i] = BF16(i*7 + 3)
			}
			checkTranspose(t, v, dst, src, r, c)
		}
	}
}

func checkTranspose(t *testing.T, v transposeVariant, dst, src []BF16, r, c int) {
	t.Helper()
	v.f(dst, src, r, c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if dst[j*r+i] != src[i*c+j] {
				t.Fatalf("%s %dx%d: dst[%d][%d] = %#x, want %#x", v.name, r, c, j, i, dst[j*r+i], src[i*c+j])
			}
		}
	}
}

// BenchmarkTransposeKernels: the training step's transpose shapes per
// kernel, side by side (64×32 and 64×64 are the frequent ones, 4096×256
// and 4096×640 the large ones).
func BenchmarkTransposeKernels(b *testing.B) {
	for _, sh := range [][2]int{{64, 32}, {64, 64}, {256, 64}, {4096, 256}, {4096, 640}} {
		r, c := sh[0], sh[1]
		src, dst := make([]BF16, r*c), make([]BF16, r*c)
		for i := range src { // real pages: an untouched src would all be the one zero page
			src[i], dst[i] = BF16(i), 1
		}
		vs := append([]transposeVariant{{"generic", transposeBF16Generic}}, transposeVariants(b)...)
		for _, v := range vs {
			b.Run(fmt.Sprintf("%dx%d/%s", r, c, v.name), func(b *testing.B) {
				b.SetBytes(int64(4 * r * c))
				for b.Loop() {
					v.f(dst, src, r, c)
				}
			})
		}
	}
}
