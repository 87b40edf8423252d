package amx

// packGeneric widens B to fp32, row-major [K][N].
func packGeneric(dst *Matrix, b []BF16, ldb int, transposed bool) {
	k, n := dst.K, dst.N
	if cap(dst.f32) < k*n {
		dst.f32 = make([]float32, k*n)
	}
	dst.f32 = dst.f32[:k*n]
	for kk := 0; kk < k; kk++ {
		row := dst.f32[kk*n : (kk+1)*n]
		for j := range row {
			if transposed {
				row[j] = b[j*ldb+kk].Float32()
			} else {
				row[j] = b[kk*ldb+j].Float32()
			}
		}
	}
}

// matmulGeneric is the reference kernel: for every output element the sum
// runs over k in ascending order in fp32, whatever m is.
func matmulGeneric(m int, a []BF16, lda int, b *Matrix, c []float32, ldc int, ep *Epilogue) {
	k, n := b.K, b.N
	buf := getF32(n)
	defer f32Pool.Put(buf)
	acc := *buf
	for i := 0; i < m; i++ {
		clear(acc)
		arow := a[i*lda : i*lda+k]
		for kk, av := range arow {
			x := av.Float32()
			if x == 0 {
				continue
			}
			brow := b.f32[kk*n : (kk+1)*n]
			for j, bv := range brow {
				acc[j] += x * bv
			}
		}
		var crow []float32
		if c != nil {
			crow = c[i*ldc : i*ldc+n]
		}
		applyEpilogueRow(i, acc, crow, ep)
	}
}

// applyEpilogueRow finishes row i: acc holds A·B; crow is C's row or nil.
func applyEpilogueRow(i int, acc, crow []float32, ep *Epilogue) {
	if ep == nil {
		copy(crow, acc)
		return
	}
	scale := ep.Scale
	if scale == 0 {
		scale = 1
	}
	var out []BF16
	if ep.OutBF16 != nil {
		ld := ep.ldOut(len(acc))
		out = ep.OutBF16[i*ld : i*ld+len(acc)]
	}
	for j, v := range acc {
		v *= scale
		if ep.Bias != nil {
			v += ep.Bias[j]
		}
		if ep.Act == ActReLU2 {
			if v < 0 {
				v = 0
			}
			v *= v
		}
		if ep.ColScale != nil {
			v *= ep.ColScale[j]
		}
		if crow != nil {
			if ep.Accumulate {
				v += crow[j]
			}
			crow[j] = v
		}
		if out != nil {
			out[j] = FromFloat32(v)
		}
	}
}
