// Internal: the float32 GEMM tile written once over an xsimd architecture (instantiated in
// gemm_f32_avx2.cpp and gemm_f32_avx512.cpp): MR rows of A broadcast, NV registers of B.
// Fma::fma(x, y, z) must be the fused x * y + z (one rounding), like std::fma in the scalar tile.
#pragma once
#include <xsimd/xsimd.hpp>

#include "gemm_f32_kernels.hpp"

namespace lowp::quant::detail {

template <class Arch, class Fma, std::size_t MR, std::size_t NV>
struct GemmF32Simd {
  using F = xsimd::batch<float, Arch>;
  static constexpr std::size_t W = F::size, NR = NV * W;

  static void tile(const float* ap, const float* bp, std::size_t kc, float* c, std::size_t ldc, bool add) {
    // C's rows are first touched after the kc steps (hundreds of cycles): fetch them now, both
    // ends of each row since it may straddle two cache lines.
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r) {
      __builtin_prefetch(c + r * ldc, 1);
      __builtin_prefetch(c + r * ldc + NR - 1, 1);
    }
    F acc[MR][NV];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = F(0.0f);
    for (std::size_t k = 0; k < kc; ++k) {
      F b[NV];
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) b[v] = F::load_aligned(bp + k * NR + v * W);
#pragma GCC unroll 16
      for (std::size_t r = 0; r < MR; ++r) {
        const F x(ap[k * MR + r]);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v] = Fma::fma(x, b[v], acc[r][v]);
      }
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) {
        float* p = c + r * ldc + v * W;
        (add ? F::load_unaligned(p) + acc[r][v] : acc[r][v]).store_unaligned(p);
      }
  }

  static constexpr GemmF32Kernel table(PackRowsFn pack) { return {MR, NR, &tile, pack}; }
};

}  // namespace lowp::quant::detail
