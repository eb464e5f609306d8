// Internal: the float32 GEMM tile written once over an xsimd architecture (instantiated in
// gemm_f32_avx2.cpp and gemm_f32_avx512.cpp): MR rows of A broadcast, NV registers of B.
// Fma::fma(x, y, z) must be the fused x * y + z (one rounding), like std::fma in the scalar tile.
#pragma once
#include <xsimd/xsimd.hpp>

#include <algorithm>

#include "gemm_f32_kernels.hpp"

namespace lowp::quant::detail {

template <class Arch, class Fma, std::size_t MR, std::size_t NV>
struct GemmF32Simd {
  using F = xsimd::batch<float, Arch>;
  static constexpr std::size_t W = F::size, NR = NV * W;

  static void tile(const float* ap, const float* bp, std::size_t kc, float* c, std::size_t ldc, bool add,
                   const float* c_next) {
    F acc[MR][NV];
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = F(0.0f);
    // The next tile's C rows (2 MR lines: a row may straddle two) are fetched into L2 one line
    // every 8 steps. Fetching this tile's own rows into L1 at its start, as before, was 3-5 %
    // slower on Zen 5: C's rows are 2^k floats apart in the square shapes and so share L1 sets
    // with the B sliver, which they evict for the whole tile.
    std::size_t k = 0;
    for (std::size_t line = 0; k < kc; ++line) {
      if (c_next && line < 2 * MR)
        __builtin_prefetch(c_next + line / 2 * ldc + (line & 1) * (NR - 1), 1, 2);
      for (const std::size_t end = std::min(kc, k + 8); k < end; ++k) {
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
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) {
        float* p = c + r * ldc + v * W;
        (add ? F::load_unaligned(p) + acc[r][v] : acc[r][v]).store_unaligned(p);
      }
  }

  static constexpr GemmF32Kernel table(PackRowsFn pack, PackColsFn pack_cols, bool prefetch_next_sliver) {
    return {MR, NR, &tile, pack, pack_cols, prefetch_next_sliver};
  }
};

}  // namespace lowp::quant::detail
