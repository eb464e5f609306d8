// AVX2 quantize kernels: 8 floats per register.
#include <immintrin.h>

#include "quantize_kernels_simd.hpp"

namespace lowp::quant::detail {
namespace {
struct Hmax256 {
  // xsimd 8.1 has no horizontal max: fold the halves, then the quarters.
  static std::int32_t hmax(xsimd::batch<std::int32_t, xsimd::avx2> v) {
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4e));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xb1));
    return _mm_cvtsi128_si32(m);
  }
};
}  // namespace

const QuantKernels kQuantKernelsAvx2 = QuantSimd<xsimd::avx2, Hmax256>::table();

}  // namespace lowp::quant::detail
