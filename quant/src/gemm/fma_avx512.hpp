// Internal: the fused multiply-add (one rounding, like std::fma) of quant's AVX-512 kernels;
// only AVX-512 translation units include it.
#pragma once
#include <immintrin.h>
#include <xsimd/xsimd.hpp>

namespace lowp::quant::detail {
// Not xsimd::fma: xsimd 8.1's avx512f has no fma of its own, and its generic one is a multiply
// then an add, two roundings unless the compiler contracts them (GCC does; clang does not).
struct Fma512 {
  using F = xsimd::batch<float, xsimd::avx512f>;
  static F fma(F x, F y, F z) noexcept { return _mm512_fmadd_ps(x, y, z); }
};
}  // namespace lowp::quant::detail
