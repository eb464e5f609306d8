// AVX2+FMA FWHT kernels (8 floats per register, 3 stages per pass across 8 registers).
#include <immintrin.h>

#include "fwht_kernels.hpp"
#include "fwht_simd.hpp"

namespace lowp::hadamard::detail {
namespace {

struct Avx2 {
  using V = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;
  static constexpr int radix = 3;
  static constexpr int tail_radix = 4;
  static constexpr int registers = 16;
  // The partner of each lane at in-register stage St (distance 2^St); xsimd 8 has no
  // immediate lane shuffles, hence the intrinsics.
  template <int St>
  static V swap(V x) {
    if constexpr (St == 0) return _mm256_permute_ps(x, 0xb1);
    if constexpr (St == 1) return _mm256_permute_ps(x, 0x4e);
    if constexpr (St == 2) return _mm256_permute2f128_ps(x, x, 1);
  }
};
using K = Simd<Avx2>;

}  // namespace

const Kernels& kernels_avx2() noexcept {
  static const Kernels k{K::L, K::rows, K::cols};
  return k;
}

}  // namespace lowp::hadamard::detail
