// AVX2 lane dots (ggml_types.hpp's LaneDot) of Q4_0, Q8_0, Q4_K, Q5_K and Q6_K: the one-row
// GEMV's decode and fma chains in one pass, 64 rows as eight groups of 8 (row r of a group in
// lane r; eight independent chains hide the fma's latency). For each 32 columns a group's rows'
// small integers are made and byte-transposed as the AVX2 lane decoders do
// (dequantize_lanes_avx2.cpp), column c's 8 bytes widen to a float per lane and take the scalar
// decoder's float operations with one scale per lane, and acc = fma(x_c, w, acc) follows at once
// instead of a store to a tile. Every weight is bitwise dequantize()'s float and every chain the
// scalar fma chain over k in order. Compiled with -ffp-contract=off like the decoders.
#include <immintrin.h>

#include "io/ggml/byte_lanes_avx2.hpp"
#include "io/ggml/dequantize_simd.hpp"

namespace lowp::accuracy::ggml {
namespace {

using namespace avx2;

constexpr int kGroup = 8;  // rows per group (lanes of a register)
constexpr int kGroups = static_cast<int>(kLaneDotRows) / kGroup;

// The groups' chains over 32 columns: a[g] = fma(x[c], op(g, c, float(column c of t[g])), a[g]).
template <class Op>
[[gnu::always_inline]] inline void chains(const Columns t[kGroups], const float* x, __m256 a[kGroups], const Op& op) {
#pragma GCC unroll 32
  for (int c = 0; c < 32; ++c) {
    const __m256 xv = _mm256_set1_ps(x[c]);
    for (int g = 0; g < kGroups; ++g) a[g] = _mm256_fmadd_ps(xv, op(g, c, _mm256_cvtepi32_ps(t[g].widen(c))), a[g]);
  }
}

// q[r] = quants(row r of group g's block bytes after d), transposed into t.
template <class Quants>
[[gnu::always_inline]] inline void transposed(const void* const* rows, std::size_t offset, Columns& t, const Quants& quants) {
  __m256i q[kGroup], v[kGroup];
  for (int r = 0; r < kGroup; ++r) q[r] = quants(row_at(rows, r, offset));
  transpose_bytes(q, v);
  t.store(v);
}

// Q8_0 and Q4_0, blocks of 32 that start with their f16 d: quants(p) makes a row's 32 small
// integers from the block's bytes after d (at p); each element is q d.
template <std::size_t kBytes, class Quants>
[[gnu::always_inline]] inline void dot_d32(const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                                           float* acc, const Quants& quants) {
  __m256 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm256_loadu_ps(acc + kGroup * g);
  Columns t[kGroups];
  __m256 d[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    for (int g = 0; g < kGroups; ++g) {
      transposed(rows + kGroup * g, u * kBytes + 2, t[g], quants);
      d[g] = halves(rows + kGroup * g, u * kBytes);
    }
    chains(t, x, a, [&](int g, int, __m256 f) { return _mm256_mul_ps(f, d[g]); });
  }
  for (int g = 0; g < kGroups; ++g) _mm256_storeu_ps(acc + kGroup * g, a[g]);
}

void dot_q8_0(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  dot_d32<34>(rows, k0, n, x, acc, [](const std::uint8_t* p) { return load32(p); });
}

// Q4_0: low nibbles are elements 0..15, high ones 16..31, less 8.
void dot_q4_0(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  dot_d32<18>(rows, k0, n, x, acc, [](const std::uint8_t* p) {
    const __m128i low = _mm_set1_epi8(0x0F), b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_sub_epi8(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low)),
                           _mm256_set1_epi8(8));
  });
}

// Q4_K (144-byte blocks of 256) and Q5_K (176, kFive): sub-block j is the low (j even) or high
// nibbles of the 32 bytes at 16 (Q5_K: 48) + 32 (j / 2), Q5_K adding bit j of the 32 bytes at 16
// as 16; (d sc_j) q - dmin m_j with sc_j and m_j unpacked from the 12 bytes at 4 (scale_min_k4),
// for each group's 8 rows at a block's start.
template <bool kFive>
void dot_q45_k(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  constexpr std::size_t bytes = kFive ? 176 : 144, qs = kFive ? 48 : 16;
  const __m256i low = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  __m256 s[kGroups][8], m[kGroups][8];  // the blocks' d sc_j and dmin m_j
  __m256 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm256_loadu_ps(acc + kGroup * g);
  Columns t[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int j = static_cast<int>(u % 8);
    for (int g = 0; g < kGroups; ++g) {
      const void* const* rg = rows + kGroup * g;
      if (u == k0 / 32 || j == 0) k_scales(rg, blk * bytes, s[g], m[g]);
      const __m128i bit = _mm_cvtsi32_si128(j);
      transposed(rg, blk * bytes, t[g], [&](const std::uint8_t* b) {
        const __m256i v = load32(b + qs + 32 * (j / 2));
        __m256i q = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(v, 4) : v, low);
        if constexpr (kFive) {
          const __m256i h = _mm256_and_si256(_mm256_srl_epi16(load32(b + 16), bit), one);
          q = _mm256_or_si256(q, _mm256_slli_epi16(h, 4));
        }
        return q;
      });
    }
    chains(t, x, a, [&](int g, int, __m256 f) { return _mm256_sub_ps(_mm256_mul_ps(s[g][j], f), m[g][j]); });
  }
  for (int g = 0; g < kGroups; ++g) _mm256_storeu_ps(acc + kGroup * g, a[g]);
}

// Q6_K (210-byte blocks of 256, two halves of 128): quarter t of half h takes the low (t < 2) or
// high nibbles of ql[64 h + 32 (t % 2) ..] and bits 2t, 2t+1 of qh[32 h ..], minus 32; (d sc_i) q
// with one int8 scale per 16 elements (the 16 bytes at 192, d at 208).
void dot_q6_k(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  __m256 s[kGroups][16];  // the block's d sc_i
  __m256 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm256_loadu_ps(acc + kGroup * g);
  Columns t[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int h = static_cast<int>(u % 8) / 4, q4 = static_cast<int>(u % 4);
    const __m128i shift_lo = _mm_cvtsi32_si128(4 * (q4 / 2)), shift_hi = _mm_cvtsi32_si128(2 * q4);
    for (int g = 0; g < kGroups; ++g) {
      const void* const* rg = rows + kGroup * g;
      if (u == k0 / 32 || u % 8 == 0) {
        const __m256 d = halves(rg, blk * 210 + 208);
        __m256i v[8];
        bytes16(rg, blk * 210 + 192, v);
        for (int i = 0; i < 16; ++i) s[g][i] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(column(v, i))));
      }
      transposed(rg, blk * 210, t[g], [&](const std::uint8_t* b) {
        const __m256i lo4 = _mm256_and_si256(_mm256_srl_epi16(load32(b + 64 * h + 32 * (q4 % 2)), shift_lo), low);
        const __m256i hi2 = _mm256_and_si256(_mm256_srl_epi16(load32(b + 128 + 32 * h), shift_hi), two);
        return _mm256_sub_epi8(_mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4)), bias);
      });
    }
    const int i0 = 8 * h + 2 * q4;
    chains(t, x, a, [&](int g, int c, __m256 f) { return _mm256_mul_ps(s[g][i0 + c / 16], f); });
  }
  for (int g = 0; g < kGroups; ++g) _mm256_storeu_ps(acc + kGroup * g, a[g]);
}

}  // namespace

LaneDot lane_dot_avx2(std::uint32_t type) {
  switch (type) {
    case q8_0: return &dot_q8_0;
    case q4_0: return &dot_q4_0;
    case q4_k: return &dot_q45_k<false>;
    case q5_k: return &dot_q45_k<true>;
    case q6_k: return &dot_q6_k;
    default: return nullptr;
  }
}

}  // namespace lowp::accuracy::ggml
