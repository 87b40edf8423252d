//go:build !linux

package amx

import "testing"

// guarded32 returns n float32s (no guard page off Linux).
func guarded32(_ testing.TB, n int) []float32 { return make([]float32, n) }

// guarded16 returns n bf16s (no guard page off Linux).
func guarded16(_ testing.TB, n int) []BF16 { return make([]BF16, n) }
