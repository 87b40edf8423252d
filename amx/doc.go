// Package amx is onecore's matrix engine: bf16 GEMMs with fp32 accumulation
// and the fused elementwise kernels the model needs.
//
// Weights are packed once (Pack) into the layout of the kernel selected at
// run time — AMX tiles, AVX-512 BF16, AVX2/FMA or pure Go, best first — and
// then multiplied many times (MatMul). ONECORE_KERNEL=amx|avx512bf16|avx2|generic
// forces a kernel; the purego build tag removes every fast path.
//
// Every kernel computes each output element with an accumulation order that
// depends only on K, never on M or on the row's position, so results are
// bit-identical however rows are batched (the engine's batch invariance).
package amx
