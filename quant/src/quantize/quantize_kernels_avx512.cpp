// AVX-512 quantize kernels: 16 floats per register.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include "quantize_kernels_simd.hpp"

namespace lowp::quant::detail {
namespace {
struct Hmax512 {
  // xsimd 8.1 has no horizontal max.
  static std::int32_t hmax(xsimd::batch<std::int32_t, xsimd::avx512bw> v) { return _mm512_reduce_max_epi32(v); }
};
}  // namespace

const QuantKernels kQuantKernelsAvx512 = QuantSimd<xsimd::avx512bw, Hmax512>::table();

}  // namespace lowp::quant::detail
