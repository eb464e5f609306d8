// Internal: the parts of the one-row GEMM written once over an xsimd architecture
// (instantiated in gemv_f32_avx2.cpp and gemv_f32_avx512.cpp). Fma::fma(x, y, z) must be the
// fused x * y + z, as in gemm_f32_kernels_simd.hpp.
#pragma once
#include <xsimd/xsimd.hpp>

#include <cmath>

#include "gemv_f32_kernels.hpp"

namespace lowp::quant::detail {

// dot_cols: B stored transposed, so a row of B^T holds consecutive outputs: one lane per output.
template <class Arch, class Fma>
void gemv_simd_cols(const float* x, const float* bt, std::size_t ldb, std::size_t kc, std::size_t n, float* acc) {
  using F = xsimd::batch<float, Arch>;
  constexpr std::size_t W = F::size;
  std::size_t j = 0;
  for (; j + 2 * W <= n; j += 2 * W) {  // two independent chains per k
    F a0(0.0f), a1(0.0f);
    for (std::size_t k = 0; k < kc; ++k) {
      const F xk(x[k]);
      a0 = Fma::fma(xk, F::load_unaligned(bt + k * ldb + j), a0);
      a1 = Fma::fma(xk, F::load_unaligned(bt + k * ldb + j + W), a1);
    }
    a0.store_unaligned(acc + j);
    a1.store_unaligned(acc + j + W);
  }
  for (; j + W <= n; j += W) {
    F a0(0.0f);
    for (std::size_t k = 0; k < kc; ++k) a0 = Fma::fma(F(x[k]), F::load_unaligned(bt + k * ldb + j), a0);
    a0.store_unaligned(acc + j);
  }
  for (; j < n; ++j) {
    float a = 0.0f;
    for (std::size_t k = 0; k < kc; ++k) a = std::fma(x[k], bt[k * ldb + j], a);
    acc[j] = a;
  }
}

}  // namespace lowp::quant::detail
