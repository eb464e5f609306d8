// AVX2 + FMA one-row GEMM: 8 rows of B at a time, one per lane; each step transposes an 8 x 8
// square of them (f16 / bf16 widened in registers) and runs the rows' chains in k order.
#include <immintrin.h>

#include <cstdint>

#include "gemv_f32_simd.hpp"

namespace lowp::quant::detail {
namespace {

struct Fma256 {
  using F = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
  static F fma(F x, F y, F z) noexcept { return xsimd::fma(x, y, z); }  // vfmadd on fma3<avx2>
};

struct LoadF32 {
  static __m256 load(const void* p, std::size_t k) { return _mm256_loadu_ps(static_cast<const float*>(p) + k); }
};
struct LoadF16 {
  static __m256 load(const void* p, std::size_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(p) + k)));
  }
};
struct LoadBf16 {  // bf16 is the top half of a float32
  static __m256 load(const void* p, std::size_t k) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(p) + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
};

// r[i] = row i (8 columns) -> r[c] = column c (8 rows).
inline void transpose8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // s[i + m]: 128-bit lane L holds column 4L + m of rows i .. i+3
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) {
    t[m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x20);
    t[4 + m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x31);
  }
  for (int i = 0; i < 8; ++i) r[i] = t[i];
}

template <class Load, StoredType T>
void rows8(const float* x, const void* const* w, std::size_t kc, float* acc) {
  __m256 a = _mm256_setzero_ps();
  std::size_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = Load::load(w[i], k);
    transpose8(r);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) a = _mm256_fmadd_ps(_mm256_set1_ps(x[k + c]), r[c], a);
  }
  _mm256_storeu_ps(acc, a);
  gemv_rows_tail(T, x, w, 8, k, kc, acc);
}

}  // namespace

const GemvF32Kernel kGemvF32Avx2 = {8,
                                    {&rows8<LoadF32, StoredType::f32>, &rows8<LoadF16, StoredType::f16>,
                                     &rows8<LoadBf16, StoredType::bf16>},
                                    &gemv_simd_cols<xsimd::fma3<xsimd::avx2>, Fma256>};

}  // namespace lowp::quant::detail
