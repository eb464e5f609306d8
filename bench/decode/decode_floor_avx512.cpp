// BM_decode_floor_<type>'s kernels: the lane dots' column loop (lane_dots_avx512.cpp's chains,
// packed_weight_avx512.cpp's loop) over planes never rebuilt (one, in L1, or a ring read from
// L2). What the lane dots do besides (row loads, byte transposes of rows not interleaved, nibble
// selection, scales) only adds to this.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include <cstdint>

#include "decode_floor.hpp"

namespace lowp::bench {
namespace {

constexpr int kGroups = 4;

template <FloorOps kOps>
float passes(long n, const std::uint8_t* planes, int count) {
  // Each thread's own: the floor runs on every thread of a team at once.
  alignas(64) float x[32], table[16];
  for (int i = 0; i < 32; ++i) x[i] = 0.001f * static_cast<float>(i + 1);
  for (int i = 0; i < 16; ++i) table[i] = 0.5f * static_cast<float>(i % 8) * (i < 8 ? 1.0f : -1.0f);
  const __m512 tv = _mm512_load_ps(table);
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 s[kGroups][2], m[kGroups], a[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    s[g][0] = _mm512_set1_ps(0.01f * static_cast<float>(g + 1));
    s[g][1] = _mm512_set1_ps(0.02f * static_cast<float>(g + 1));
    m[g] = _mm512_set1_ps(0.003f);
    a[g] = _mm512_setzero_ps();
  }
  for (long p = 0; p < n; ++p) {
    // column c of group g: plane[g] + 16 c
    const std::uint8_t* plane[kGroups];
    for (int g = 0; g < kGroups; ++g) plane[g] = floor_group(planes, count, p, g);
#pragma GCC unroll 32
    for (int c = 0; c < 32; ++c) {
      const __m512 xv = _mm512_set1_ps(x[c]);
#pragma GCC unroll 4
      for (int g = 0; g < kGroups; ++g) {
        const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(plane[g] + 16 * c));
        __m512 w;
        if constexpr (kOps == FloorOps::q8_0) {
          w = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)), s[g][0]);
        } else if constexpr (kOps == FloorOps::q4_k) {  // 4-byte words: a shift and a permute (k_fused)
          const __m512i v = _mm512_load_si512(plane[g] + 64 * (c / 4));
          const __m512i nib = c % 4 ? _mm512_srli_epi32(v, static_cast<unsigned>(8 * (c % 4))) : v;
          w = _mm512_fmsub_ps(s[g][0], _mm512_permutexvar_ps(nib, iota), m[g]);
        } else if constexpr (kOps == FloorOps::q6_k) {
          w = _mm512_mul_ps(s[g][c / 16], _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)));
        } else {
          w = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_cvtepu8_epi32(b), tv), s[g][c / 16]);
        }
        a[g] = _mm512_fmadd_ps(xv, w, a[g]);
      }
    }
    asm volatile("" ::"r"(plane), "r"(x) : "memory");  // each pass reloads its columns, as each lane-dot call does
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])));
}

}  // namespace

float floor_passes_avx512(FloorOps ops, long n, const std::uint8_t* planes, int count) {
  switch (ops) {
    case FloorOps::q8_0: return passes<FloorOps::q8_0>(n, planes, count);
    case FloorOps::q4_k: return passes<FloorOps::q4_k>(n, planes, count);
    case FloorOps::q6_k: return passes<FloorOps::q6_k>(n, planes, count);
    default: return passes<FloorOps::mxfp4>(n, planes, count);
  }
}

}  // namespace lowp::bench
