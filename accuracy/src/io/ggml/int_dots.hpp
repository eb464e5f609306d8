// Internal to lowp_accuracy: llama.cpp's integer matmul as its CPU backend runs it for a
// block-coded weight (the recipe key act.ggml). Each input row is quantized to the weight type's
// activation type (ggml's vec_dot_type: Q8_K for the K-quants and IQ4_XS, Q8_0 for Q4_0, Q5_0,
// Q8_0 and IQ4_NL, Q8_1 for Q4_1 and Q5_1), as llama.cpp's x86 code does; each output element is
// then the blocks' integer dot products, exact in int32, combined in float32 in one order every
// instruction set keeps:
//   Q2_K, Q4_K, Q5_K: per block b in order, s += (a.d w.d) float(isum_b);
//     s -= (a.d w.dmin) float(imin_b)
//   Q3_K, Q6_K, IQ4_XS: per block b in order, s += (a.d w.d) float(isum_b)
//   (from s = 0, each operation rounded once, no fused multiply-adds);
//   Q4_0, Q5_0, Q8_0, IQ4_NL, Q4_1, Q5_1: as llama.cpp's x86 code (tinyBLAS, the AVX2 vec_dot),
//     eight lanes, lane l the elements 4 l .. 4 l + 3 of each block: per block in order
//     acc_l = fma(w.d a.d, float(isum_bl), acc_l); s = ((acc_0 + acc_4) + (acc_2 + acc_6)) +
//     ((acc_1 + acc_5) + (acc_3 + acc_7)); Q4_1 and Q5_1 add to s the chain m = sum_b w.m a.s
//     (a.s the f16 of d times its codes' sum), each term rounded, added in block order.
// llama.cpp sums the super-blocks' terms in SIMD lanes, in an order that differs between its
// instruction sets.
#pragma once
#include <cstddef>
#include <cstdint>

#include "lowp/numerics/cpu.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy::ggml {

// ggml's blocks (ggml-common.h), f16 fields as bytes so that a block may lie at any address.
struct BlockQ8K {  // activations of the K-quants: d = 1 / iscale, 16 sums of 16 codes
  float d;
  std::int8_t qs[256];
  std::int16_t bsums[16];
};
static_assert(sizeof(BlockQ8K) == 292);
struct BlockQ8_0 {
  std::uint8_t d[2];
  std::int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34);
struct BlockQ8_1 {  // Q8_0 with s = f16(d sum(qs)), d before its f16 rounding
  std::uint8_t d[2], s[2];
  std::int8_t qs[32];
};
static_assert(sizeof(BlockQ8_1) == 36);
struct BlockQ4_0 {  // codes q - 8: element j the low nibble of qs[j], element j + 16 its high one
  std::uint8_t d[2];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);
struct BlockQ5_0 {  // Q4_0's nibbles with a fifth bit (bit e of qh for element e), codes q - 16
  std::uint8_t d[2];
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);
struct BlockQ4_1 {  // Q4_0's nibbles unsigned, the value q d + m
  std::uint8_t d[2], m[2];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20);
struct BlockQ5_1 {  // Q4_1 with Q5_0's fifth bits
  std::uint8_t d[2], m[2];
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);
struct BlockIQ4NL {  // Q4_0's nibble order, each nibble an index into kvalues_iq4nl
  std::uint8_t d[2];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockIQ4NL) == 18);
struct BlockQ2K {  // 16 sub-blocks of 16: scale (low nibble) and min (high) bytes, 2-bit codes
  std::uint8_t scales[16];
  std::uint8_t qs[64];
  std::uint8_t d[2], dmin[2];
};
static_assert(sizeof(BlockQ2K) == 84);
struct BlockQ3K {  // Q2_K's code order with a third bit in hmask (set: + 0, clear: - 4), 6-bit scales - 32
  std::uint8_t hmask[32];
  std::uint8_t qs[64];
  std::uint8_t scales[12];
  std::uint8_t d[2];
};
static_assert(sizeof(BlockQ3K) == 110);
struct BlockIQ4XS {  // 8 sub-blocks of 32 in IQ4_NL's nibble order, 6-bit scales - 32
  std::uint8_t d[2];
  std::uint8_t scales_h[2];
  std::uint8_t scales_l[4];
  std::uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4XS) == 136);
struct BlockQ4K {  // 8 sub-blocks of 32: 6-bit scales and mins packed in 12 bytes, 4-bit codes
  std::uint8_t d[2], dmin[2];
  std::uint8_t scales[12];
  std::uint8_t qs[128];
};
static_assert(sizeof(BlockQ4K) == 144);
struct BlockQ5K {  // Q4_K with a fifth bit: sub-block j's from bit j of each of qh's 32 bytes
  std::uint8_t d[2], dmin[2];
  std::uint8_t scales[12];
  std::uint8_t qh[32];
  std::uint8_t qs[128];
};
static_assert(sizeof(BlockQ5K) == 176);
struct BlockQ6K {  // 16 sub-blocks of 16: low 4 bits, high 2 bits, int8 scales, f16 d
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  std::uint8_t d[2];
};
static_assert(sizeof(BlockQ6K) == 210);

// The dot of a weight row's first n elements with an activation row, in the order above.
using IntDot = float (*)(const void* w, const void* a, std::size_t n);

// The product of weight type `type` with instruction set `isa` (available on this CPU; every
// one gives the same bits), or nullptr when lowp has none: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS have them.
const quant::ActProduct* int_product(std::uint32_t type, Isa isa);

// llama.cpp's activation quantizers on x86, lowp's for a block with a NaN or infinity (llama.cpp
// does not define one): its d NaN and its codes 0.
//   Q8_K (quantize_row_q8_K_ref): max the first element of largest magnitude, iscale = -127 / max,
//   q = min(127, round-half-even(iscale x)), d = 1 / iscale, bsums the sums of 16 codes.
void quantize_q8_k(const float* x, std::size_t n, void* out);
//   Q8_0 (its AVX path): amax the largest magnitude, d = f16(amax / 127), q = round-half-even(x
//   (127 / amax)) (0 when amax is 0).
void quantize_q8_0(const float* x, std::size_t n, void* out);
//   Q8_1 (its AVX2 path): Q8_0's d and codes, s = f16(d' sum(q)) with d' = amax / 127 unrounded.
void quantize_q8_1(const float* x, std::size_t n, void* out);

// The scalar dots (the definition above) and the AVX2 ones (int_dots_avx2.cpp).
float dot_q4_k_q8_k(const void* w, const void* a, std::size_t n);
float dot_q5_k_q8_k(const void* w, const void* a, std::size_t n);
float dot_q6_k_q8_k(const void* w, const void* a, std::size_t n);
float dot_q8_0_q8_0(const void* w, const void* a, std::size_t n);
float dot_q4_0_q8_0(const void* w, const void* a, std::size_t n);
float dot_q5_0_q8_0(const void* w, const void* a, std::size_t n);
float dot_iq4_nl_q8_0(const void* w, const void* a, std::size_t n);
float dot_q4_1_q8_1(const void* w, const void* a, std::size_t n);
float dot_q5_1_q8_1(const void* w, const void* a, std::size_t n);
float dot_q2_k_q8_k(const void* w, const void* a, std::size_t n);
float dot_q3_k_q8_k(const void* w, const void* a, std::size_t n);
float dot_iq4_xs_q8_k(const void* w, const void* a, std::size_t n);
IntDot int_dot_avx2(std::uint32_t type);

}  // namespace lowp::accuracy::ggml
