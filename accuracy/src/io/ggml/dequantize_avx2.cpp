// AVX2 decoders of the block types quantized checkpoints use most (Q8_0, Q4_K, Q6_K): the
// scalar decoders' products in the same order (dequantize.cpp), eight elements per
// instruction, so every value is bitwise theirs. Compiled with -ffp-contract=off as well: GCC
// may fuse a vector multiply and subtract written with intrinsics.
#include <immintrin.h>

#include "io/ggml/dequantize_simd.hpp"

namespace lowp::accuracy::ggml {
namespace {

__m256i bytes8(const std::uint8_t* p) {  // eight bytes as eight 32-bit integers
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// Q8_0: y = q * d.
void decode_q8_0(const std::uint8_t* b, float* y) {
  const __m256 d = _mm256_set1_ps(half_at(b));
  for (int j = 0; j < 32; j += 8) {
    const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + j)));
    _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
  }
}

// Q4_K: y = (d sc) v - dmin mn for the low nibbles, then the high nibbles, per 32 bytes.
void decode_q4_k(const std::uint8_t* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const std::uint8_t* scales = b + 4;
  const std::uint8_t* q = b + 16;
  const __m256i low = _mm256_set1_epi32(0x0F);
  for (int is = 0; is < 8; is += 2) {
    int sc, mn;
    scale_min_k4(is, scales, sc, mn);
    const __m256 d1 = _mm256_set1_ps(d * static_cast<float>(sc)), m1 = _mm256_set1_ps(dmin * static_cast<float>(mn));
    scale_min_k4(is + 1, scales, sc, mn);
    const __m256 d2 = _mm256_set1_ps(d * static_cast<float>(sc)), m2 = _mm256_set1_ps(dmin * static_cast<float>(mn));
    for (int l = 0; l < 32; l += 8) {
      const __m256i v = bytes8(q + l);
      const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, low)), hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
      _mm256_storeu_ps(y + l, _mm256_sub_ps(_mm256_mul_ps(d1, lo), m1));
      _mm256_storeu_ps(y + 32 + l, _mm256_sub_ps(_mm256_mul_ps(d2, hi), m2));
    }
    y += 64;
    q += 32;
  }
}

// Q6_K: y = (d sc) q, q = 4 low bits | 2 high bits << 4, minus 32.
void decode_q6_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* ql = b;
  const std::uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
  const float d = half_at(b + 208);
  const __m256i low = _mm256_set1_epi32(0x0F), two = _mm256_set1_epi32(3), bias = _mm256_set1_epi32(32);
  const auto six = [&](__m256i lo4, __m256i h, int shift) {  // (lo4 | ((h >> shift) & 3) << 4) - 32
    const __m256i hi2 = _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, shift), two), 4);
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_or_si256(lo4, hi2), bias));
  };
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; l += 8) {
      const int is = l / 16;
      const __m256i a = bytes8(ql + l), c = bytes8(ql + l + 32), h = bytes8(qh + l);
      const auto scale = [&](int k) { return _mm256_set1_ps(d * static_cast<float>(sc[is + k])); };
      _mm256_storeu_ps(y + l, _mm256_mul_ps(scale(0), six(_mm256_and_si256(a, low), h, 0)));
      _mm256_storeu_ps(y + l + 32, _mm256_mul_ps(scale(2), six(_mm256_and_si256(c, low), h, 2)));
      _mm256_storeu_ps(y + l + 64, _mm256_mul_ps(scale(4), six(_mm256_srli_epi32(a, 4), h, 4)));
      _mm256_storeu_ps(y + l + 96, _mm256_mul_ps(scale(6), six(_mm256_srli_epi32(c, 4), h, 6)));
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

}  // namespace

BlockDecoder block_decoder_avx2(std::uint32_t type) {
  switch (type) {
    case q8_0: return &decode_q8_0;
    case q4_k: return &decode_q4_k;
    case q6_k: return &decode_q6_k;
    default: return nullptr;
  }
}

}  // namespace lowp::accuracy::ggml
