// AVX2 + FMA float32 GEMM tile: 6 rows x 16 columns (12 accumulators of the 16 ymm registers).
#include "gemm_f32_kernels_simd.hpp"

namespace lowp::quant::detail {
namespace {
struct Fma256 {
  using F = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
  static F fma(F x, F y, F z) noexcept { return xsimd::fma(x, y, z); }  // vfmadd on fma3<avx2>
};
}  // namespace

const GemmF32Kernel kGemmF32Avx2 = GemmF32Simd<xsimd::fma3<xsimd::avx2>, Fma256, 6, 2>::table();

}  // namespace lowp::quant::detail
