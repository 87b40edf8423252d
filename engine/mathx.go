package engine

import "math"

// expf is a fast float32 exp (Cephes expf: range reduction by ln 2 and a
// degree-6 polynomial, ~1 ulp). Inputs below −87.3 give 0 (no subnormals):
// decays that small are zero for every purpose here.
func expf(x float32) float32 {
	if x < -87.3 {
		return 0
	}
	if x > 88.7 {
		return float32(math.Inf(1))
	}
	t := x * 1.44269504088896341
	var k int32
	if t >= 0 {
		k = int32(t + 0.5)
	} else {
		k = int32(t - 0.5)
	}
	fk := float32(k)
	r := x - fk*0.693359375 + fk*2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	// 2^k may be subnormal for k < −126: split the scaling in two.
	if k < -126 {
		p *= math.Float32frombits(uint32(k+126+127) << 23)
		return p * math.Float32frombits(uint32(1)<<23) // 2^-126
	}
	return p * math.Float32frombits(uint32(k+127)<<23)
}
