// AVX-512 strips of the blocked transpose (transpose.hpp): 16 x 16 squares in registers.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include "transpose.hpp"
#include "transpose16_avx512.hpp"

namespace lowp::quant::detail {

std::size_t transpose_strip16_avx512(const float* src, float* dst, std::size_t rows, std::size_t cols) {
  const std::size_t done = cols / 16 * 16;
  for (std::size_t c = 0; c < done; c += 16) {
    __m512 r[16];
    for (int q = 0; q < 16; ++q) r[q] = _mm512_loadu_ps(src + q * cols + c);
    transpose16x16(r);
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + (c + i) * rows, r[i]);
  }
  return done;
}

}  // namespace lowp::quant::detail
