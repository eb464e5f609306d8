// AVX2 lane decoders (ggml_types.hpp's LaneDecoder) of Q8_0, Q4_K and Q6_K: 8 rows and 32
// elements at a time. Each row's small integers are made in one register (32 bytes), an
// 8 x 32 byte transpose puts row r in lane r, and the scalar decoders' float operations run
// lane-wise with one scale per lane (dequantize.cpp): q * d, (d sc) q - dmin m, (d sc) q. The
// integers convert to float exactly and each lane's operations are its row's, so every value
// is bitwise the scalar decoder's. Compiled with -ffp-contract=off like them.
#include <immintrin.h>

#include <cstring>

#include "io/ggml/dequantize_simd.hpp"

namespace lowp::accuracy::ggml {
namespace {

const std::uint8_t* row_at(const void* const* rows, int r, std::size_t offset) {
  return static_cast<const std::uint8_t*>(rows[r]) + offset;
}

__m256i load32(const std::uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// q[r]: the 32 int8 of row r (element c is byte c). Writes out[c * ld + r] = op(float(q[.][c]), c)
// for c < 32, with op(f, c) the type's float operations on column c's 8 lanes.
template <class Op>
void transpose_out(const __m256i q[8], const Op& op, float* out, std::size_t ld) {
  // In each 128-bit half L (columns 16L ..): a[p], a[4 + p]: 16-bit words j = columns j, 8 + j of rows 2p, 2p+1.
  __m256i a[8];
  for (int p = 0; p < 4; ++p) {
    a[p] = _mm256_unpacklo_epi8(q[2 * p], q[2 * p + 1]);
    a[4 + p] = _mm256_unpackhi_epi8(q[2 * p], q[2 * p + 1]);
  }
  const auto column = [&](__m128i v, int c) {  // the low 8 bytes of v: column c, rows 0-7
    _mm256_storeu_ps(out + static_cast<std::size_t>(c) * ld, op(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), c));
  };
  for (int h = 0; h < 2; ++h)
    for (int u = 0; u < 2; ++u) {
      // 32-bit words j: column 8h + 4u + j of rows 0-3, then of rows 4-7.
      const __m256i* s = a + 4 * h;
      const __m256i r03 = u ? _mm256_unpackhi_epi16(s[0], s[1]) : _mm256_unpacklo_epi16(s[0], s[1]);
      const __m256i r47 = u ? _mm256_unpackhi_epi16(s[2], s[3]) : _mm256_unpacklo_epi16(s[2], s[3]);
      for (int e = 0; e < 2; ++e) {
        // 64-bit words j: column c + j (+ 16 in the high half), rows 0-7.
        const int c = 8 * h + 4 * u + 2 * e;
        const __m256i v = e ? _mm256_unpackhi_epi32(r03, r47) : _mm256_unpacklo_epi32(r03, r47);
        const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
        column(lo, c);
        column(_mm_unpackhi_epi64(lo, lo), c + 1);
        column(hi, c + 16);
        column(_mm_unpackhi_epi64(hi, hi), c + 17);
      }
    }
}

// The f16 at `offset` in each row as a float per lane. F16C converts every f16 exactly as
// f16_to_f32 does, except that it may quiet a signalling NaN, which the product it enters
// quiets anyway: the values out are the same bits.
__m256 halves(const void* const* rows, std::size_t offset) {
  const auto h = [&](int r) {
    std::uint16_t v;
    std::memcpy(&v, row_at(rows, r, offset), 2);
    return static_cast<short>(v);
  };
  return _mm256_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), h(4), h(5), h(6), h(7)));
}

__m256 lanes(const int v[8]) {  // exact: |v| < 2^24
  return _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v)));
}

// Q8_0 (34-byte blocks of 32): q * d.
void lanes_q8_0(const void* const* rows, std::size_t k0, std::size_t n, float* out, std::size_t ld) {
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, out += 32 * ld) {
    __m256i q[8];
    for (int r = 0; r < 8; ++r) q[r] = load32(row_at(rows, r, u * 34 + 2));
    const __m256 dv = halves(rows, u * 34);
    transpose_out(q, [&](__m256 f, int) { return _mm256_mul_ps(f, dv); }, out, ld);
  }
}

// Q4_K (144-byte blocks of 256): sub-block j (32 elements) is the low (j even) or high nibbles
// of bytes 16 + 32 (j / 2) ..; (d sc_j) q - dmin m_j.
void lanes_q4_k(const void* const* rows, std::size_t k0, std::size_t n, float* out, std::size_t ld) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  __m256 d = _mm256_setzero_ps(), dmin = d;
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, out += 32 * ld) {
    const std::size_t blk = u / 8;
    const int j = static_cast<int>(u % 8);
    if (u == k0 / 32 || j == 0) {
      d = halves(rows, blk * 144);
      dmin = halves(rows, blk * 144 + 2);
    }
    __m256i q[8];
    int sc[8], mn[8];
    for (int r = 0; r < 8; ++r) {
      const std::uint8_t* b = row_at(rows, r, blk * 144);
      scale_min_k4(j, b + 4, sc[r], mn[r]);
      const __m256i v = load32(b + 16 + 32 * (j / 2));
      q[r] = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(v, 4) : v, low);
    }
    const __m256 sv = _mm256_mul_ps(d, lanes(sc)), mv = _mm256_mul_ps(dmin, lanes(mn));
    transpose_out(q, [&](__m256 f, int) { return _mm256_sub_ps(_mm256_mul_ps(sv, f), mv); }, out, ld);
  }
}

// Q6_K (210-byte blocks of 256, two halves of 128): quarter t of a half takes the low (t < 2)
// or high nibbles of ql[32 (t % 2) ..] and bits 2t, 2t+1 of qh, minus 32; (d sc) q with one
// scale per 16 elements.
void lanes_q6_k(const void* const* rows, std::size_t k0, std::size_t n, float* out, std::size_t ld) {
  const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  __m256 d = _mm256_setzero_ps();
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, out += 32 * ld) {
    const std::size_t blk = u / 8;
    const int h = static_cast<int>(u % 8) / 4, t = static_cast<int>(u % 4);
    if (u == k0 / 32 || u % 8 == 0) d = halves(rows, blk * 210 + 208);
    const __m128i shift_lo = _mm_cvtsi32_si128(4 * (t / 2)), shift_hi = _mm_cvtsi32_si128(2 * t);
    __m256i q[8];
    int s0[8], s1[8];
    for (int r = 0; r < 8; ++r) {
      const std::uint8_t* b = row_at(rows, r, blk * 210);
      const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192 + 8 * h);
      s0[r] = sc[2 * t];
      s1[r] = sc[2 * t + 1];
      const __m256i lo4 = _mm256_and_si256(_mm256_srl_epi16(load32(b + 64 * h + 32 * (t % 2)), shift_lo), low);
      const __m256i hi2 = _mm256_and_si256(_mm256_srl_epi16(load32(b + 128 + 32 * h), shift_hi), two);
      q[r] = _mm256_sub_epi8(_mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4)), bias);
    }
    const __m256 sv0 = _mm256_mul_ps(d, lanes(s0)), sv1 = _mm256_mul_ps(d, lanes(s1));
    transpose_out(q, [&](__m256 f, int c) { return _mm256_mul_ps(c < 16 ? sv0 : sv1, f); }, out, ld);
  }
}

}  // namespace

LaneDecoder lane_decoder_avx2(std::uint32_t type) {
  switch (type) {
    case q8_0: return &lanes_q8_0;
    case q4_k: return &lanes_q4_k;
    case q6_k: return &lanes_q6_k;
    default: return nullptr;
  }
}

}  // namespace lowp::accuracy::ggml
