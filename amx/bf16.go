package amx

import "math"

// BF16 is a bfloat16 number: the upper 16 bits of an IEEE-754 float32.
type BF16 uint16

// FromFloat32 rounds f to the nearest bf16, ties to even. NaNs stay NaN.
func FromFloat32(f float32) BF16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep it quiet and non-zero
		return BF16(u>>16 | 0x40)
	}
	u += 0x7fff + (u>>16)&1
	return BF16(u >> 16)
}

// Float32 widens b exactly.
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// ToBF16 rounds src into dst (ties to even); len(dst) must be ≥ len(src).
func ToBF16(dst []BF16, src []float32) { toBF16Impl(dst[:len(src)], src) }

// ToFloat32 widens src into dst; len(dst) must be ≥ len(src).
func ToFloat32(dst []float32, src []BF16) { toFloat32Impl(dst[:len(src)], src) }

func toBF16Generic(dst []BF16, src []float32) {
	for i, f := range src {
		dst[i] = FromFloat32(f)
	}
}

func toFloat32Generic(dst []float32, src []BF16) {
	for i, b := range src {
		dst[i] = b.Float32()
	}
}
