// Included by AVX-512 kernel files only (after simd_warnings.hpp and <immintrin.h>): the byte
// transpose that one-row GEMV kernels use to put 16 rows of a block-coded matrix in the 16
// lanes of a register. 16 rows' 32 bytes become a Plane, where column c's 16 bytes (byte r:
// row r) sit side by side, ready to widen to one integer per lane (ggml's blocks in
// accuracy/src/io/ggml/lane_dots_avx512.cpp, PackedWeight in quant/src/gemm).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace lowp::simd {

// 16 rows' 32 bytes transposed: the 512 bytes of a Plane hold column c's 16 rows (byte r: row
// r) at col(c). transpose() leaves them in registers, where bytewise operations (nibbles, bit
// planes) apply to all 512 at once before store() writes them.
struct Plane {
  alignas(64) std::uint8_t b[512];
  // Where store() puts column c: register c % 16 / 2, 128-bit quarter 2 (c / 16) + c % 2.
  static constexpr int col(int c) { return 64 * ((c % 16) / 2) + 16 * (2 * (c / 16) + c % 2); }
  const __m128i* at(int c) const { return reinterpret_cast<const __m128i*>(b + col(c)); }
};

// q[r]: row r's 32 bytes. Returns v[m] with, per 64-bit word, 8 rows' bytes of one column.
[[gnu::always_inline]] inline void transpose(const __m256i q[16], __m512i v[8]) {
  // Quarters of z[i]: row i's bytes 0-15, 16-31, then row 8 + i's; each quarter transposes on
  // its own as 8 rows of 16 bytes.
  __m512i z[8], a[8];
  for (int i = 0; i < 8; ++i) z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(q[i]), q[i + 8], 1);
  for (int p = 0; p < 4; ++p) {  // 16-bit words j: columns j (lo), 8 + j (hi) of rows 2p, 2p+1
    a[p] = _mm512_unpacklo_epi8(z[2 * p], z[2 * p + 1]);
    a[4 + p] = _mm512_unpackhi_epi8(z[2 * p], z[2 * p + 1]);
  }
  for (int h = 0; h < 2; ++h)
    for (int u = 0; u < 2; ++u) {
      const __m512i* s = a + 4 * h;  // 32-bit words j: column 8h + 4u + j of rows 0-3, 4-7
      const __m512i r03 = u ? _mm512_unpackhi_epi16(s[0], s[1]) : _mm512_unpacklo_epi16(s[0], s[1]);
      const __m512i r47 = u ? _mm512_unpackhi_epi16(s[2], s[3]) : _mm512_unpacklo_epi16(s[2], s[3]);
      v[4 * h + 2 * u] = _mm512_unpacklo_epi32(r03, r47);  // 64-bit words j: column 2m + j of the quarter
      v[4 * h + 2 * u + 1] = _mm512_unpackhi_epi32(r03, r47);
    }
}

// Writes v (transpose()'s result, after any bytewise operation) so that Plane::at(c) is column c:
// the words of rows 0-7 and 8-15 of a column side by side.
[[gnu::always_inline]] inline void store(const __m512i v[8], Plane& t) {
  const __m512i idx = _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7);
  for (int m = 0; m < 8; ++m) _mm512_store_si512(t.b + 64 * m, _mm512_permutexvar_epi64(idx, v[m]));
}

[[gnu::always_inline]] inline void transpose_store(const __m256i q[16], Plane& t) {
  __m512i v[8];
  transpose(q, v);
  store(v, t);
}

}  // namespace lowp::simd
