// Internal to io/ggml, included by AVX2 kernel files only (compiled with AVX2): reading 8 rows
// of blocks side by side (their bytes, transposed with lowp/numerics/byte_transpose_avx2.hpp,
// and their f16 scales), shared by the AVX2 lane decoders (dequantize_lanes_avx2.cpp) and lane
// dots (lane_dots_avx2.cpp).
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lowp/numerics/byte_transpose_avx2.hpp"

namespace lowp::accuracy::ggml::avx2 {

using simd::avx2::Columns;
using simd::avx2::transpose_bytes;

inline const std::uint8_t* row_at(const void* const* rows, int r, std::size_t offset) {
  return static_cast<const std::uint8_t*>(rows[r]) + offset;
}

inline __m256i load32(const std::uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// Column c of transpose_bytes' result in the low 8 bytes.
inline __m128i column(const __m256i v[8], int c) {
  const __m256i t = v[(c % 16) / 2];
  const __m128i half = c < 16 ? _mm256_castsi256_si128(t) : _mm256_extracti128_si256(t, 1);
  return c % 2 ? _mm_unpackhi_epi64(half, half) : half;
}

// The 16 bytes at `offset` in each row, transposed: column(v, c) = byte c of the 8 rows.
inline void bytes16(const void* const* rows, std::size_t offset, __m256i v[8]) {
  __m256i q[8];
  for (int r = 0; r < 8; ++r)
    q[r] = _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row_at(rows, r, offset))));
  transpose_bytes(q, v);
}

// The f16 at `offset` in each row as a float per lane. F16C converts every f16 exactly as
// f16_to_f32 does, except that it may quiet a signalling NaN, which the product it enters
// quiets anyway: the values out are the same bits.
inline __m256 halves(const void* const* rows, std::size_t offset) {
  const auto h = [&](int r) {
    std::uint16_t v;
    std::memcpy(&v, row_at(rows, r, offset), 2);
    return static_cast<short>(v);
  };
  return _mm256_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), h(4), h(5), h(6), h(7)));
}

// Q4_K's and Q5_K's d sc_j and dmin m_j (j < 8) of 8 rows' blocks, a float per lane, from
// the blocks' first 16 bytes (col[c]: byte c of the 8 rows): d and dmin the first two f16, the
// 6-bit sc_j and m_j unpacked from bytes 4 to 15 as scale_min_k4 does (dequantize_simd.hpp),
// each product the scalar decoder's. True when every d and dmin is finite (k_fused).
inline bool k_scales(const __m128i col[16], __m256 s[8], __m256 m[8]) {
  const __m256 d = _mm256_cvtph_ps(_mm_unpacklo_epi8(col[0], col[1]));  // F16C: see halves()
  const __m256 dmin = _mm256_cvtph_ps(_mm_unpacklo_epi8(col[2], col[3]));
  const __m256 zero = _mm256_setzero_ps();
  const __m256 nan_if_not = _mm256_add_ps(_mm256_mul_ps(d, zero), _mm256_mul_ps(dmin, zero));
  __m256i b[12];
  for (int c = 0; c < 12; ++c) b[c] = _mm256_cvtepu8_epi32(col[4 + c]);
  const __m256i six = _mm256_set1_epi32(63), four = _mm256_set1_epi32(15);
  for (int i = 0; i < 8; ++i) {
    __m256i sc, mn;
    if (i < 4) {
      sc = _mm256_and_si256(b[i], six);
      mn = _mm256_and_si256(b[i + 4], six);
    } else {
      sc = _mm256_or_si256(_mm256_and_si256(b[i + 4], four), _mm256_slli_epi32(_mm256_srli_epi32(b[i - 4], 6), 4));
      mn = _mm256_or_si256(_mm256_srli_epi32(b[i + 4], 4), _mm256_slli_epi32(_mm256_srli_epi32(b[i], 6), 4));
    }
    s[i] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc));
    m[i] = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(mn));
  }
  return _mm256_movemask_ps(_mm256_cmp_ps(nan_if_not, zero, _CMP_EQ_OQ)) == 0xFF;
}

// The 16 bytes at `offset` in each of 8 rows as columns (col[c]: byte c of the 8 rows).
inline void columns16(const void* const* rows, std::size_t offset, __m128i col[16]) {
  __m256i v[8];
  bytes16(rows, offset, v);
  for (int c = 0; c < 16; ++c) col[c] = column(v, c);
}

// The same of the blocks at `offset` in each of 8 rows.
inline bool k_scales(const void* const* rows, std::size_t offset, __m256 s[8], __m256 m[8]) {
  __m128i col[16];
  columns16(rows, offset, col);
  return k_scales(col, s, m);
}

}  // namespace lowp::accuracy::ggml::avx2
