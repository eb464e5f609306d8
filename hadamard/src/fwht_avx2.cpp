// AVX2+FMA FWHT kernels (8 floats per register, 3 stages per pass across 8 registers).
#include <immintrin.h>

#include "fwht_kernels.hpp"
#include "fwht_simd.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::hadamard::detail {
namespace {

struct Avx2 {
  using V = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
  static constexpr int radix = 3;
  static constexpr int tail_radix = 4;
  static constexpr int registers = 16;
  // The partner of each lane at in-register stage St (distance 2^St); xsimd 8 has no
  // immediate lane shuffles, hence the intrinsics.
  template <int St>
  static V swap(V x) {
    if constexpr (St == 0) return _mm256_permute_ps(x, 0xb1);
    if constexpr (St == 1) return _mm256_permute_ps(x, 0x4e);
    if constexpr (St == 2) return _mm256_permute2f128_ps(x, x, 1);
  }
};
using K = Simd<Avx2>;

void bf16_to_f32(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) out[i] = lowp::bf16_to_f32(in[i]);
}

// Round to nearest even on the bit pattern, as lowp::f32_to_bf16 does (same NaN rule).
void f32_to_bf16(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i payload = _mm256_set1_epi32(0x7f0000), quiet = _mm256_set1_epi32(0x400000);
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(in + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(bias, lsb));
    // |u| > inf compares correctly as signed: both sides are non-negative.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
    const __m256i empty = _mm256_cmpeq_epi32(_mm256_and_si256(u, payload), zero);
    const __m256i q = _mm256_or_si256(u, _mm256_and_si256(empty, quiet));
    const __m256i s = _mm256_srli_epi32(_mm256_blendv_epi8(r, q, nan), 16);
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
  }
  for (; i < n; ++i) out[i] = lowp::f32_to_bf16(in[i]);
}

void f16_to_f32(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = lowp::f16_to_f32(in[i]);
}

void f32_to_f16(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) out[i] = lowp::f32_to_f16(in[i]);
}

}  // namespace

const Kernels& kernels_avx2() noexcept {
  static const Kernels k{K::L, K::rows, K::cols, bf16_to_f32, f32_to_bf16, f16_to_f32, f32_to_f16};
  return k;
}

}  // namespace lowp::hadamard::detail
