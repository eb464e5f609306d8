// AVX2 + FMA one-row GEMM (gemv_f32_simd.hpp): 8 rows of B at a time, one per lane; f16 / bf16
// widened in registers, an 8 x 8 square transposed per step.
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

struct V256 {
  using R = __m256;
  static constexpr std::size_t W = 8;
  static R zero() { return _mm256_setzero_ps(); }
  static R broadcast(float x) { return _mm256_set1_ps(x); }
  static R fma(R x, R y, R z) { return _mm256_fmadd_ps(x, y, z); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static void transpose(R r[8]);
};

// r[i] = row i (8 columns) -> r[c] = column c (8 rows).
void V256::transpose(__m256 r[8]) {
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

}  // namespace

const GemvF32Kernel kGemvF32Avx2 =
    gemv_simd_table<V256, LoadF32, LoadF16, LoadBf16, Fma256, xsimd::fma3<xsimd::avx2>>();

}  // namespace lowp::quant::detail
