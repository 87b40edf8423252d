//go:build amd64 && !purego

package amx

import (
	"sync"
	"unsafe"
)

// The AVX-512 BF16 kernel: C = A·B with VDPBF16PS, B packed in panels of
// nr512 columns; within a panel, K-pair p holds for each column j the two
// bf16 (B[2p][j], B[2p+1][j]) side by side (the VNNI pair layout), so one
// zmm load gives 16 columns' pairs and one dword broadcast of A's
// (A[i][2p], A[i][2p+1]) multiplies them all. Odd K is padded with a zero
// row; columns past N are zero.
const nr512 = 64

// dpArgs is the argument block of dpbf16Panel (offsets hard-coded in
// amx/_gen/avx512.go). The assembly advances a, c, out and m as it goes.
type dpArgs struct {
	a     unsafe.Pointer // first row of A
	lda   uintptr        // A row stride, bytes
	m     int            // rows left
	b     unsafe.Pointer // packed panel
	kp    int            // full K-pairs (K/2)
	kodd  int            // 1 if K is odd
	c     unsafe.Pointer // C at this panel's first column (if fStoreC)
	ldc   uintptr        // C row stride, bytes
	mask  uint64         // valid columns of the panel, bit j = column j
	flags uint64         // f* epilogue flags
	scale float32
	_     uint32
	bias  unsafe.Pointer // Bias at the panel's first column (if fBias)
	cs    unsafe.Pointer // ColScale likewise (if fColScale)
	out   unsafe.Pointer // OutBF16 at the panel's first column (if fBF16)
	ldo   uintptr        // OutBF16 row stride, bytes
	acc   unsafe.Pointer // partial sums, 64 fp32 per row (fLoadAcc, fRawStore)
	pf    unsafe.Pointer // packed B the next call will read (fPrefetch)
	// The int8 path's (dpbusdPanel) dequantization; unused by dpbf16Panel.
	rs   unsafe.Pointer // row scales at this block's first row
	comp unsafe.Pointer // q8Weights.comp at the panel's first column
	ws   unsafe.Pointer // q8Weights.scale at the panel's first column
}

// Epilogue flags, as in amx/_gen/avx512.go.
const (
	fScale = 1 << iota
	fBias
	fReLU2
	fColScale
	fAccum
	fStoreC
	fBF16
	fLoadAcc
	fRawStore
	fPrefetch
)

// Cache blocking. A block of mc512 rows of A is multiplied by one panel
// of B at a time, so the panel (≤ kc512 K-rows × 64 columns = 32 KiB)
// stays in L1 while 8 register tiles reuse it, and C is written a row
// block at a time. K > kc512 is split into chunks whose partial sums go
// through a small buffer: storing and reloading fp32 is exact, so chunking
// changes no result bit (and depends only on K, keeping batch invariance).
// partialPool holds the K-chunk partial-sum buffers (mc512 × 64 fp32).
var partialPool = sync.Pool{New: func() any { return new([]float32) }}

var (
	mc512   = 256
	kc512   = 256
	l2Panel = 256 << 10 // bytes of packed B kept in L2 while all rows pass
)

//go:noescape
func dpbf16Panel(p *dpArgs)

func init() {
	packImpl[KernelAVX512BF16] = packAVX512
	matmulImpl[KernelAVX512BF16] = matmulAVX512
}

// packAVX512 lays B out in nr512-column panels of K-pairs (see nr512).
// It runs per call for attention operands, so it works a dword (one
// K-pair of one column) at a time, with no per-element bounds checks.
func packAVX512(dst *Matrix, b []BF16, ldb int, transposed bool) {
	k, n := dst.K, dst.N
	kp := (k + 1) / 2
	panels := (n + nr512 - 1) / nr512
	size := panels * kp * 2 * nr512
	if cap(dst.bf16) < size {
		dst.bf16 = make([]BF16, size)
	}
	dst.bf16 = dst.bf16[:size]
	dst.f32 = dst.f32[:0]
	if size == 0 {
		return
	}
	// Pairs viewed as uint32: element 2q is the low half (little endian).
	pairs := unsafe.Slice((*uint32)(unsafe.Pointer(&dst.bf16[0])), size/2)
	if n%nr512 != 0 {
		clear(pairs[(panels-1)*kp*nr512:]) // zero columns past N
	}
	full := k / 2
	for pn := 0; pn < panels; pn++ {
		j0 := pn * nr512
		cols := min(nr512, n-j0)
		panel := pairs[pn*kp*nr512 : (pn+1)*kp*nr512]
		if transposed {
			// Column j of the panel is row j0+j of bt, whose pairs are
			// already adjacent: a dword transpose.
			src := b[j0*ldb : (j0+cols-1)*ldb+k]
			if transposeImpl != nil && k >= 2 {
				transposeImpl(panel, src, ldb, cols, full)
			} else {
				for p := 0; p < full; p++ {
					out := panel[p*nr512 : p*nr512+cols]
					for j := range out {
						out[j] = uint32(src[j*ldb+2*p]) | uint32(src[j*ldb+2*p+1])<<16
					}
				}
			}
			if k&1 != 0 {
				for j := 0; j < cols; j++ {
					panel[full*nr512+j] = uint32(src[j*ldb+k-1])
				}
			}
			continue
		}
		if interleaveImpl != nil && full > 0 {
			interleaveImpl(panel, b[j0:], ldb, cols, full)
		}
		for p := 0; p < full && interleaveImpl == nil; p++ {
			r0 := b[2*p*ldb+j0 : 2*p*ldb+j0+cols]
			r1 := b[(2*p+1)*ldb+j0 : (2*p+1)*ldb+j0+cols]
			out := panel[p*nr512 : p*nr512+cols]
			for j := range out {
				out[j] = uint32(r0[j]) | uint32(r1[j])<<16
			}
		}
		if k&1 != 0 {
			r0 := b[(k-1)*ldb+j0 : (k-1)*ldb+j0+cols]
			out := panel[full*nr512 : full*nr512+cols]
			for j := range out {
				out[j] = uint32(r0[j])
			}
		}
	}
}

// transposeImpl, when set, does packAVX512's transposed case for the
// full K-pairs.
var transposeImpl func(panel []uint32, src []BF16, ldb, cols, pairs int)

// interleaveImpl, when set, does the untransposed case for the full
// K-pairs (rows 2p and 2p+1 of src, columns 0..cols-1).
var interleaveImpl func(panel []uint32, src []BF16, ldb, cols, pairs int)

// epilogueFlags translates ep into dpArgs flags.
func epilogueFlags(p *dpArgs, ep *Epilogue, c []float32) {
	if c != nil {
		p.flags |= fStoreC
	}
	if ep == nil {
		return
	}
	if ep.Scale != 0 && ep.Scale != 1 {
		p.flags |= fScale
		p.scale = ep.Scale
	}
	if ep.Bias != nil {
		p.flags |= fBias
	}
	if ep.Act == ActReLU2 {
		p.flags |= fReLU2
	}
	if ep.ColScale != nil {
		p.flags |= fColScale
	}
	if ep.Accumulate && c != nil {
		p.flags |= fAccum
	}
	if ep.OutBF16 != nil {
		p.flags |= fBF16
	}
}

func matmulAVX512(m int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	k, n := b.K, b.N
	kp := (k + 1) / 2
	chunks := max(1, (k+kc512-1)/kc512)
	kc := (k + chunks - 1) / chunks
	kc += kc & 1 // chunks hold whole K-pairs
	drivePanels(m, n, uintptr(lda)*2, c, ldc, ep, kp*2*nr512*2, chunks > 1, func(tmpl dpArgs, pn, i0, rows int) {
		matmulPanel512(&tmpl, pn, i0, rows, kc, a, lda, b, c, ldc, ep)
	})
}

// drivePanels runs panel for every nr512-column panel of an n-column
// product and every block of mc512 of its m rows, the panels in groups
// whose packed B (panelBytes each) stays in L2 while all row blocks pass.
// The template it hands panel holds A's row stride (ldaBytes), C's, the
// epilogue's flags, and, when the product's K is chunked, the buffer the
// chunks' partial sums go through.
func drivePanels(m, n int, ldaBytes uintptr, c []float32, ldc int, ep *Epilogue, panelBytes int, chunked bool, panel func(tmpl dpArgs, pn, i0, rows int)) {
	var tmpl dpArgs
	tmpl.lda = ldaBytes
	tmpl.ldc = uintptr(ldc) * 4
	epilogueFlags(&tmpl, ep, c)
	if ep != nil {
		tmpl.ldo = uintptr(ep.ldOut(n)) * 2
	}
	if chunked {
		buf := partialPool.Get().(*[]float32)
		defer partialPool.Put(buf)
		if len(*buf) < mc512*nr512 {
			*buf = make([]float32, mc512*nr512)
		}
		tmpl.acc = unsafe.Pointer(&(*buf)[0])
	}
	panels := (n + nr512 - 1) / nr512
	group := max(1, l2Panel/max(1, panelBytes)) // panels per L2-resident group
	for g0 := 0; g0 < panels; g0 += group {
		for i0 := 0; i0 < m; i0 += mc512 {
			rows := min(mc512, m-i0)
			for pn := g0; pn < min(panels, g0+group); pn++ {
				panel(tmpl, pn, i0, rows)
			}
		}
	}
}

// panelArgs is tmpl set for rows i0..i0+rows-1 of panel pn of an
// n-column product: the row count, the panel's valid columns, and where
// its C, bias, column scales and bf16 output start.
func panelArgs(tmpl *dpArgs, pn, i0, rows, n int, c []float32, ldc int, ep *Epilogue) dpArgs {
	j0 := pn * nr512
	cols := min(nr512, n-j0)
	p := *tmpl
	p.m = rows
	if cols == nr512 {
		p.mask = ^uint64(0)
	} else {
		p.mask = 1<<cols - 1
	}
	if c != nil {
		p.c = unsafe.Pointer(&c[i0*ldc+j0])
	}
	if p.flags&fBias != 0 {
		p.bias = unsafe.Pointer(&ep.Bias[j0])
	}
	if p.flags&fColScale != 0 {
		p.cs = unsafe.Pointer(&ep.ColScale[j0])
	}
	if p.flags&fBF16 != 0 {
		p.out = unsafe.Pointer(&ep.OutBF16[i0*int(tmpl.ldo/2)+j0])
	}
	return p
}

// matmulPanel512 computes rows i0..i0+rows-1 of panel pn, K chunk by K
// chunk (kc, even), the last chunk applying the epilogue.
func matmulPanel512(tmpl *dpArgs, pn, i0, rows, kc int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	k := b.K
	kp := (k + 1) / 2
	p := panelArgs(tmpl, pn, i0, rows, b.N, c, ldc, ep)
	if k == 0 {
		dpbf16Panel(&p)
		return
	}
	panel := b.bf16[pn*kp*2*nr512 : (pn+1)*kp*2*nr512]
	for k0 := 0; k0 < k; k0 += kc {
		q := p
		kl := min(kc, k-k0)
		q.a = unsafe.Pointer(&a[i0*lda+k0])
		q.b = unsafe.Pointer(&panel[k0*nr512])
		q.kp, q.kodd = kl/2, kl&1
		if k0 > 0 {
			q.flags |= fLoadAcc
		}
		if k0+kl < k {
			q.flags |= fRawStore
			q.flags |= fPrefetch
			q.pf = unsafe.Pointer(&panel[(k0+kl)*nr512])
		} else if next := (pn + 1) * kp * 2 * nr512; next < len(b.bf16) {
			q.flags |= fPrefetch
			q.pf = unsafe.Pointer(&b.bf16[next])
		}
		dpbf16Panel(&q)
	}
}

//go:noescape
func dpbf16Peak(n int)

func init() {
	// 24 VDPBF16PS × 16 lanes × 2 pairs × 2 FLOPs per iteration.
	peakImpl[KernelAVX512BF16] = func(iters int) float64 {
		dpbf16Peak(iters)
		return float64(iters) * 24 * 64
	}
}
