// AVX-512 FWHT kernels (16 floats per register, 4 stages per pass across 16 registers).
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include "fwht_kernels.hpp"
#include "fwht_simd.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::hadamard::detail {
namespace {

struct Avx512 {
  using V = xsimd::batch<float, xsimd::avx512bw>;
  static constexpr int radix = 4;
  static constexpr int tail_radix = 4;
  static constexpr int registers = 32;
  // The partner of each lane at in-register stage St (distance 2^St); xsimd 8 has no
  // immediate lane shuffles, hence the intrinsics.
  template <int St>
  static V swap(V x) {
    if constexpr (St == 0) return _mm512_permute_ps(x, 0xb1);
    if constexpr (St == 1) return _mm512_permute_ps(x, 0x4e);
    if constexpr (St == 2) return _mm512_shuffle_f32x4(x, x, 0xb1);
    if constexpr (St == 3) return _mm512_shuffle_f32x4(x, x, 0x4e);
  }
};
using K = Simd<Avx512>;

void bf16_to_f32(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    _mm512_storeu_ps(out + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) out[i] = lowp::bf16_to_f32(in[i]);
}

// Round to nearest even on the bit pattern, as lowp::f32_to_bf16 does (same NaN rule).
void f32_to_bf16(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i payload = _mm512_set1_epi32(0x7f0000), quiet = _mm512_set1_epi32(0x400000);
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_castps_si512(_mm512_loadu_ps(in + i));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, lsb));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
    const __mmask16 empty = _mm512_testn_epi32_mask(u, payload);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_mask_or_epi32(u, nan & empty, u, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
  }
  for (; i < n; ++i) out[i] = lowp::f32_to_bf16(in[i]);
}

void f16_to_f32(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  for (; i < n; ++i) out[i] = lowp::f16_to_f32(in[i]);
}

void f32_to_f16(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) out[i] = lowp::f32_to_f16(in[i]);
}

}  // namespace

const Kernels& kernels_avx512() noexcept {
  static const Kernels k{K::L, K::rows, K::cols, bf16_to_f32, f32_to_bf16, f16_to_f32, f32_to_f16};
  return k;
}

}  // namespace lowp::hadamard::detail
