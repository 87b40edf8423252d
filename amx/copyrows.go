package amx

import "fmt"

// CopyRows copies a rows×cols block between strided matrices:
// dst[r·ldd + c] = src[r·lds + c]. Gathering one attention head's columns
// into a contiguous block (or scattering it back) is this with one of the
// strides equal to cols; the fast path moves whole rows in registers
// instead of one memmove call per row.
func CopyRows(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if checkRows("CopyRows", dst, ldd, src, lds, rows, cols) {
		copyRowsImpl(dst, ldd, src, lds, rows, cols)
	}
}

var copyRowsImpl = copyRowsGeneric

func copyRowsGeneric(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	for r := 0; r < rows; r++ {
		copy(dst[r*ldd:r*ldd+cols], src[r*lds:r*lds+cols])
	}
}

// AddRows is CopyRows that adds: dst[r·ldd + c] += src[r·lds + c].
func AddRows(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if checkRows("AddRows", dst, ldd, src, lds, rows, cols) {
		addRowsImpl(dst, ldd, src, lds, rows, cols)
	}
}

var addRowsImpl = addRowsGeneric

func addRowsGeneric(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	for r := 0; r < rows; r++ {
		d := dst[r*ldd : r*ldd+cols]
		for c, v := range src[r*lds : r*lds+cols] {
			d[c] += v
		}
	}
}

// checkRows reports whether a rows×cols block has work and panics, as an
// index out of range would, when it does not fit dst or src (the assembly
// must never be handed one).
func checkRows(name string, dst []float32, ldd int, src []float32, lds, rows, cols int) bool {
	if rows <= 0 || cols <= 0 {
		return false
	}
	if ldd < cols || lds < cols || len(dst) < (rows-1)*ldd+cols || len(src) < (rows-1)*lds+cols {
		panic(fmt.Sprintf("amx: %s %dx%d: ldd=%d len=%d, lds=%d len=%d", name, rows, cols, ldd, len(dst), lds, len(src)))
	}
	return true
}
