// AVX2 dots of llama.cpp's integer matmul (int_dots.hpp): each block's integer sums with byte
// multiply-adds (u8 x s8 pairs into int16, which cannot saturate here: at most 2 * 63 * 127),
// then the block's float terms in the scalar order. Integer sums are exact in any order, so the
// bits are the scalar dots'.
#include <immintrin.h>

#include <cstring>

#include "io/ggml/dequantize_simd.hpp"
#include "io/ggml/ggml_types.hpp"
#include "io/ggml/int_dots.hpp"

namespace lowp::accuracy::ggml {
namespace {

std::int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

__m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// F16C converts every finite f16 and infinity as f16_to_f32 does (a NaN stays a NaN).
float half(const std::uint8_t h[2]) {
  std::uint16_t v;
  std::memcpy(&v, h, 2);
  return _cvtsh_ss(v);
}

float dot_q4_k(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ4K*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) scale_min_k4(j, w[b].scales, sc[j], mn[j]);
    __m256i acc = _mm256_setzero_si256();
    for (int i = 0; i < 4; ++i) {
      const __m256i q = load(w[b].qs + 32 * i);
      const __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(q, m4), load(a[b].qs + 64 * i));
      const __m256i hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), load(a[b].qs + 64 * i + 32));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(lo, _mm256_set1_epi16(static_cast<short>(sc[2 * i]))));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(hi, _mm256_set1_epi16(static_cast<short>(sc[2 * i + 1]))));
    }
    std::int32_t imin = 0;
    for (int j = 0; j < 8; ++j) imin += mn[j] * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
    const float d = a[b].d * half(w[b].d), dmin = a[b].d * half(w[b].dmin);
    s += d * static_cast<float>(hsum(acc));
    s -= dmin * static_cast<float>(imin);
  }
  return s;
}

float dot_q6_k(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ6K*>(wv);
  const auto* a = static_cast<const BlockQ8K*>(av);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 256; ++b) {
    const std::int8_t* sc = w[b].scales;
    __m256i acc = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i ql[2] = {load(w[b].ql + 64 * h), load(w[b].ql + 64 * h + 32)};
      const __m256i qh = load(w[b].qh + 32 * h);
      for (int g = 0; g < 4; ++g) {  // elements [128 h + 32 g, + 32): codes q + 32 in [0, 63]
        const __m256i lo = g < 2 ? _mm256_and_si256(ql[g], m4) : _mm256_and_si256(_mm256_srli_epi16(ql[g - 2], 4), m4);
        const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), m2), 4);
        const __m256i p = _mm256_maddubs_epi16(_mm256_or_si256(lo, hi), load(a[b].qs + 128 * h + 32 * g));
        const int j = 8 * h + 2 * g;  // the scales of its two sub-blocks of 16
        const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(sc[j + 1]), _mm_set1_epi16(sc[j]));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, scales));
      }
    }
    // The codes' offset: sum_j sc_j sum_{e in j} 32 a_e = 32 sum_j sc_j bsums_j.
    const __m256i off = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc))),
                                          load(a[b].bsums));
    const std::int32_t isum = hsum(acc) - 32 * hsum(off);
    s += (a[b].d * half(w[b].d)) * static_cast<float>(isum);
  }
  return s;
}

float dot_q8_0(const void* wv, const void* av, std::size_t n) {
  const auto* w = static_cast<const BlockQ8_0*>(wv);
  const auto* a = static_cast<const BlockQ8_0*>(av);
  const __m256i ones = _mm256_set1_epi16(1);
  float s = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) {
    const __m256i q = load(w[b].qs), x = load(a[b].qs);
    // |q| times x with q's sign: u8 x s8 (|q| = 128 for -128 reads as 128 unsigned).
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q));
    const std::int32_t isum = hsum(_mm256_madd_epi16(p, ones));
    s += (half(w[b].d) * half(a[b].d)) * static_cast<float>(isum);
  }
  return s;
}

}  // namespace

IntDot int_dot_avx2(std::uint32_t type) {
  switch (type) {
    case q4_k: return dot_q4_k;
    case q6_k: return dot_q6_k;
    case q8_0: return dot_q8_0;
    default: return nullptr;
  }
}

}  // namespace lowp::accuracy::ggml
