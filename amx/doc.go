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
//
// Layout of the package: gemm.go (API), gemm_generic.go (reference),
// gemm_{avx512,avx2,amx}_amd64.{go,s} (fast kernels; the .s files are
// written by the generator in _gen/, run `go generate ./amx/`, because Go's
// assembler has no mnemonics for VDPBF16PS or the AMX instructions),
// cpu*.go (CPUID/XGETBV/arch_prctl detection), elementwise*.go and
// softmax_amd64.s (elementwise kernels), rows*.go (row-batched kernels of
// prefill), decode_attn*.go (one-token attention of decode), train_*.go,
// decay*.go, split*.go, rmsbwd*.go, copyrows*.go (training kernels),
// pack_amd64.s (vectorised packing), selftest.go (the check `onecore
// doctor` runs on every fast path).
package amx
