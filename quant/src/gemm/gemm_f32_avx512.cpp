// AVX-512 float32 GEMM tile: 12 rows x 32 columns (24 accumulators of the 32 zmm registers).
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include "fma_avx512.hpp"
#include "gemm_f32_kernels_simd.hpp"

namespace lowp::quant::detail {

// Masked loads and stores, 16 floats at a time: a transposed operand's rows are a short run
// of floats at each k (12 of A, 32 of B), which a memcpy call per k spent most of its time on.
void pack_cols_avx512(const float* src, std::size_t ld, std::size_t n, std::size_t width, std::size_t kc, float* out) {
  const auto mask = [](std::size_t lanes) {
    return static_cast<__mmask16>(lanes >= 16 ? 0xffff : (1u << lanes) - 1);
  };
  for (std::size_t c = 0; c < width; c += 16) {
    const __mmask16 store = mask(width - c);
    if (n <= c) {  // zeros only: src is not touched (it may hold no element at all)
      for (std::size_t k = 0; k < kc; ++k) _mm512_mask_storeu_ps(out + k * width + c, store, _mm512_setzero_ps());
      continue;
    }
    const __mmask16 load = mask(n - c);
    for (std::size_t k = 0; k < kc; ++k)
      _mm512_mask_storeu_ps(out + k * width + c, store, _mm512_maskz_loadu_ps(load, src + k * ld + c));
  }
}

// The packing of rows is AVX2's (every AVX-512 CPU has it).
const GemmF32Kernel kGemmF32Avx512 =
    GemmF32Simd<xsimd::avx512f, Fma512, 12, 2>::table(&pack_rows_avx2, &pack_cols_avx512, false);

}  // namespace lowp::quant::detail
