// Internal: the fused multiply-add (one rounding, like std::fma) of quant's AVX2 kernels; only
// AVX2 + FMA translation units include it.
#pragma once
#include <xsimd/xsimd.hpp>

namespace lowp::quant::detail {
struct Fma256 {
  using F = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
  static F fma(F x, F y, F z) noexcept { return xsimd::fma(x, y, z); }  // vfmadd on fma3<avx2>
};
}  // namespace lowp::quant::detail
