//go:build amd64 && !purego

package amx

import "unsafe"

// dpbusdPanel is dpbf16Panel's int8 twin (amx/_gen): A is quantized rows
// (unsigned bytes, quads), B a q8Weights panel, and the int32 sums are
// dequantized (rs, comp, ws) before the same epilogue.
//
//go:noescape
func dpbusdPanel(p *dpArgs)

// quantRows512 is quantRowsGeneric for bytes 0..k-1 of each row (the
// caller fills the padding): the row maximum is taken on the bf16 bit
// patterns with the sign cleared, which order like their magnitudes.
//
//go:noescape
func quantRows512(m int, a *BF16, lda, k int, dst *uint8, ldd int, scales *float32)

func init() {
	c := CPU()
	if !(c.AVX512F && c.AVX512BW && c.AVX512VNNI && c.OSAVX512) {
		return
	}
	q8Native = true
	quantRowsImpl = quantRowsAVX512
	matmulQ8Impl = matmulQ8AVX512
}

func quantRowsAVX512(m int, a []BF16, lda, k int, dst []uint8, ldd int, scales []float32) {
	if m == 0 {
		return
	}
	if k == 0 {
		quantRowsGeneric(m, a, lda, k, dst, ldd, scales)
		return
	}
	_ = a[(m-1)*lda+k-1]
	_ = dst[(m-1)*ldd+ldd-1]
	_ = scales[m-1]
	quantRows512(m, &a[0], lda, k, &dst[0], ldd, &scales[0])
	for i := 0; i < m && k < ldd; i++ {
		for kk := k; kk < ldd; kk++ {
			dst[i*ldd+kk] = 128
		}
	}
}

// matmulQ8AVX512 drives dpbusdPanel through drivePanels as matmulAVX512
// drives dpbf16Panel, K split into chunks of kcQ8 whose int32 partial sums
// go through the same buffer (exact, and dependent on K only).
func matmulQ8AVX512(m int, aq []uint8, ldd int, rs []float32, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	q := b.q8
	chunks := max(1, (q.kq*4+kcQ8-1)/kcQ8)
	kcq := (q.kq + chunks - 1) / chunks // quads per chunk
	drivePanels(m, b.N, uintptr(ldd), c, ldc, ep, q.kq*nr512*4, chunks > 1, func(tmpl dpArgs, pn, i0, rows int) {
		q8Panel512(&tmpl, pn, i0, rows, kcq, aq, ldd, rs, b, c, ldc, ep)
	})
}

// q8Panel512 computes rows i0..i0+rows-1 of panel pn, kcq quads at a
// time, the last chunk dequantizing and applying the epilogue.
func q8Panel512(tmpl *dpArgs, pn, i0, rows, kcq int, aq []uint8, ldd int, rs []float32, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	q := b.q8
	j0 := pn * nr512
	p := panelArgs(tmpl, pn, i0, rows, b.N, c, ldc, ep)
	p.rs = unsafe.Pointer(&rs[i0])
	p.comp = unsafe.Pointer(&q.comp[j0])
	p.ws = unsafe.Pointer(&q.scale[j0])
	if q.kq == 0 {
		dpbusdPanel(&p) // K = 0: zero sums, the epilogue alone (A, B unread)
		return
	}
	panelBytes := q.kq * nr512 * 4
	panel := q.data[pn*panelBytes : (pn+1)*panelBytes]
	for q0 := 0; q0 < q.kq; q0 += kcq {
		r := p
		ql := min(kcq, q.kq-q0)
		r.a = unsafe.Pointer(&aq[i0*ldd+q0*4])
		r.b = unsafe.Pointer(&panel[q0*nr512*4])
		r.kp, r.kodd = ql, 0
		if q0 > 0 {
			r.flags |= fLoadAcc
		}
		if q0+ql < q.kq {
			r.flags |= fRawStore | fPrefetch
			r.pf = unsafe.Pointer(&panel[(q0+ql)*nr512*4])
		} else if next := (pn + 1) * panelBytes; next < len(q.data) {
			r.flags |= fPrefetch
			r.pf = unsafe.Pointer(&q.data[next])
		}
		dpbusdPanel(&r)
	}
}
