// AVX-512 decode and dot of PackedWeight's rows in one pass (StoredMatrix::dot_lanes), 64 rows
// as four groups of 16, row r of a group in lane r: each 32 columns, a row's 16 code bytes
// become its 32 codes (a byte each, element order), the 16 rows' codes are transposed
// (byte_transpose_avx512.hpp), and each column's codes index the 16-entry table in a register
// (vpermps) and take the row's factor lane-wise: table[code] * f (or / f), the scalar
// decoder's value bitwise; then acc = fma(x_k, value, acc) in order of k. Its interleaved form
// reads a column's 16 rows' codes where they lie, with no transpose.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include <cstring>

#include "lowp/numerics/byte_transpose_avx512.hpp"
#include "packed_codes_simd.hpp"
#include "packed_weight_kernels.hpp"

namespace lowp::quant::detail {
namespace {

constexpr int kGroup = 16, kGroups = 4;
static_assert(kGroup * kGroups == 64, "StoredMatrix::dot_lanes continues 64 rows' chains");

// Factor g of 16 rows, one per lane.
__m512 factors(const void* const* rows, std::size_t g) {
  alignas(64) float f[kGroup];
  for (int r = 0; r < kGroup; ++r) std::memcpy(f + r, static_cast<const std::uint8_t*>(rows[r]) + 4 * g, 4);
  return _mm512_load_ps(f);
}

template <bool kDivide>
void dot(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n, const float* x, float* acc) {
  const __m512 table = _mm512_loadu_ps(p.table);
  const std::size_t codes = 4 * p.groups;
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) a[g] = _mm512_loadu_ps(acc + kGroup * g);
  simd::Plane pl[kGroups];
  for (std::size_t k = k0; k < k0 + n; k += 32, x += 32) {
    __m512 f[kGroups][2];  // the factors of columns k .. k + 15 and k + 16 .. k + 31 (groups of >= 16)
    for (int g = 0; g < kGroups; ++g) {
      const void* const* rg = rows + kGroup * g;
      __m256i q[kGroup];
      for (int r = 0; r < kGroup; ++r) q[r] = codes32(static_cast<const std::uint8_t*>(rg[r]) + codes + k / 2);
      simd::transpose_store(q, pl[g]);
      f[g][0] = factors(rg, k / p.group);
      f[g][1] = (k + 16) / p.group == k / p.group ? f[g][0] : factors(rg, (k + 16) / p.group);
    }
#pragma GCC unroll 32
    for (int c = 0; c < 32; ++c) {
      const __m512 xv = _mm512_set1_ps(x[c]);
      for (int g = 0; g < kGroups; ++g) {
        const __m512 t = _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_load_si128(pl[g].at(c))), table);
        const __m512 w = kDivide ? _mm512_div_ps(t, f[g][c / 16]) : _mm512_mul_ps(t, f[g][c / 16]);
        a[g] = _mm512_fmadd_ps(xv, w, a[g]);
      }
    }
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

// Factor gi of an interleaved group's 16 rows (InterleavedRows: byte b of row r at 16 b + r,
// so the factor's four bytes are four columns of 16), one per lane.
__m512 factors(const std::uint8_t* group, std::size_t gi) {
  const auto col = [&](std::size_t j) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(group + 16 * (4 * gi + j))); };
  const __m128i a = col(0), b = col(1), c = col(2), d = col(3);
  const __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);  // rows 0-7, 8-15: bytes 0, 1
  const __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);  // bytes 2, 3
  __m512i v = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab0, cd0));
  v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(ab0, cd0), 1);
  v = _mm512_inserti32x4(v, _mm_unpacklo_epi16(ab1, cd1), 2);
  v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(ab1, cd1), 3);
  return _mm512_castsi512_ps(v);
}

// The same over an interleaved copy, rows[16 g] group g's start: column k's 16 rows' codes are
// the low (k even) or high nibbles of the 16 bytes at 16 (codes + k / 2), which widen to the
// table's indices as they lie (vpermps reads an index's low 4 bits).
template <bool kDivide>
void dot_interleaved(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                     float* acc) {
  const __m512 table = _mm512_loadu_ps(p.table);
  const std::size_t codes = 4 * p.groups;
  const std::uint8_t* base[kGroups];
  __m512 a[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    base[g] = static_cast<const std::uint8_t*>(rows[kGroup * g]);
    a[g] = _mm512_loadu_ps(acc + kGroup * g);
  }
  for (std::size_t k = k0; k < k0 + n; k += 32, x += 32) {
    __m512 f[kGroups][2];
    for (int g = 0; g < kGroups; ++g) {
      f[g][0] = factors(base[g], k / p.group);
      f[g][1] = (k + 16) / p.group == k / p.group ? f[g][0] : factors(base[g], (k + 16) / p.group);
    }
#pragma GCC unroll 32
    for (int c = 0; c < 32; ++c) {
      const __m512 xv = _mm512_set1_ps(x[c]);
      for (int g = 0; g < kGroups; ++g) {
        const auto* b = reinterpret_cast<const __m128i*>(base[g] + 16 * (codes + (k + c) / 2));
        const __m512i i = _mm512_cvtepu8_epi32(_mm_loadu_si128(b));
        const __m512 t = _mm512_permutexvar_ps(c % 2 ? _mm512_srli_epi32(i, 4) : i, table);
        const __m512 w = kDivide ? _mm512_div_ps(t, f[g][c / 16]) : _mm512_mul_ps(t, f[g][c / 16]);
        a[g] = _mm512_fmadd_ps(xv, w, a[g]);
      }
    }
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(acc + kGroup * g, a[g]);
}

}  // namespace

void packed_dot_interleaved_avx512(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n,
                                   const float* x, float* acc) {
  (p.divide ? dot_interleaved<true> : dot_interleaved<false>)(p, rows, k0, n, x, acc);
}

void packed_dot_avx512(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                       float* acc) {
  (p.divide ? dot<true> : dot<false>)(p, rows, k0, n, x, acc);
}

}  // namespace lowp::quant::detail
