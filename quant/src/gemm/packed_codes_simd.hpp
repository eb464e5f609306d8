// Internal: PackedWeight's code bytes unpacked in registers, shared by the AVX2 and AVX-512
// kernel files (included only by files compiled with AVX2 or more).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace lowp::quant::detail {

// The 32 codes of the 16 code bytes at p, a byte each in element order (element 2i in the low
// nibble of byte i, 2i + 1 in its high one).
inline __m256i codes32(const std::uint8_t* p) {
  const __m128i low = _mm_set1_epi8(0x0F), b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i lo = _mm_and_si128(b, low), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
  return _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
}

}  // namespace lowp::quant::detail
