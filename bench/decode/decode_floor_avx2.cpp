// BM_decode_floor_<type>'s AVX2 kernels: the AVX2 lane dots' column loop (lane_dots_avx2.cpp's
// chains, packed_weight_avx2.cpp's interleaved loop) over planes never rebuilt (one, in L1, or
// a ring read from L2): 64 rows as eight chains of 8, a chain's column c the 8 bytes at
// 16 c + 8 (g % 2) of its group's plane, as the interleaved copies lay them. What the lane dots
// do besides (block headers, scales, Q6_K's byte planes) only adds to this.
#include <immintrin.h>

#include <cstdint>

#include "decode_floor.hpp"

namespace lowp::bench {
namespace {

constexpr int kChains = 8;

// Entry i (0..15) of FP4's table as packed_weight_avx2.cpp looks it up (signed_lookup): one
// permute of entries 0-7, bit 3 moved to the sign.
__m256 lookup(__m256 lo, __m256i i) {
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm256_xor_ps(_mm256_permutevar8x32_ps(lo, i), _mm256_and_ps(_mm256_castsi256_ps(_mm256_slli_epi32(i, 28)), sign));
}

template <FloorOps kOps>
float passes(long n, const std::uint8_t* planes, int count) {
  // Each thread's own: the floor runs on every thread of a team at once.
  alignas(64) float x[32], table[8];  // FP4's entries 0-7 (8-15 are their negatives)
  for (int i = 0; i < 32; ++i) x[i] = 0.001f * static_cast<float>(i + 1);
  for (int i = 0; i < 8; ++i) table[i] = 0.5f * static_cast<float>(i);
  const __m256 t0 = _mm256_load_ps(table);
  const __m256i low = _mm256_set1_epi32(0x0F);
  __m256 s[kChains][2], m[kChains], a[kChains];
  for (int g = 0; g < kChains; ++g) {
    s[g][0] = _mm256_set1_ps(0.01f * static_cast<float>(g + 1));
    s[g][1] = _mm256_set1_ps(0.02f * static_cast<float>(g + 1));
    m[g] = _mm256_set1_ps(0.003f);
    a[g] = _mm256_setzero_ps();
  }
  // Q4_K's kernel runs four chains over the 32 columns, then the other four (its scales then
  // stay in the 16 registers); the others all eight at each column.
  constexpr int kAtOnce = kOps == FloorOps::q4_k ? 4 : kChains;
  for (long p = 0; p < n; ++p) {
    // chain g's column c: plane[g / 2] + 16 c + 8 (g % 2)
    const std::uint8_t* plane[kChains / 2];
    for (int g = 0; g < kChains / 2; ++g) plane[g] = floor_group(planes, count, p, g);
    for (int g0 = 0; g0 < kChains; g0 += kAtOnce)
#pragma GCC unroll 32
      for (int c = 0; c < 32; ++c) {
        const __m256 xv = _mm256_set1_ps(x[c]);
#pragma GCC unroll 8
        for (int g = g0; g < g0 + kAtOnce; ++g) {
          const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(plane[g / 2] + 16 * c + 8 * (g % 2)));
          __m256 w;
          if constexpr (kOps == FloorOps::q8_0) {
            w = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), s[g][0]);
          } else if constexpr (kOps == FloorOps::q4_k) {  // a column's low nibbles, fused (k_fused)
            w = _mm256_fmsub_ps(s[g][0], _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_cvtepu8_epi32(b), low)), m[g]);
          } else if constexpr (kOps == FloorOps::q6_k) {
            w = _mm256_mul_ps(s[g][c / 16], _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)));
          } else {  // a column's codes: the low or high nibbles of its bytes
            const __m256i i = _mm256_cvtepu8_epi32(b);
            w = _mm256_mul_ps(lookup(t0, c % 2 ? _mm256_srli_epi32(i, 4) : i), s[g][c / 16]);
          }
          a[g] = _mm256_fmadd_ps(xv, w, a[g]);
        }
      }
    asm volatile("" ::"r"(plane), "r"(x) : "memory");  // each pass reloads its columns, as each lane-dot call does
  }
  __m256 sum = a[0];
  for (int g = 1; g < kChains; ++g) sum = _mm256_add_ps(sum, a[g]);
  alignas(32) float out[8];
  _mm256_store_ps(out, sum);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

}  // namespace

float floor_passes_avx2(FloorOps ops, long n, const std::uint8_t* planes, int count) {
  switch (ops) {
    case FloorOps::q8_0: return passes<FloorOps::q8_0>(n, planes, count);
    case FloorOps::q4_k: return passes<FloorOps::q4_k>(n, planes, count);
    case FloorOps::q6_k: return passes<FloorOps::q6_k>(n, planes, count);
    default: return passes<FloorOps::mxfp4>(n, planes, count);
  }
}

}  // namespace lowp::bench
