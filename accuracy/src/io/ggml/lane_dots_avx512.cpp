// AVX-512 lane dots (ggml_types.hpp's LaneDot) of Q4_0, Q8_0, Q4_K, Q5_K and Q6_K: the one-row
// GEMV's decode and fma chains in one pass, 64 rows as four groups of 16 (row r of a group in
// lane r; four independent chains hide the fma's latency). For each 32 columns a group's rows' small integers
// (one 32-byte register a row, or the packed bytes they come from) are transposed as bytes, so
// that column c's 16 rows are 16 bytes in a row; those widen to a float per lane and take the
// scalar decoder's float operations lane-wise with one scale per lane (dequantize.cpp), then
// acc = fma(x_c, w, acc). Every weight is bitwise dequantize()'s float and every chain the
// scalar fma chain over k in order. Compiled with -ffp-contract=off like the decoders.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include <cstring>

#include "io/ggml/dequantize_simd.hpp"
#include "lowp/numerics/byte_transpose_avx512.hpp"

namespace lowp::accuracy::ggml {
namespace {

using simd::Plane;
using simd::store;
using simd::transpose;
using simd::transpose_store;

constexpr int kGroup = 16;  // rows per group (lanes of a register)
constexpr int kGroups = static_cast<int>(kLaneDotRows) / kGroup;

const std::uint8_t* row_at(const void* const* rows, int r, std::size_t offset) {
  return static_cast<const std::uint8_t*>(rows[r]) + offset;
}

__m256i load32(const std::uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// q[r] = the 32 bytes at `offset` in row r of a group.
[[gnu::always_inline]] inline void load_rows(const void* const* rows, std::size_t offset, __m256i q[kGroup]) {
  for (int r = 0; r < kGroup; ++r) q[r] = load32(row_at(rows, r, offset));
}

// The f16 at `offset` in each of 16 rows, one float per lane (F16C: see halves() in the AVX2
// lane decoders for why its signalling-NaN quieting gives the same products).
__m512 halves(const void* const* rows, std::size_t offset) {
  alignas(32) std::uint16_t h[kGroup];
  for (int r = 0; r < kGroup; ++r) std::memcpy(h + r, row_at(rows, r, offset), 2);
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
}

// The f16 whose low and high bytes are columns lo, lo + 1 of a transposed Plane, as floats.
__m512 halves(const Plane& t, int lo) {
  const __m128i a = _mm_load_si128(t.at(lo)), b = _mm_load_si128(t.at(lo + 1));
  return _mm512_cvtph_ps(_mm256_set_m128i(_mm_unpackhi_epi8(a, b), _mm_unpacklo_epi8(a, b)));
}

__m512i widen(const Plane& t, int c, bool sign) {
  const __m128i b = _mm_load_si128(t.at(c));
  return sign ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
}

// The groups' chains over 32 columns: a[g] = fma(x[c], op(g, c, float(column c of p[g])), a[g]).
template <bool kSigned, class Op>
[[gnu::always_inline]] inline void chains(const Plane p[kGroups], const float* x, __m512 a[kGroups], const Op& op) {
#pragma GCC unroll 32
  for (int c = 0; c < 32; ++c) {
    const __m512 xv = _mm512_set1_ps(x[c]);
    for (int g = 0; g < kGroups; ++g) a[g] = _mm512_fmadd_ps(xv, op(g, c, _mm512_cvtepi32_ps(widen(p[g], c, kSigned))), a[g]);
  }
}

// Q8_0 and Q4_0, blocks of 32 that start with their f16 d: quants(p) makes a row's 32 small
// integers from the block's bytes after d (at p); each element is q d.
template <std::size_t kBytes, class Quants>
[[gnu::always_inline]] inline void dot_d32(const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                                           float* acc, const Quants& quants) {
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm512_loadu_ps(acc + kGroup * g);
  Plane p[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    __m512 d[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      __m256i q[16];
      for (int r = 0; r < 16; ++r) q[r] = quants(row_at(rows + kGroup * g, r, u * kBytes + 2));
      transpose_store(q, p[g]);
      d[g] = halves(rows + kGroup * g, u * kBytes);
    }
    chains<true>(p, x, a, [&](int g, int, __m512 f) { return _mm512_mul_ps(f, d[g]); });
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

// Q8_0 (34-byte blocks of 32): the 32 int8.
void dot_q8_0(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  dot_d32<34>(rows, k0, n, x, acc, [](const std::uint8_t* p) { return load32(p); });
}

// Q4_0 (18-byte blocks of 32): low nibbles are elements 0..15, high ones 16..31, less 8.
void dot_q4_0(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  dot_d32<18>(rows, k0, n, x, acc, [](const std::uint8_t* p) {
    const __m128i low = _mm_set1_epi8(0x0F), b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_sub_epi8(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low)),
                           _mm256_set1_epi8(8));
  });
}

// Q4_K (144-byte blocks of 256) and Q5_K (176, kFive): sub-block j (32 elements) is the low
// (j even) or high nibbles of the bytes at 16 (Q5_K: 48) + 32 (j / 2), Q5_K adding bit j of the
// 32 bytes at 16 as 16; (d sc_j) q - dmin m_j, the 6-bit sc_j and m_j unpacked from the 12
// bytes at 4 as scale_min_k4 does. A block's header (its first 32 bytes) is transposed like
// the quants, so d, dmin and the scale bytes arrive one per lane.
template <bool kFive>
void dot_q45_k(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  constexpr std::size_t bytes = kFive ? 176 : 144, qs = kFive ? 48 : 16;
  const __m512i low = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
  alignas(64) float s[kGroups][8][kGroup], m[kGroups][8][kGroup];  // the blocks' d sc_j and dmin m_j
  __m512i nib[kGroups][8], high[kGroups][8];                      // a pair of sub-blocks' quants; Q5_K's bit planes
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm512_loadu_ps(acc + kGroup * g);
  Plane p[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int j = static_cast<int>(u % 8);
    const bool first = u == k0 / 32;
    for (int g = 0; g < kGroups; ++g) {
      const void* const* rg = rows + kGroup * g;
      __m256i q[16];
      if (first || j == 0) {
        load_rows(rg, blk * bytes, q);
        transpose_store(q, p[g]);
        const __m512 d = halves(p[g], 0), dmin = halves(p[g], 2);
        __m512i b[12];
        for (int c = 0; c < 12; ++c) b[c] = widen(p[g], 4 + c, false);
        const __m512i six = _mm512_set1_epi32(63), four = _mm512_set1_epi32(15);
        for (int i = 0; i < 8; ++i) {
          __m512i sc, mn;
          if (i < 4) {
            sc = _mm512_and_si512(b[i], six);
            mn = _mm512_and_si512(b[i + 4], six);
          } else {
            sc = _mm512_or_si512(_mm512_and_si512(b[i + 4], four), _mm512_slli_epi32(_mm512_srli_epi32(b[i - 4], 6), 4));
            mn = _mm512_or_si512(_mm512_srli_epi32(b[i + 4], 4), _mm512_slli_epi32(_mm512_srli_epi32(b[i], 6), 4));
          }
          _mm512_store_ps(s[g][i], _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
          _mm512_store_ps(m[g][i], _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(mn)));
        }
        if constexpr (kFive) {
          load_rows(rg, blk * bytes + 16, q);
          transpose(q, high[g]);
        }
      }
      if (first || j % 2 == 0) {
        load_rows(rg, blk * bytes + qs + 32 * (j / 2), q);
        transpose(q, nib[g]);
      }
      const __m128i bit = _mm_cvtsi32_si128(j);
      __m512i v[8];
      for (int i = 0; i < 8; ++i) {
        v[i] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(nib[g][i], 4) : nib[g][i], low);
        if constexpr (kFive) {
          const __m512i h = _mm512_and_si512(_mm512_srl_epi16(high[g][i], bit), one);
          v[i] = _mm512_or_si512(v[i], _mm512_slli_epi16(h, 4));
        }
      }
      store(v, p[g]);
    }
    chains<false>(p, x, a, [&](int g, int, __m512 f) {
      return _mm512_sub_ps(_mm512_mul_ps(_mm512_load_ps(s[g][j]), f), _mm512_load_ps(m[g][j]));
    });
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

// Q6_K (210-byte blocks of 256, two halves of 128): quarter t of half h takes the low (t < 2)
// or high nibbles of ql[64 h + 32 (t % 2) ..] and bits 2t, 2t+1 of qh[32 h ..], minus 32;
// (d sc_i) q with one int8 scale per 16 elements. The scales and d are the last 18 of the 32
// bytes ending the block, transposed.
void dot_q6_k(const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  const __m512i low = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(3), bias = _mm512_set1_epi8(32);
  alignas(64) float s[kGroups][16][kGroup];  // the block's d sc_i
  __m512i lo[kGroups][2][8], hi[kGroups][8];       // a half's ql (two 32-byte runs) and qh, transposed
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm512_loadu_ps(acc + kGroup * g);
  Plane p[kGroups];
  for (std::size_t u = k0 / 32; u < (k0 + n) / 32; ++u, x += 32) {
    const std::size_t blk = u / 8;
    const int h = static_cast<int>(u % 8) / 4, t = static_cast<int>(u % 4);
    const bool first = u == k0 / 32;
    for (int g = 0; g < kGroups; ++g) {
      const void* const* rg = rows + kGroup * g;
      __m256i q[16];
      if (first || u % 8 == 0) {
        load_rows(rg, blk * 210 + 178, q);
        transpose_store(q, p[g]);
        const __m512 d = halves(p[g], 30);
        for (int i = 0; i < 16; ++i) _mm512_store_ps(s[g][i], _mm512_mul_ps(d, _mm512_cvtepi32_ps(widen(p[g], 14 + i, true))));
      }
      if (first || t == 0) {
        for (int e = 0; e < 2; ++e) {
          load_rows(rg, blk * 210 + 64 * h + 32 * e, q);
          transpose(q, lo[g][e]);
        }
        load_rows(rg, blk * 210 + 128 + 32 * h, q);
        transpose(q, hi[g]);
      }
      const __m128i shift = _mm_cvtsi32_si128(2 * t);
      __m512i v[8];
      for (int i = 0; i < 8; ++i) {
        const __m512i l = lo[g][t % 2][i];
        const __m512i lo4 = _mm512_and_si512(t / 2 ? _mm512_srli_epi16(l, 4) : l, low);
        const __m512i hi2 = _mm512_and_si512(_mm512_srl_epi16(hi[g][i], shift), two);
        v[i] = _mm512_sub_epi8(_mm512_or_si512(lo4, _mm512_slli_epi16(hi2, 4)), bias);
      }
      store(v, p[g]);
    }
    const int i0 = 8 * h + 2 * t;
    chains<true>(p, x, a, [&](int g, int c, __m512 f) { return _mm512_mul_ps(_mm512_load_ps(s[g][i0 + c / 16]), f); });
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

}  // namespace

LaneDot lane_dot_avx512(std::uint32_t type) {
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
