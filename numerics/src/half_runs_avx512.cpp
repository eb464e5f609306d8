// half_runs.hpp under AVX-512 (F, BW, VL), 16 elements at a time.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include "half_runs_kernels.hpp"

namespace lowp::detail {
namespace {

__m256i load16(const void* in, std::size_t i) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const unsigned char*>(in) + 2 * i));
}
void store16(void* out, std::size_t i, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(static_cast<unsigned char*>(out) + 2 * i), v);
}

void bf16_to_f32(const void* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load16(in, i)), 16)));
  bf16_to_f32_scalar(static_cast<const unsigned char*>(in) + 2 * i, out + i, n - i);
}

// vcvtph2ps quiets a signalling NaN; f16_to_f32 keeps it signalling (see the AVX2 runs).
void f16_to_f32(const void* in, float* out, std::size_t n) {
  const __m512i magnitude = _mm512_set1_epi32(0x7fff), inf = _mm512_set1_epi32(0x7c00),
                quiet16 = _mm512_set1_epi32(0x200), keep = _mm512_set1_epi32(~0x400000);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = load16(in, i);
    const __m512i w = _mm512_cvtepu16_epi32(h);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(w, magnitude), inf);
    const __mmask16 signalling = _mm512_mask_testn_epi32_mask(nan, w, quiet16);
    const __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(h));
    _mm512_storeu_ps(out + i, _mm512_castsi512_ps(_mm512_mask_and_epi32(f, signalling, f, keep)));
  }
  f16_to_f32_scalar(static_cast<const unsigned char*>(in) + 2 * i, out + i, n - i);
}

// Round to nearest even on the bit pattern, as f32_to_bf16 does (same NaN rule).
void f32_to_bf16(const float* in, void* out, std::size_t n) {
  std::size_t i = 0;
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i payload = _mm512_set1_epi32(0x7f0000), quiet = _mm512_set1_epi32(0x400000);
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_castps_si512(_mm512_loadu_ps(in + i));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, lsb));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
    const __mmask16 empty = _mm512_testn_epi32_mask(u, payload);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_mask_or_epi32(u, nan & empty, u, quiet));
    store16(out, i, _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
  }
  f32_to_bf16_scalar(in + i, static_cast<unsigned char*>(out) + 2 * i, n - i);
}

// vcvtps2ph rounds as f32_to_f16 does; a NaN's code is f32_to_f16's (see the AVX2 runs).
void f32_to_f16(const float* in, void* out, std::size_t n) {
  const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000),
                ten = _mm512_set1_epi32(0x3ff), quiet = _mm512_set1_epi32(0x200), sign = _mm512_set1_epi32(0x8000),
                exponent = _mm512_set1_epi32(0x7c00);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(in + i);
    __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i u = _mm512_castps_si512(x);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
    if (nan) {
      __m512i m = _mm512_and_si512(_mm512_srli_epi32(u, 13), ten);
      m = _mm512_mask_or_epi32(m, _mm512_testn_epi32_mask(m, m), m, quiet);
      const __m512i code = _mm512_or_si512(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u, 16), sign), exponent), m);
      h = _mm256_mask_blend_epi16(nan, h, _mm512_cvtepi32_epi16(code));
    }
    store16(out, i, h);
  }
  f32_to_f16_scalar(in + i, static_cast<unsigned char*>(out) + 2 * i, n - i);
}

}  // namespace

const HalfRuns& half_runs_avx512() {
  static const HalfRuns k{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
  return k;
}

}  // namespace lowp::detail
