// Included by AVX2 kernel files only (compiled with AVX2): the byte transpose that one-row GEMV
// kernels use to put 8 rows of a block-coded matrix in the 8 lanes of a register (ggml's blocks
// in accuracy/src/io/ggml, PackedWeight in quant/src/gemm; byte_transpose_avx512.hpp is the
// AVX-512 one).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace lowp::simd::avx2 {

// The byte transpose of 8 rows of 32 bytes q[r]: afterwards v[t] holds, as 8-byte words, the
// 8 rows' bytes of columns 2t, 2t+1 (low half) and 2t+16, 2t+17 (high half).
inline void transpose_bytes(const __m256i q[8], __m256i v[8]) {
  // In each 128-bit half L (columns 16L ..): a[p], a[4 + p]: 16-bit words j = columns j, 8 + j of rows 2p, 2p+1.
  __m256i a[8];
  for (int p = 0; p < 4; ++p) {
    a[p] = _mm256_unpacklo_epi8(q[2 * p], q[2 * p + 1]);
    a[4 + p] = _mm256_unpackhi_epi8(q[2 * p], q[2 * p + 1]);
  }
  for (int h = 0; h < 2; ++h)
    for (int u = 0; u < 2; ++u) {
      // 32-bit words j: column 8h + 4u + j of rows 0-3, then of rows 4-7.
      const __m256i* s = a + 4 * h;
      const __m256i r03 = u ? _mm256_unpackhi_epi16(s[0], s[1]) : _mm256_unpacklo_epi16(s[0], s[1]);
      const __m256i r47 = u ? _mm256_unpackhi_epi16(s[2], s[3]) : _mm256_unpacklo_epi16(s[2], s[3]);
      v[4 * h + 2 * u] = _mm256_unpacklo_epi32(r03, r47);  // 64-bit words j: column 8h + 4u + j, rows 0-7
      v[4 * h + 2 * u + 1] = _mm256_unpackhi_epi32(r03, r47);
    }
}

// transpose_bytes' result in memory, read back a column at a time with the widening loads
// (fewer shuffles than extracting it from the registers).
struct Columns {
  alignas(32) std::uint8_t b[256];
  void store(const __m256i v[8]) {
    for (int i = 0; i < 8; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(b) + i, v[i]);
  }
  // Column c's 8 bytes (byte r: row r) as 8 int32, one per lane, sign-extended (the small
  // integers of every caller fit a signed byte).
  __m256i widen(int c) const {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 32 * ((c % 16) / 2) + 16 * (c / 16) + 8 * (c % 2))));
  }
};

}  // namespace lowp::simd::avx2
