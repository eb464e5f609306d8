// Internal to io/ggml, included by AVX2 kernel files only (compiled with AVX2): 8 rows of a
// block-coded matrix put in the 8 lanes of a register by byte transposes, shared by the AVX2
// lane decoders (dequantize_lanes_avx2.cpp) and lane dots (lane_dots_avx2.cpp).
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lowp::accuracy::ggml::avx2 {

inline const std::uint8_t* row_at(const void* const* rows, int r, std::size_t offset) {
  return static_cast<const std::uint8_t*>(rows[r]) + offset;
}

inline __m256i load32(const std::uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The byte transpose of 8 rows of 32 bytes q[r]: afterwards v[t] holds, as 8-byte words, the
// 8 rows' bytes of columns 2t, 2t+1 (low half) and 2t+16, 2t+17 (high half); column() picks one.
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

// Column c of transpose_bytes' result in the low 8 bytes.
inline __m128i column(const __m256i v[8], int c) {
  const __m256i t = v[(c % 16) / 2];
  const __m128i half = c < 16 ? _mm256_castsi256_si128(t) : _mm256_extracti128_si256(t, 1);
  return c % 2 ? _mm_unpackhi_epi64(half, half) : half;
}

// transpose_bytes' result in memory, read back a column at a time with the widening loads
// (fewer shuffles than column()'s extracts): at(c) is column c's 8 bytes, byte r of row r.
struct Columns {
  alignas(32) std::uint8_t b[256];
  void store(const __m256i v[8]) {
    for (int i = 0; i < 8; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(b) + i, v[i]);
  }
  // Column c as 8 int32, one per lane (every type's small integers are signed bytes).
  __m256i widen(int c) const {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 32 * ((c % 16) / 2) + 16 * (c / 16) + 8 * (c % 2))));
  }
};

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

}  // namespace lowp::accuracy::ggml::avx2
