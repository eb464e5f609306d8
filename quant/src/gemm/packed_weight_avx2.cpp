// AVX2 decoder of PackedWeight's rows (packed_weight_kernels.hpp): each group's 16 table
// entries times (or over) its factor once, in two registers; then 8 codes at a time (4 bytes
// broadcast and shifted by 4 j in lane j: only the low 3 bits index a permute, and bit 3
// shifted to the sign chooses between the two) looked up with two in-register permutes.
// Every element is the scalar decoder's table[code] op factor, bitwise.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "packed_weight_kernels.hpp"

namespace lowp::quant::detail {

void packed_widen_avx2(const PackedRows& p, const std::uint8_t* row, std::size_t k0, std::size_t n, float* out) {
  const std::uint8_t* codes = row + 4 * p.groups;
  const __m256 t0 = _mm256_loadu_ps(p.table), t1 = _mm256_loadu_ps(p.table + 8);
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  for (std::size_t k = k0; k < k0 + n;) {
    const std::size_t g = k / p.group, end = std::min(k0 + n, (g + 1) * p.group);
    float f;
    std::memcpy(&f, row + 4 * g, 4);
    const __m256 fv = _mm256_set1_ps(f);
    const __m256 lo = p.divide ? _mm256_div_ps(t0, fv) : _mm256_mul_ps(t0, fv);
    const __m256 hi = p.divide ? _mm256_div_ps(t1, fv) : _mm256_mul_ps(t1, fv);
    for (; k < end; k += 8) {  // element 2i in the low nibble of byte i: element j at bits 4j
      std::int32_t w;
      std::memcpy(&w, codes + k / 2, 4);
      const __m256i i = _mm256_srlv_epi32(_mm256_set1_epi32(w), shifts);
      _mm256_storeu_ps(out + (k - k0),
                       _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, i), _mm256_permutevar8x32_ps(hi, i),
                                        _mm256_castsi256_ps(_mm256_slli_epi32(i, 28))));
    }
  }
}

}  // namespace lowp::quant::detail
