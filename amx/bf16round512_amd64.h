// AVX-512 fp32 → bf16 rounding shared by rows_amd64.s and split_amd64.s
// (included by both: Go assembler macros and file-local data are per
// file). FromFloat32's rounding: to nearest even, NaN → (u>>16)|0x40.

DATA bfc<>+0(SB)/4, $0x00007fff
DATA bfc<>+4(SB)/4, $0x00000001
DATA bfc<>+8(SB)/4, $0x00000040
GLOBL bfc<>(SB), RODATA|NOPTR, $12

// BFCONST loads BF16's constants into Z16..Z18.
#define BFCONST \
	VPBROADCASTD bfc<>+0(SB), Z16 \
	VPBROADCASTD bfc<>+4(SB), Z17 \
	VPBROADCASTD bfc<>+8(SB), Z18

// BF16 rounds the 16 floats of src to bf16 in the low halves of dst's
// dwords (clobbers Z4, K2).
#define BF16(src, dst) \
	VPSRLD $16, src, Z4 \
	VPANDD Z17, Z4, dst \
	VPADDD Z16, dst, dst \
	VPADDD src, dst, dst \
	VPSRLD $16, dst, dst \
	VCMPPS $3, src, src, K2 \
	VPORD Z18, Z4, K2, dst
