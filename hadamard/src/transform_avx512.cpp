// AVX-512 kernels of the dense +-1 product (16-float registers).
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <xsimd/xsimd.hpp>

#include "transform_simd.hpp"

namespace lowp::hadamard::detail {
namespace {
using V = xsimd::batch<float, xsimd::avx512bw>;
using M = xsimd::batch<std::uint32_t, xsimd::avx512bw>;

void flip(float* x, const std::uint32_t* mask, std::size_t n) {
  std::size_t i = 0;
  for (; i + V::size <= n; i += V::size)
    (V::load_unaligned(x + i) ^ xsimd::bitwise_cast<V>(M::load_unaligned(mask + i))).store_unaligned(x + i);
  flip_signs_scalar(x + i, mask + i, n - i);
}
}  // namespace

const SignKernels& sign_kernels_avx512() noexcept {
  static const SignKernels k{SignSimd<V>::run, SignSimd<V, kTileLanes / 2>::run, flip};
  return k;
}

}  // namespace lowp::hadamard::detail
