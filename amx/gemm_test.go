package amx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// guard is the number of sentinel elements around every output buffer; a
// kernel that writes one of them wrote out of bounds.
const guard = 64

var sentinel = float32(math.Float32frombits(0x7fc0dead))

const sentinelBF16 = BF16(0x7fad)

func randBF16(r *rand.Rand, n int) []BF16 {
	s := make([]BF16, n)
	for i := range s {
		s[i] = FromFloat32(float32(r.NormFloat64()))
	}
	return s
}

func randF32(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// guarded returns a buffer of n elements surrounded by guard sentinels on
// each side, and the n-element window into it.
func guarded(n int) (all, win []float32) {
	all = make([]float32, n+2*guard)
	for i := range all {
		all[i] = sentinel
	}
	return all, all[guard : guard+n : guard+n]
}

func guardedBF16(n int) (all, win []BF16) {
	all = make([]BF16, n+2*guard)
	for i := range all {
		all[i] = sentinelBF16
	}
	return all, all[guard : guard+n : guard+n]
}

// checkGuards fails if a sentinel outside win, or a stride gap inside it,
// was overwritten.
func checkGuards(t testing.TB, name string, all []float32, m, n, ld int) {
	t.Helper()
	for i, v := range all {
		j := i - guard
		inside := j >= 0 && j < (m-1)*ld+n && j%ld < n
		if !inside && math.Float32bits(v) != math.Float32bits(sentinel) {
			t.Fatalf("%s: wrote outside C at offset %d (m=%d n=%d ld=%d)", name, j, m, n, ld)
		}
	}
}

func checkGuardsBF16(t testing.TB, name string, all []BF16, m, n, ld int) {
	t.Helper()
	for i, v := range all {
		j := i - guard
		inside := j >= 0 && j < (m-1)*ld+n && j%ld < n
		if !inside && v != sentinelBF16 {
			t.Fatalf("%s: wrote outside OutBF16 at offset %d (m=%d n=%d ld=%d)", name, j, m, n, ld)
		}
	}
}

// refMatMul computes the exact (float64) A·B with the epilogue, and the
// sum of |a·b| terms per element (the scale of the rounding error).
func refMatMul(m, k, n int, a []BF16, lda int, b []BF16, ldb int, c0 []float32, ldc int, ep *Epilogue) (ref, mag []float64) {
	ref = make([]float64, m*n)
	mag = make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, g float64
			for kk := 0; kk < k; kk++ {
				p := float64(a[i*lda+kk].Float32()) * float64(b[kk*ldb+j].Float32())
				s += p
				g += math.Abs(p)
			}
			scale := 1.0
			if ep != nil && ep.Scale != 0 {
				scale = float64(ep.Scale)
			}
			s *= scale
			g *= math.Abs(scale)
			if ep != nil {
				if ep.Bias != nil {
					s += float64(ep.Bias[j])
					g += math.Abs(float64(ep.Bias[j]))
				}
				if ep.Act == ActReLU2 {
					s = math.Max(s, 0)
					g = g * (2*math.Abs(s) + g) // |(s+e)² − s²| ≤ e(2|s|+e)
					s *= s
				}
				if ep.ColScale != nil {
					s *= float64(ep.ColScale[j])
					g *= math.Abs(float64(ep.ColScale[j]))
				}
				if ep.Accumulate && c0 != nil {
					s += float64(c0[i*ldc+j])
					g += math.Abs(float64(c0[i*ldc+j]))
				}
			}
			ref[i*n+j], mag[i*n+j] = s, g
		}
	}
	return ref, mag
}

// tolerance: A and B are bf16, so each product a·b is exact in fp32 (8+8
// significant bits ≤ 24). What differs between kernels and the float64
// reference is only the order and rounding of the K additions (plus a
// handful of epilogue operations): a recursive fp32 sum of K terms errs by
// at most γ_K·Σ|a·b| with γ_K ≈ K·2⁻²⁴; VDPBF16PS/TDPBF16PS add pairs
// with their own internal rounding, so we allow (K+8)·2⁻²³·Σ|terms| —
// twice the classical bound plus the epilogue's few roundings.
func tolerance(k int, mag float64) float64 {
	return float64(k+8)*math.Ldexp(1, -23)*mag + 1e-30
}

type shape struct{ m, k, n int }

var testSizes = []int{1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 257, 640}

// shapeMix picks the ragged shapes the kernels are checked on: every
// small size in every position, plus the engine's shapes.
func shapeMix() []shape {
	var s []shape
	small := []int{1, 2, 15, 16, 17, 31, 32, 33}
	for _, m := range small {
		for _, k := range small {
			for _, n := range []int{1, 17, 33, 64, 65} {
				s = append(s, shape{m, k, n})
			}
		}
	}
	for _, x := range testSizes {
		s = append(s, shape{x, 33, 17}, shape{7, x, 65}, shape{5, 31, x})
	}
	s = append(s, shape{17, 257, 255}, shape{33, 640, 257}, shape{256, 256, 256}, shape{16, 256, 256}, shape{255, 65, 640})
	return s
}

type epCase struct {
	name string
	ep   *Epilogue // OutBF16 non-nil asks for a (guarded) bf16 output
	noC  bool      // C = nil: only OutBF16
}

func epilogueCases(r *rand.Rand, n int) []epCase {
	return []epCase{
		{"none", nil, false},
		{"scale+bias", &Epilogue{Scale: 0.125, Bias: randF32(r, n)}, false},
		{"relu2+colscale", &Epilogue{Act: ActReLU2, ColScale: randF32(r, n), Bias: randF32(r, n)}, false},
		{"accumulate+bf16", &Epilogue{Accumulate: true, Scale: -3, OutBF16: []BF16{}}, false},
		{"bf16only", &Epilogue{OutBF16: []BF16{}, Bias: randF32(r, n)}, true},
	}
}

// runMatMul runs kernel kern on fresh guarded buffers and checks guards.
func runMatMul(t testing.TB, kern Kernel, s shape, a []BF16, lda int, pb *Matrix, c0 []float32, ldc int, ep *Epilogue, noC bool, ldo int, name string) ([]float32, []BF16) {
	t.Helper()
	var cAll, c []float32
	if !noC {
		cAll, c = guarded((s.m-1)*ldc + s.n)
		for i := 0; i < s.m; i++ {
			copy(c[i*ldc:i*ldc+s.n], c0[i*ldc:])
		}
	}
	var oAll []BF16
	var e *Epilogue
	if ep != nil {
		cp := *ep
		e = &cp
		if ep.OutBF16 != nil {
			oAll, e.OutBF16 = guardedBF16((s.m-1)*ldo + s.n)
			e.LdOut = ldo
		}
	}
	MatMul(s.m, a, lda, pb, c, ldc, e)
	if c != nil {
		checkGuards(t, name, cAll, s.m, s.n, ldc)
	}
	var out []BF16
	if oAll != nil {
		checkGuardsBF16(t, name, oAll, s.m, s.n, ldo)
		out = e.OutBF16
	}
	return c, out
}

func TestMatMulKernels(t *testing.T) {
	kernels := Available()
	t.Logf("kernels: %v", kernels)
	checkKernels(t, kernels, shapeMix())
}

// checkKernels runs every kernel on every shape and epilogue against the
// float64 reference, with guards around the outputs.
func checkKernels(t *testing.T, kernels []Kernel, shapes []shape) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		lda, ldb, ldc, ldo := s.k+3, s.n+5, s.n+7, s.n+2
		a := randBF16(r, (s.m-1)*lda+s.k)
		b := randBF16(r, (s.k-1)*ldb+s.n)
		c0 := randF32(r, (s.m-1)*ldc+s.n)
		for _, ec := range epilogueCases(r, s.n) {
			en, ep := ec.name, ec.ep
			ref, mag := refMatMul(s.m, s.k, s.n, a, lda, b, ldb, c0, ldc, ep)
			for _, kern := range kernels {
				name := fmt.Sprintf("%v %dx%dx%d %s", kern, s.m, s.k, s.n, en)
				pb := PackFor(kern, nil, s.k, s.n, b, ldb)
				c, out := runMatMul(t, kern, s, a, lda, pb, c0, ldc, ep, ec.noC, ldo, name)
				for i := 0; i < s.m; i++ {
					for j := 0; j < s.n; j++ {
						want, tol := ref[i*s.n+j], tolerance(s.k, mag[i*s.n+j])
						if c != nil {
							if got := float64(c[i*ldc+j]); math.Abs(got-want) > tol {
								t.Fatalf("%s: C[%d][%d] = %g, want %g ± %g", name, i, j, got, want, tol)
							}
							if out != nil && out[i*ldo+j] != FromFloat32(c[i*ldc+j]) {
								t.Fatalf("%s: OutBF16[%d][%d] = %#x, want bf16(C) = %#x", name, i, j, out[i*ldo+j], FromFloat32(c[i*ldc+j]))
							}
						} else if out != nil {
							// bf16 rounding adds up to 2⁻⁹ relative.
							got := float64(out[i*ldo+j].Float32())
							if math.Abs(got-want) > tol+math.Abs(want)/256 {
								t.Fatalf("%s: OutBF16[%d][%d] = %g, want %g", name, i, j, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestBatchInvariance: a row's result must not depend on how many rows
// are multiplied with it or where it sits (the engine batches documents).
func TestBatchInvariance(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, kern := range Available() {
		for _, s := range []shape{{257, 640, 129}, {61, 33, 65}, {100, 511, 300}} {
			pb := PackFor(kern, nil, s.k, s.n, randBF16(r, s.k*s.n), s.n)
			checkRowsAlone(t, kern.String(), s, randBF16(r, s.m*s.k), pb, &Epilogue{Bias: randF32(r, s.n), Act: ActReLU2})
		}
	}
}

// checkRowsAlone fails unless every row of A·B (a few picked, at the
// register tile's edges and elsewhere), multiplied alone or with one to
// four neighbours, is bit-identical to the same row inside the whole
// product.
func checkRowsAlone(t *testing.T, name string, s shape, a []BF16, pb *Matrix, ep *Epilogue) {
	t.Helper()
	big := make([]float32, s.m*s.n)
	MatMul(s.m, a, s.k, pb, big, s.n, ep)
	for _, i := range []int{0, 1, 5, 6, 7, s.m/2 + 1, s.m - 1} {
		for _, rows := range []int{1, 2, 5} {
			if i+rows > s.m {
				continue
			}
			small := make([]float32, rows*s.n)
			MatMul(rows, a[i*s.k:], s.k, pb, small, s.n, ep)
			for j, v := range small {
				if w := big[i*s.n+j]; math.Float32bits(v) != math.Float32bits(w) {
					t.Fatalf("%s %v: row %d (+%d) alone = %g, inside M=%d = %g", name, s, i+j/s.n, j%s.n, v, s.m, w)
				}
			}
		}
	}
}

// TestSelfTest: every available kernel passes the doctor's self-test, and
// the self-test catches a broken kernel.
func TestSelfTest(t *testing.T) {
	for _, k := range Available() {
		if err := SelfTest(k); err != nil {
			t.Errorf("SelfTest(%v): %v", k, err)
		}
	}
	saved := matmulImpl[KernelGeneric]
	defer func() { matmulImpl[KernelGeneric] = saved }()
	base := saved
	// A "kernel" that is wrong in one element must fail — compare it by
	// breaking generic and testing a fast kernel against it, or, on a
	// machine with no fast kernel, breaking generic's output directly.
	matmulImpl[KernelGeneric] = func(m int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue) {
		base(m, a, lda, b, c, ldc, ep)
		if c != nil && m > 3 && b.N > 3 {
			c[3*ldc+3] += 1
		}
	}
	k := Available()[0]
	if k == KernelGeneric {
		return // purego / no fast kernel: nothing to compare a broken generic with
	}
	if err := SelfTest(k); err == nil {
		t.Fatalf("SelfTest(%v) passed against a broken reference", k)
	}
}

// TestPackReuse: packing into a Matrix that held a bigger operand gives
// the same products as a fresh pack (no stale padding), for both layouts.
func TestPackReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, kern := range Available() {
		var dst Matrix
		big := randBF16(r, 300*300)
		PackFor(kern, &dst, 300, 300, big, 300)
		for _, s := range []shape{{5, 33, 17}, {9, 64, 65}, {3, 7, 130}} {
			b := randBF16(r, s.k*s.n)
			a := randBF16(r, s.m*s.k)
			for _, trans := range []bool{false, true} {
				PackTransposedFor(kern, &dst, 300, 300, big, 300)
				var fresh, reused *Matrix
				if trans {
					fresh = PackTransposedFor(kern, nil, s.k, s.n, b, s.k)
					reused = PackTransposedFor(kern, &dst, s.k, s.n, b, s.k)
				} else {
					fresh = PackFor(kern, nil, s.k, s.n, b, s.n)
					reused = PackFor(kern, &dst, s.k, s.n, b, s.n)
				}
				c1, c2 := make([]float32, s.m*s.n), make([]float32, s.m*s.n)
				MatMul(s.m, a, s.k, fresh, c1, s.n, nil)
				MatMul(s.m, a, s.k, reused, c2, s.n, nil)
				if i := bitsEqual(c1, c2); i >= 0 {
					t.Fatalf("%v %v transposed=%v: reused pack differs at %d", kern, s, trans, i)
				}
			}
		}
	}
}

// TestPackTransposed: PackTransposedFor(Bᵀ) multiplies exactly like
// PackFor(B).
func TestPackTransposed(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, kern := range Available() {
		for _, s := range []shape{{7, 1, 1}, {7, 31, 17}, {6, 64, 512}, {13, 257, 65}, {5, 70, 40}, {3, 32, 64}, {4, 64, 256}, {2, 96, 100}} {
			b := randBF16(r, s.k*s.n)
			bt := make([]BF16, s.n*(s.k+3))
			for kk := 0; kk < s.k; kk++ {
				for j := 0; j < s.n; j++ {
					bt[j*(s.k+3)+kk] = b[kk*s.n+j]
				}
			}
			a := randBF16(r, s.m*s.k)
			c1, c2 := make([]float32, s.m*s.n), make([]float32, s.m*s.n)
			MatMul(s.m, a, s.k, PackFor(kern, nil, s.k, s.n, b, s.n), c1, s.n, nil)
			MatMul(s.m, a, s.k, PackTransposedFor(kern, nil, s.k, s.n, bt, s.k+3), c2, s.n, nil)
			if i := bitsEqual(c1, c2); i >= 0 {
				t.Fatalf("%v %v: transposed pack differs at %d", kern, s, i)
			}
		}
	}
}

// TestMatMulNoAlloc: the engine calls MatMul thousands of times a second;
// the selected kernel must not allocate per call.
func TestMatMulNoAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	k := Available()[0]
	for _, s := range []shape{{16, 256, 256}, {40, 640, 70}} {
		a := randBF16(r, s.m*s.k)
		pb := PackFor(k, nil, s.k, s.n, randBF16(r, s.k*s.n), s.n)
		c := make([]float32, s.m*s.n)
		ep := &Epilogue{Bias: randF32(r, s.n), Act: ActReLU2, OutBF16: make([]BF16, s.m*s.n)}
		if n := testing.AllocsPerRun(20, func() { MatMul(s.m, a, s.k, pb, c, s.n, ep) }); n > 0 {
			t.Errorf("%v %v: %v allocations per MatMul", k, s, n)
		}
		q8 := PackQ8(k, s.k, s.n, randF32(r, s.k*s.n), s.n)
		if n := testing.AllocsPerRun(20, func() { MatMul(s.m, a, s.k, q8, c, s.n, ep) }); n > 0 {
			t.Errorf("int8 %v: %v allocations per MatMul", s, n)
		}
	}
}
