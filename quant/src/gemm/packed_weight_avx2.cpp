// AVX2 kernels of PackedWeight's rows (packed_weight_kernels.hpp).
// The decoder: each group's 16 table entries times (or over) its factor once, in two
// registers; then 8 codes at a time (4 bytes broadcast and shifted by 4 j in lane j: only the
// low 3 bits index a permute, and bit 3 shifted to the sign chooses between the two) looked up
// with two in-register permutes.
// The one-pass decode and dot (StoredMatrix::dot_lanes): 64 rows as eight groups of 8, row r of
// a group in lane r. Each 32 columns a row's 16 code bytes become its 32 codes (a byte each, in
// element order), the 8 rows' codes are transposed (byte_transpose_avx2.hpp), and each column's
// codes look up the table the same way, then take the row's factor lane-wise; then
// acc = fma(x_k, value, acc) in order of k.
// Its interleaved form reads a column's codes where they lie (InterleavedRows' groups of 16 rows
// as two halves of 8), with no transpose.
// Every element is the scalar decoder's table[code] op factor, bitwise.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "lowp/numerics/byte_transpose_avx2.hpp"
#include "packed_codes_simd.hpp"
#include "packed_weight_kernels.hpp"

namespace lowp::quant::detail {
namespace {

// Entry i (0..15 per lane) of a 16-entry table held as lo (entries 0-7) and hi (8-15): the low
// 3 bits index both permutes, bit 3 shifted to the sign picks between them.
__m256 lookup(__m256 lo, __m256 hi, __m256i i) {
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, i), _mm256_permutevar8x32_ps(hi, i),
                          _mm256_castsi256_ps(_mm256_slli_epi32(i, 28)));
}

// The same where entries 8-15 are entries 0-7 with the sign bit set (FP4's codes): one permute
// and bit 3 moved to the sign (the second permute bounded the dots on a Zen 3: 1.44-1.56 ns
// against 1.11-1.23 per 8 weights in cache).
__m256 signed_lookup(__m256 lo, __m256i i) {
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm256_xor_ps(_mm256_permutevar8x32_ps(lo, i), _mm256_and_ps(_mm256_castsi256_ps(_mm256_slli_epi32(i, 28)), sign));
}

// Whether p's table is such a table, bitwise.
bool sign_pairs(const PackedRows& p) {
  for (int i = 0; i < 8; ++i) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, p.table + i, 4);
    std::memcpy(&hi, p.table + 8 + i, 4);
    if (hi != (lo ^ 0x80000000u)) return false;
  }
  return true;
}

// Entry i of the table t0, t1 (kSigned: of sign pairs).
template <bool kSigned>
__m256 entry(__m256 t0, __m256 t1, __m256i i) {
  if constexpr (kSigned)
    return signed_lookup(t0, i);
  else
    return lookup(t0, t1, i);
}

}  // namespace

void packed_widen_avx2(const PackedRows& p, const std::uint8_t* row, std::size_t k0, std::size_t n, float* out) {
  const std::uint8_t* codes = row + 4 * p.groups;
  const __m256 t0 = _mm256_loadu_ps(p.table), t1 = _mm256_loadu_ps(p.table + 8);
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  for (std::size_t k = k0; k < k0 + n;) {
    const std::size_t g = k / p.group, end = std::min(k0 + n, (g + 1) * p.group);
    float f;
    std::memcpy(&f, row + 4 * g, 4);
    const __m256 fv = _mm256_set1_ps(f);
    const __m256 lo = p.divide ? _mm256_div_ps(t0, fv) : _mm256_mul_ps(t0, fv);
    const __m256 hi = p.divide ? _mm256_div_ps(t1, fv) : _mm256_mul_ps(t1, fv);
    for (; k < end; k += 8) {  // element 2i in the low nibble of byte i: element j at bits 4j
      std::int32_t w;
      std::memcpy(&w, codes + k / 2, 4);
      const __m256i i = _mm256_srlv_epi32(_mm256_set1_epi32(w), shifts);
      _mm256_storeu_ps(out + (k - k0), lookup(lo, hi, i));
    }
  }
}

namespace {

constexpr int kGroup = 8, kGroups = 8;
static_assert(kGroup * kGroups == 64, "StoredMatrix::dot_lanes continues 64 rows' chains");

// Factor g of 8 rows, one per lane.
__m256 factors(const void* const* rows, std::size_t g) {
  alignas(32) float f[kGroup];
  for (int r = 0; r < kGroup; ++r) std::memcpy(f + r, static_cast<const std::uint8_t*>(rows[r]) + 4 * g, 4);
  return _mm256_load_ps(f);
}

template <bool kDivide, bool kSigned>
void dot(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  const __m256 t0 = _mm256_loadu_ps(p.table), t1 = _mm256_loadu_ps(p.table + 8);
  const std::size_t codes = 4 * p.groups;
  __m256 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm256_loadu_ps(acc + kGroup * g);
  simd::avx2::Columns col[kGroups];
  __m256 f[kGroups][2];  // the factors of columns k .. k + 15 and k + 16 .. k + 31 (groups of >= 16)
  for (std::size_t k = k0; k < k0 + n; k += 32, x += 32) {
    for (int g = 0; g < kGroups; ++g) {
      const void* const* rg = rows + kGroup * g;
      __m256i q[kGroup], v[kGroup];
      for (int r = 0; r < kGroup; ++r) q[r] = codes32(static_cast<const std::uint8_t*>(rg[r]) + codes + k / 2);
      simd::avx2::transpose_bytes(q, v);
      col[g].store(v);
      f[g][0] = factors(rg, k / p.group);
      f[g][1] = (k + 16) / p.group == k / p.group ? f[g][0] : factors(rg, (k + 16) / p.group);
    }
#pragma GCC unroll 32
    for (int c = 0; c < 32; ++c) {
      const __m256 xv = _mm256_set1_ps(x[c]);
      for (int g = 0; g < kGroups; ++g) {
        const __m256 t = entry<kSigned>(t0, t1, col[g].widen(c));
        const __m256 w = kDivide ? _mm256_div_ps(t, f[g][c / 16]) : _mm256_mul_ps(t, f[g][c / 16]);
        a[g] = _mm256_fmadd_ps(xv, w, a[g]);
      }
    }
  }
  for (int g = 0; g < kGroups; ++g) _mm256_storeu_ps(acc + kGroup * g, a[g]);
}

// Factor gi of rows 8h .. 8h + 7 of an interleaved group (InterleavedRows: byte b of row r at
// 16 b + r, so the factor's four bytes are four columns of 16), one per lane.
__m256 factors(const std::uint8_t* group, int h, std::size_t gi) {
  const auto col = [&](std::size_t j) {
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(group + 16 * (4 * gi + j) + 8 * h));
  };
  const __m128i ab = _mm_unpacklo_epi8(col(0), col(1)), cd = _mm_unpacklo_epi8(col(2), col(3));
  return _mm256_castsi256_ps(_mm256_set_m128i(_mm_unpackhi_epi16(ab, cd), _mm_unpacklo_epi16(ab, cd)));
}

// The same over an interleaved copy, rows[16 G] group G's start, its rows 8h .. 8h + 7 chain
// 2G + h: column k's 8 rows' codes are the low (k even) or high nibbles of the 8 bytes at
// 16 (codes + k / 2) + 8h, which widen to indices as they lie (lookup() reads bits 0 to 3).
template <bool kDivide, bool kSigned>
void dot_interleaved(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                     float* acc) {
  const __m256 t0 = _mm256_loadu_ps(p.table), t1 = _mm256_loadu_ps(p.table + 8);
  const std::size_t codes = 4 * p.groups;
  const std::uint8_t* base[kGroups];  // chain g's bytes: group g / 2's, offset to its half
  __m256 a[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    base[g] = static_cast<const std::uint8_t*>(rows[2 * kGroup * (g / 2)]);
    a[g] = _mm256_loadu_ps(acc + kGroup * g);
  }
  for (std::size_t k = k0; k < k0 + n; k += 32, x += 32) {
    __m256 f[kGroups][2];
    for (int g = 0; g < kGroups; ++g) {
      f[g][0] = factors(base[g], g % 2, k / p.group);
      f[g][1] = (k + 16) / p.group == k / p.group ? f[g][0] : factors(base[g], g % 2, (k + 16) / p.group);
    }
#pragma GCC unroll 32
    for (int c = 0; c < 32; ++c) {
      const __m256 xv = _mm256_set1_ps(x[c]);
      for (int g = 0; g < kGroups; ++g) {
        const auto* b = reinterpret_cast<const __m128i*>(base[g] + 16 * (codes + (k + c) / 2) + 8 * (g % 2));
        const __m256i i = _mm256_cvtepu8_epi32(_mm_loadl_epi64(b));
        const __m256 t = entry<kSigned>(t0, t1, c % 2 ? _mm256_srli_epi32(i, 4) : i);
        const __m256 w = kDivide ? _mm256_div_ps(t, f[g][c / 16]) : _mm256_mul_ps(t, f[g][c / 16]);
        a[g] = _mm256_fmadd_ps(xv, w, a[g]);
      }
    }
  }
  for (int g = 0; g < kGroups; ++g) _mm256_storeu_ps(acc + kGroup * g, a[g]);
}

}  // namespace

void packed_dot_interleaved_avx2(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n,
                                 const float* x, float* acc) {
  const bool sp = sign_pairs(p);
  (p.divide ? (sp ? dot_interleaved<true, true> : dot_interleaved<true, false>)
            : (sp ? dot_interleaved<false, true> : dot_interleaved<false, false>))(p, rows, k0, n, x, acc);
}

void packed_dot_avx2(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                     float* acc) {
  const bool sp = sign_pairs(p);
  (p.divide ? (sp ? dot<true, true> : dot<true, false>) : (sp ? dot<false, true> : dot<false, false>))(p, rows, k0, n,
                                                                                                        x, acc);
}

}  // namespace lowp::quant::detail
