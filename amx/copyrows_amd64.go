//go:build amd64 && !purego

package amx

//go:noescape
func copyRows512(dst *float32, lddBytes uintptr, src *float32, ldsBytes uintptr, rows, cols int)

//go:noescape
func addRows512(dst *float32, lddBytes uintptr, src *float32, ldsBytes uintptr, rows, cols int)

func init() {
	if c := CPU(); c.AVX512F && c.OSAVX512 {
		copyRowsImpl = func(dst []float32, ldd int, src []float32, lds, rows, cols int) {
			copyRows512(&dst[0], uintptr(ldd)*4, &src[0], uintptr(lds)*4, rows, cols)
		}
		addRowsImpl = func(dst []float32, ldd int, src []float32, lds, rows, cols int) {
			addRows512(&dst[0], uintptr(ldd)*4, &src[0], uintptr(lds)*4, rows, cols)
		}
	}
}
