package amx

import "testing"

func TestTransposeBF16(t *testing.T) {
	for _, sh := range [][2]int{{0, 0}, {1, 1}, {3, 5}, {16, 16}, {17, 33}, {32, 16}, {20, 16}, {256, 64}, {36, 640}, {6, 8}} {
		r, c := sh[0], sh[1]
		src := make([]BF16, r*c)
		for i := range src {
			src[i] = BF16(i*7 + 3)
		}
		for name, f := range map[string]func(dst, src []BF16, r, c int){"selected": TransposeBF16, "generic": transposeBF16Generic} {
			dst := make([]BF16, r*c)
			f(dst, src, r, c)
			for i := 0; i < r; i++ {
				for j := 0; j < c; j++ {
					if dst[j*r+i] != src[i*c+j] {
						t.Fatalf("%s %dx%d: dst[%d][%d] = %d, want %d", name, r, c, j, i, dst[j*r+i], src[i*c+j])
					}
				}
			}
		}
	}
}

func BenchmarkTransposeBF16(b *testing.B) {
	r, c := 4096, 640
	src, dst := make([]BF16, r*c), make([]BF16, r*c)
	b.SetBytes(int64(2 * r * c))
	for i := 0; i < b.N; i++ {
		TransposeBF16(dst, src, r, c)
	}
}

func BenchmarkTransposeBF16Generic(b *testing.B) {
	r, c := 4096, 640
	src, dst := make([]BF16, r*c), make([]BF16, r*c)
	b.SetBytes(int64(2 * r * c))
	for i := 0; i < b.N; i++ {
		transposeBF16Generic(dst, src, r, c)
	}
}
