// Internal to io/ggml: SIMD decoders of single blocks, each bitwise the scalar decoder of its
// type in dequantize.cpp (dequantize() picks them at run time).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "io/ggml/ggml_types.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::accuracy::ggml {

// Non-linear 4-bit grid of IQ4_NL / IQ4_XS (kvalues_iq4nl).
inline constexpr std::array<std::int8_t, 16> kIq4nl = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                       1,    13,   25,  38,  53,  69,  89,  113};

inline float half_at(const std::uint8_t* p) {  // a block's f16 field, at any alignment
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// The 6-bit scale and min of sub-block j from Q4_K / Q5_K's 12 packed bytes (get_scale_min_k4).
inline void scale_min_k4(int j, const std::uint8_t* q, int& d, int& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q3_K's 6-bit scale j (j < 16) minus 32, from its 12 packed bytes: the low 4 bits in nibble
// j / 8 of byte j % 8, the high 2 in bits 2 (j / 4) of byte 8 + j % 4.
inline int scale_q3_k(const std::uint8_t* sc, int j) {
  const int low = (sc[j % 8] >> (4 * (j / 8))) & 0x0F, high = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | high << 4) - 32;
}

// IQ4_XS's 6-bit scale of sub-block j (j < 8) minus 32: the low 4 bits in nibble j % 2 of
// scales_l[j / 2], the high 2 in bits 2 j of the 16-bit little-endian scales_h.
inline int scale_iq4_xs(const std::uint8_t* scales_h, const std::uint8_t* scales_l, int j) {
  const int h = scales_h[0] | scales_h[1] << 8;
  return (((scales_l[j / 2] >> (4 * (j % 2))) & 0x0F) | ((h >> (2 * j)) & 3) << 4) - 32;
}

// k_fused: Q4_K / Q5_K's weight (d sc_j) q - dmin m_j as one fused multiply-subtract is bitwise
// the scalar decoder's product then difference when d and dmin are finite: d (an f16, 11
// significant bits) times the 6-bit sc_j has at most 17 and that times the 5-bit q at most 22,
// so the product is exact and the fmsub rounds the same difference once. Blocks with an
// infinite or NaN d or dmin take the product and difference, whose NaN (an invalid product's,
// or the first operand's) an fmsub need not return. The lane dots use it: one operation less
// per weight, a tenth to a sixth of their time.
//
// Prefetches into L1 the bytes of an interleaved copy's group (its bytes from `group`) that hold
// the group's rows' bytes [offset, offset + n). The lane dots of Q6_K call it half a block
// ahead of their reads: with the GEMV's prefetch of the next pass alone, the Q6_K step ran at
// 55 % of its kernel's speed in cache; with it too, 15-25 % faster on the Zen 5 (a block ahead
// measured 3 % slower at one thread, two blocks 15 % slower; Q4_K and Q8_0 measured no gain at
// any distance, so they do not). Integer arithmetic: the span may lie past the copy's end,
// which a prefetch ignores.
inline void prefetch_group(const void* group, std::size_t offset, std::size_t n) {
  const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(group) + kLaneDotInterleave * offset;
  for (std::size_t b = 0; b < kLaneDotInterleave * n; b += 64) __builtin_prefetch(reinterpret_cast<const void*>(p + b), 0, 3);
}

// Widens one block of its type to block_size(type) floats.
using BlockDecoder = void (*)(const std::uint8_t* block, float* out);

// The AVX2 decoder of `type` (dequantize_avx2.cpp), or nullptr when it has none; call only when
// the CPU has AVX2.
BlockDecoder block_decoder_avx2(std::uint32_t type);
// The AVX2 lane decoder of `type` (dequantize_lanes_avx2.cpp), or nullptr.
LaneDecoder lane_decoder_avx2(std::uint32_t type);
// The AVX2 lane dot of `type` (lane_dots_avx2.cpp), or nullptr; call only when the CPU has AVX2.
LaneDot lane_dot_avx2(std::uint32_t type);
// Its interleaved form (ggml_types.hpp's lane_dot_interleaved), or nullptr.
LaneDot lane_dot_interleaved_avx2(std::uint32_t type);
// The AVX-512 lane dot of `type` (lane_dots_avx512.cpp), or nullptr; call only when the CPU
// has AVX-512.
LaneDot lane_dot_avx512(std::uint32_t type);
// Its interleaved form and the word of the copy that form reads (ggml_types.hpp's
// lane_dot_interleaved), or a null dot.
InterleavedDot lane_dot_interleaved_avx512(std::uint32_t type);

}  // namespace lowp::accuracy::ggml
