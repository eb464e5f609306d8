// AVX-512 quantize kernels: 16 floats per register.
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*()
// (GCC bug 105593, fixed in GCC 13) wherever the intrinsics are inlined; silence that here.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
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
