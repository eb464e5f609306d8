// AVX2 lane decoders (ggml_types.hpp's LaneDecoder) of Q4_0, Q8_0, Q4_K, Q5_K and Q6_K: 8 rows
// and 32 elements at a time. Each row's small integers are made in one register (32 bytes), an
// 8 x 32 byte transpose puts row r in lane r, and the scalar decoders' float operations run
// lane-wise with one scale per lane (dequantize.cpp): q d, (d sc) q - dmin m, (d sc) q. The
// integers convert to float exactly and each lane's operations are its row's, so every value
// is bitwise the scalar decoder's. Compiled with -ffp-contract=off like them.
#include <immintrin.h>

#include <cstring>

#include "io/ggml/byte_lanes_avx2.hpp"
#include "io/ggml/dequantize_simd.hpp"

namespace lowp::accuracy::ggml {
namespace {

using namespace avx2;

// q[r]: the 32 int8 of row r (element c is byte c). Writes out[c * ld + r] = op(float(q[.][c]), c)
// for c < 32, with op(f, c) the type's float operations on column c's 8 lanes.
template <class Op>
void transpose_out(const __m256i q[8], const Op& op, float* out, std::size_t ld) {
  __m256i v[8];
  transpose_bytes(q, v);
  Columns t;
  t.store(v);
#pragma GCC unroll 32
  for (int c = 0; c < 32; ++c) _mm256_storeu_ps(out + static_cast<std::size_t>(c) * ld, op(_mm256_cvtepi32_ps(t.widen(c)), c));
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

// Q4_0 (18-byte blocks of 32): low nibbles are elements 0..15, high ones 16..31; (q - 8) d.
void lanes_q4_0(const void* const* rows, std::size_t k0, std::size_t n, float* out, std::size_t ld) {
  const __m128i low = _mm_set1_epi8(0x0F);
  const __m256i eight = _mm256_set1_epi8(8);
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, out += 32 * ld) {
    __m256i q[8];
    for (int r = 0; r < 8; ++r) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row_at(rows, r, u * 18 + 2)));
      const __m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low));
      q[r] = _mm256_sub_epi8(nib, eight);
    }
    const __m256 dv = halves(rows, u * 18);
    transpose_out(q, [&](__m256 f, int) { return _mm256_mul_ps(f, dv); }, out, ld);
  }
}

// Q4_K (144-byte blocks of 256) and Q5_K (176, kFive): sub-block j (32 elements) is the low
// (j even) or high nibbles of the bytes at 16 (Q5_K: 48) + 32 (j / 2), Q5_K adding bit j of the
// 32 bytes at 16 as 16; (d sc_j) q - dmin m_j, the 6-bit sc_j and m_j unpacked from the 12
// bytes at 4 as scale_min_k4 does, for the 8 rows at once.
template <bool kFive>
void lanes_q45_k(const void* const* rows, std::size_t k0, std::size_t n, float* out, std::size_t ld) {
  constexpr std::size_t bytes = kFive ? 176 : 144, qs = kFive ? 48 : 16;
  const __m256i low = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  __m256 s[8], m[8];  // the block's d sc_j and dmin m_j
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, out += 32 * ld) {
    const std::size_t blk = u / 8;
    const int j = static_cast<int>(u % 8);
    if (u == k0 / 32 || j == 0) k_scales(rows, blk * bytes, s, m);
    const __m128i bit = _mm_cvtsi32_si128(j);
    __m256i q[8];
    for (int r = 0; r < 8; ++r) {
      const __m256i v = load32(row_at(rows, r, blk * bytes + qs + 32 * (j / 2)));
      q[r] = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(v, 4) : v, low);
      if constexpr (kFive) {
        const __m256i h = _mm256_and_si256(_mm256_srl_epi16(load32(row_at(rows, r, blk * bytes + 16)), bit), one);
        q[r] = _mm256_or_si256(q[r], _mm256_slli_epi16(h, 4));
      }
    }
    const __m256 sv = s[j], mv = m[j];
    transpose_out(q, [&](__m256 f, int) { return _mm256_sub_ps(_mm256_mul_ps(sv, f), mv); }, out, ld);
  }
}

// Q6_K (210-byte blocks of 256, two halves of 128): quarter t of a half takes the low (t < 2)
// or high nibbles of ql[32 (t % 2) ..] and bits 2t, 2t+1 of qh, minus 32; (d sc) q with one
// int8 scale per 16 elements.
void lanes_q6_k(const void* const* rows, std::size_t k0, std::size_t n, float* out, std::size_t ld) {
  const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  __m256 s[16];  // the block's d sc_i
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, out += 32 * ld) {
    const std::size_t blk = u / 8;
    const int h = static_cast<int>(u % 8) / 4, t = static_cast<int>(u % 4);
    if (u == k0 / 32 || u % 8 == 0) {
      const __m256 d = halves(rows, blk * 210 + 208);
      __m256i v[8];
      bytes16(rows, blk * 210 + 192, v);
      for (int i = 0; i < 16; ++i) s[i] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(column(v, i))));
    }
    const __m128i shift_lo = _mm_cvtsi32_si128(4 * (t / 2)), shift_hi = _mm_cvtsi32_si128(2 * t);
    __m256i q[8];
    for (int r = 0; r < 8; ++r) {
      const std::uint8_t* b = row_at(rows, r, blk * 210);
      const __m256i lo4 = _mm256_and_si256(_mm256_srl_epi16(load32(b + 64 * h + 32 * (t % 2)), shift_lo), low);
      const __m256i hi2 = _mm256_and_si256(_mm256_srl_epi16(load32(b + 128 + 32 * h), shift_hi), two);
      q[r] = _mm256_sub_epi8(_mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4)), bias);
    }
    const __m256 sv0 = s[8 * h + 2 * t], sv1 = s[8 * h + 2 * t + 1];
    transpose_out(q, [&](__m256 f, int c) { return _mm256_mul_ps(c < 16 ? sv0 : sv1, f); }, out, ld);
  }
}

}  // namespace

LaneDecoder lane_decoder_avx2(std::uint32_t type) {
  switch (type) {
    case q8_0: return &lanes_q8_0;
    case q4_0: return &lanes_q4_0;
    case q4_k: return &lanes_q45_k<false>;
    case q5_k: return &lanes_q45_k<true>;
    case q6_k: return &lanes_q6_k;
    default: return nullptr;
  }
}

}  // namespace lowp::accuracy::ggml
