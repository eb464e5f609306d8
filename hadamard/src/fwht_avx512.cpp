// AVX-512 FWHT kernels (16 floats per register, 4 stages per pass across 16 registers).
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include "fwht_kernels.hpp"
#include "fwht_simd.hpp"

namespace lowp::hadamard::detail {
namespace {

struct Avx512 {
  using V = xsimd::batch<float, xsimd::avx512bw>;
  static constexpr int radix = 4;
  static constexpr int tail_radix = 4;
  static constexpr int registers = 32;
  // The partner of each lane at in-register stage St (distance 2^St); xsimd 8 has no
  // immediate lane shuffles, hence the intrinsics.
  template <int St>
  static V swap(V x) {
    if constexpr (St == 0) return _mm512_permute_ps(x, 0xb1);
    if constexpr (St == 1) return _mm512_permute_ps(x, 0x4e);
    if constexpr (St == 2) return _mm512_shuffle_f32x4(x, x, 0xb1);
    if constexpr (St == 3) return _mm512_shuffle_f32x4(x, x, 0x4e);
  }
};
using K = Simd<Avx512>;

}  // namespace

const Kernels& kernels_avx512() noexcept {
  static const Kernels k{K::L, K::rows, K::cols};
  return k;
}

}  // namespace lowp::hadamard::detail
