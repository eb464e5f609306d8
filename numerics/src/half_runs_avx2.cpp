// half_runs.hpp under AVX2 and F16C, 8 elements at a time.
#include <immintrin.h>

#include "half_runs_kernels.hpp"

namespace lowp::detail {
namespace {

__m128i load8(const void* in, std::size_t i) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const unsigned char*>(in) + 2 * i));
}
void store8(void* out, std::size_t i, __m128i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<unsigned char*>(out) + 2 * i), v);
}

void bf16_to_f32(const void* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load8(in, i)), 16)));
  bf16_to_f32_scalar(static_cast<const unsigned char*>(in) + 2 * i, out + i, n - i);
}

// F16C quiets a signalling NaN (sets its quiet bit); f16_to_f32 keeps it signalling, payload as
// it is, so those lanes have the quiet bit cleared again.
void f16_to_f32(const void* in, float* out, std::size_t n) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fff), inf = _mm256_set1_epi32(0x7c00),
                quiet16 = _mm256_set1_epi32(0x200), quiet32 = _mm256_set1_epi32(0x400000);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = load8(in, i);
    const __m256i w = _mm256_cvtepu16_epi32(h);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(w, magnitude), inf);
    const __m256i signalling = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(w, quiet16), quiet16), nan);
    const __m256 f = _mm256_cvtph_ps(h);
    _mm256_storeu_ps(out + i, _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_and_si256(signalling, quiet32)), f));
  }
  f16_to_f32_scalar(static_cast<const unsigned char*>(in) + 2 * i, out + i, n - i);
}

// Round to nearest even on the bit pattern, as f32_to_bf16 does (same NaN rule).
void f32_to_bf16(const float* in, void* out, std::size_t n) {
  std::size_t i = 0;
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i payload = _mm256_set1_epi32(0x7f0000), quiet = _mm256_set1_epi32(0x400000);
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(in + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(bias, lsb));
    // |u| > inf compares correctly as signed: both sides are non-negative.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
    const __m256i empty = _mm256_cmpeq_epi32(_mm256_and_si256(u, payload), zero);
    const __m256i q = _mm256_or_si256(u, _mm256_and_si256(empty, quiet));
    const __m256i s = _mm256_srli_epi32(_mm256_blendv_epi8(r, q, nan), 16);
    store8(out, i, _mm_packus_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1)));
  }
  f32_to_bf16_scalar(in + i, static_cast<unsigned char*>(out) + 2 * i, n - i);
}

// F16C rounds as f32_to_f16 does; a NaN's code is f32_to_f16's (F16C would quiet a signalling
// one): sign, all-ones exponent, the top ten payload bits (the quiet bit alone if none).
void f32_to_f16(const float* in, void* out, std::size_t n) {
  const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000),
                ten = _mm256_set1_epi32(0x3ff), quiet = _mm256_set1_epi32(0x200), sign = _mm256_set1_epi32(0x8000),
                exponent = _mm256_set1_epi32(0x7c00), zero = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i u = _mm256_castps_si256(x);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
    if (!_mm256_testz_si256(nan, nan)) {
      __m256i m = _mm256_and_si256(_mm256_srli_epi32(u, 13), ten);
      m = _mm256_or_si256(m, _mm256_and_si256(_mm256_cmpeq_epi32(m, zero), quiet));
      const __m256i code = _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), sign), exponent), m);
      const __m128i code16 = _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
      const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
      h = _mm_blendv_epi8(h, code16, nan16);
    }
    store8(out, i, h);
  }
  f32_to_f16_scalar(in + i, static_cast<unsigned char*>(out) + 2 * i, n - i);
}

}  // namespace

const HalfRuns& half_runs_avx2() {
  static const HalfRuns k{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
  return k;
}

}  // namespace lowp::detail
