// AVX-512 float32 GEMM tile: 12 rows x 32 columns (24 accumulators of the 32 zmm registers).
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*()
// (GCC bug 105593, fixed in GCC 13) wherever the intrinsics are inlined; silence that here.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "gemm_f32_kernels_simd.hpp"

namespace lowp::quant::detail {
namespace {
struct Fma512 {
  // xsimd 8.1's avx512f has no fma of its own (its generic one is a multiply then an add).
  using F = xsimd::batch<float, xsimd::avx512f>;
  static F fma(F x, F y, F z) noexcept { return _mm512_fmadd_ps(x, y, z); }
};
}  // namespace

const GemmF32Kernel kGemmF32Avx512 = GemmF32Simd<xsimd::avx512f, Fma512, 12, 2>::table();

}  // namespace lowp::quant::detail
