// AVX2 + FMA float32 GEMM tile: 6 rows x 16 columns (12 accumulators of the 16 ymm registers),
// and the packing of slivers in 8 x 8 squares transposed in registers.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "fma_avx2.hpp"
#include "gemm_f32_kernels_simd.hpp"

namespace lowp::quant::detail {
namespace {

const float kZeroRow[kGemmKc] = {};  // the rows past n

// The first `lanes` floats of v to dst (no masked store: it is slow on AMD).
inline void store_lanes(float* dst, __m256 v, std::size_t lanes) {
  if (lanes == 8) return _mm256_storeu_ps(dst, v);
  __m128 h = _mm256_castps256_ps128(v);
  if (lanes >= 4) {
    _mm_storeu_ps(dst, h);
    h = _mm256_extractf128_ps(v, 1);
    dst += 4;
    lanes -= 4;
  }
  if (lanes >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(dst), h);
    h = _mm_movehl_ps(h, h);
    dst += 2;
    lanes -= 2;
  }
  if (lanes == 1) _mm_store_ss(dst, h);
}
}  // namespace

void pack_rows_avx2(const void* const* rows, std::size_t n, std::size_t width, std::size_t kc, float* out) {
  for (std::size_t g0 = 0; g0 < width; g0 += 8) {  // rows g0 .. g0 + 7, `lanes` of them stored
    const std::size_t lanes = std::min<std::size_t>(8, width - g0);
    const float* p[8];
    for (std::size_t i = 0; i < 8; ++i) p[i] = g0 + i < n ? static_cast<const float*>(rows[g0 + i]) : kZeroRow;
    float* o = out + g0;
    std::size_t k = 0;
    for (; k + 8 <= kc; k += 8) {
      // v[h * 4 + q]: rows q (low lane) and q + 4 (high lane), elements k + 4h .. k + 4h + 3;
      // a 4 x 4 transpose in each lane then gives element k + 4h + m of the 8 rows.
      __m256 v[8];
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t q = 0; q < 4; ++q)
          v[h * 4 + q] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p[q] + k + 4 * h)),
                                              _mm_loadu_ps(p[q + 4] + k + 4 * h), 1);
      for (std::size_t h = 0; h < 2; ++h) {
        const __m256* w = v + h * 4;
        const __m256 lo01 = _mm256_unpacklo_ps(w[0], w[1]), hi01 = _mm256_unpackhi_ps(w[0], w[1]);
        const __m256 lo23 = _mm256_unpacklo_ps(w[2], w[3]), hi23 = _mm256_unpackhi_ps(w[2], w[3]);
        float* d = o + (k + 4 * h) * width;
        store_lanes(d, _mm256_shuffle_ps(lo01, lo23, 0x44), lanes);
        store_lanes(d + width, _mm256_shuffle_ps(lo01, lo23, 0xEE), lanes);
        store_lanes(d + 2 * width, _mm256_shuffle_ps(hi01, hi23, 0x44), lanes);
        store_lanes(d + 3 * width, _mm256_shuffle_ps(hi01, hi23, 0xEE), lanes);
      }
    }
    for (; k < kc; ++k)
      for (std::size_t i = 0; i < lanes; ++i) std::memcpy(o + k * width + i, p[i] + k, sizeof(float));
  }
}

const GemmF32Kernel kGemmF32Avx2 = GemmF32Simd<xsimd::fma3<xsimd::avx2>, Fma256, 6, 2>::table(&pack_rows_avx2, &pack_cols_scalar, true);

}  // namespace lowp::quant::detail
