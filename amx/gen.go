package amx

// The assembly kernels are generated (Go's assembler lacks the bf16 and
// AMX mnemonics, so the generator emits their encodings).
//go:generate go run ./_gen -dir .
