//go:build amd64 && !purego

package amx

import "unsafe"

// The AVX2/FMA kernel: fp32 FMAs on weights widened to fp32 at pack time,
// in panels of nr2 columns (row-major K×nr2 within a panel, zero-padded
// past N). A is widened to fp32 once per call (a vectorised pass, a few
// percent of the multiply), so the inner loop is loads, broadcasts and
// FMAs only — what AVX2-only CPUs run best.
const nr2 = 16

// fmaArgs is fmaPanel's argument block (offsets in amx/_gen/avx2.go).
type fmaArgs struct {
	a     unsafe.Pointer // A row 0, fp32
	lda   uintptr        // bytes
	m     int
	b     unsafe.Pointer // packed panel
	k     int
	c     unsafe.Pointer // C at the panel's first column
	ldc   uintptr        // bytes
	flags uint64         // fScale, fBias, fReLU2, fColScale, fAccum
	scale float32
	_     uint32
	bias  unsafe.Pointer // 16 values
	cs    unsafe.Pointer // 16 values
}

//go:noescape
func fmaPanel(p *fmaArgs)

//go:noescape
func fmaPeak(n int)

func init() {
	packImpl[KernelAVX2] = packAVX2
	matmulImpl[KernelAVX2] = matmulAVX2
	// 24 VFMADD231PS × 8 lanes × 2 FLOPs per iteration.
	peakImpl[KernelAVX2] = func(iters int) float64 {
		fmaPeak(iters)
		return float64(iters) * 24 * 16
	}
}

func packAVX2(dst *Matrix, b []BF16, ldb int, transposed bool) {
	k, n := dst.K, dst.N
	panels := (n + nr2 - 1) / nr2
	size := panels * k * nr2
	if cap(dst.f32) < size {
		dst.f32 = make([]float32, size)
	}
	dst.f32 = dst.f32[:size]
	dst.bf16 = dst.bf16[:0]
	clear(dst.f32)
	for pn := 0; pn < panels; pn++ {
		j0 := pn * nr2
		cols := min(nr2, n-j0)
		panel := dst.f32[pn*k*nr2 : (pn+1)*k*nr2]
		if !transposed {
			for kk := 0; kk < k; kk++ {
				ToFloat32(panel[kk*nr2:kk*nr2+cols], b[kk*ldb+j0:kk*ldb+j0+cols])
			}
			continue
		}
		// Column j of the panel is row j0+j of bt: widen it (vectorised),
		// then scatter it down the panel.
		tmp := getF32(k)
		col := *tmp
		for j := 0; j < cols; j++ {
			ToFloat32(col, b[(j0+j)*ldb:(j0+j)*ldb+k])
			for kk, v := range col {
				panel[kk*nr2+j] = v
			}
		}
		f32Pool.Put(tmp)
	}
}

func matmulAVX2(m int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	k, n := b.K, b.N
	abuf := getF32(m * k)
	defer f32Pool.Put(abuf)
	a32 := *abuf
	for i := 0; i < m; i++ {
		ToFloat32(a32[i*k:(i+1)*k], a[i*lda:i*lda+k])
	}
	cc, ldcc := c, ldc
	if c == nil { // only OutBF16: compute into scratch
		cbuf := getF32(m * n)
		defer f32Pool.Put(cbuf)
		cc, ldcc = *cbuf, n
	}
	var p fmaArgs
	if k > 0 {
		p.a = unsafe.Pointer(&a32[0])
	}
	p.lda = uintptr(k) * 4
	p.k = k
	if ep != nil {
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
	}
	for pn := 0; pn*nr2 < n; pn++ {
		j0 := pn * nr2
		cols := min(nr2, n-j0)
		q := p
		q.m = m
		if k > 0 {
			q.b = unsafe.Pointer(&b.f32[pn*k*nr2])
		}
		if cols == nr2 {
			q.c, q.ldc = unsafe.Pointer(&cc[j0]), uintptr(ldcc)*4
			if q.flags&fBias != 0 {
				q.bias = unsafe.Pointer(&ep.Bias[j0])
			}
			if q.flags&fColScale != 0 {
				q.cs = unsafe.Pointer(&ep.ColScale[j0])
			}
			fmaPanel(&q)
			continue
		}
		// Ragged last panel: run the full-width kernel on a padded tile
		// so no load or store goes past column N, then copy back.
		var bias, cs [nr2]float32
		if q.flags&fBias != 0 {
			copy(bias[:], ep.Bias[j0:n])
			q.bias = unsafe.Pointer(&bias[0])
		}
		if q.flags&fColScale != 0 {
			copy(cs[:], ep.ColScale[j0:n])
			q.cs = unsafe.Pointer(&cs[0])
		}
		tbuf := getF32(m * nr2)
		tile := *tbuf
		if q.flags&fAccum != 0 {
			for i := 0; i < m; i++ {
				copy(tile[i*nr2:i*nr2+cols], cc[i*ldcc+j0:i*ldcc+n])
			}
		}
		q.c, q.ldc = unsafe.Pointer(&tile[0]), nr2*4
		fmaPanel(&q)
		for i := 0; i < m; i++ {
			copy(cc[i*ldcc+j0:i*ldcc+n], tile[i*nr2:i*nr2+cols])
		}
		f32Pool.Put(tbuf)
	}
	if ep != nil && ep.OutBF16 != nil {
		ld := ep.ldOut(n)
		for i := 0; i < m; i++ {
			ToBF16(ep.OutBF16[i*ld:i*ld+n], cc[i*ldcc:i*ldcc+n])
		}
	}
}
