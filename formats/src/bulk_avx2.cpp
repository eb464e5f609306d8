// AVX2 bulk cast kernels: 8 elements per register.
#include <immintrin.h>

#include <bit>

#include "bulk_kernels.hpp"
#include "bulk_simd.hpp"

namespace lowp::bulk_detail {
namespace {

struct Avx2 {
  using I = xsimd::batch<std::int32_t, xsimd::avx2>;
  using F = xsimd::batch<float, xsimd::avx2>;
  using M = xsimd::batch_bool<std::int32_t, xsimd::avx2>;

  // Per-lane shifts: counts of 32 and more give 0 (xsimd's operators shift signed lanes
  // arithmetically, hence the explicit logical forms).
  static I sllv(I x, I s) { return _mm256_sllv_epi32(x, s); }
  static I srlv(I x, I s) { return _mm256_srlv_epi32(x, s); }
  template <int K>
  static I srl(I x) { return _mm256_srli_epi32(x, K); }
  static M gt_u(I a, I b) {  // unsigned a > b: flip the sign bits, compare signed
    const __m256i s = _mm256_set1_epi32(INT32_MIN);
    return _mm256_cmpgt_epi32(_mm256_xor_si256(a, s), _mm256_xor_si256(b, s));
  }
  static I inc_if(I x, M m) { return _mm256_sub_epi32(x, m); }  // a true lane is all ones
  static std::size_t count(M m) {
    return static_cast<std::size_t>(std::popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(m)))));
  }
  static F gather(const float* table, I idx) { return _mm256_i32gather_ps(table, idx, 4); }

  // 8 codes from SB-bit storage (see bulk.hpp for the layout).
  template <int SB>
  static I load(const std::uint8_t* p) {
    if constexpr (SB == 4) {
      std::uint32_t w;
      std::memcpy(&w, p, 4);
      const __m128i b = _mm_cvtsi32_si128(static_cast<int>(w));
      const __m128i m = _mm_set1_epi8(0x0f);
      const __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
      return _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
    } else if constexpr (SB == 6) {
      std::uint64_t w = 0;
      std::memcpy(&w, p, 6);
      const __m256i b = _mm256_broadcastsi128_si256(_mm_cvtsi64_si128(static_cast<long long>(w)));
      // Lane j of group g takes bytes 3g + {0,0,1,2}[j] and the next one, then shifts by {0,6,4,2}[j].
      const __m256i idx = _mm256_setr_epi8(0, 1, -1, -1, 0, 1, -1, -1, 1, 2, -1, -1, 2, 3, -1, -1,
                                           3, 4, -1, -1, 3, 4, -1, -1, 4, 5, -1, -1, 5, 6, -1, -1);
      const __m256i v = _mm256_srlv_epi32(_mm256_shuffle_epi8(b, idx), _mm256_setr_epi32(0, 6, 4, 2, 0, 6, 4, 2));
      return _mm256_and_si256(v, _mm256_set1_epi32(63));
    } else if constexpr (SB == 8) {
      return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    } else if constexpr (SB == 16) {
      return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    }
  }

  // Gathers the chosen bytes of each 128-bit half (pshufb control) and ORs the halves.
  static __m128i fold(__m256i v, __m256i idx) {
    const __m256i s = _mm256_shuffle_epi8(v, idx);
    return _mm_or_si128(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  }

  template <int SB>
  static void store(std::uint8_t* p, I c) {
    if constexpr (SB == 4) {
      const __m256i v = _mm256_or_si256(c, _mm256_srli_epi64(c, 28));  // byte 0 of each qword: c0 | c1 << 4
      const __m256i idx = _mm256_setr_epi8(0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                           -1, -1, 0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
      const auto w = static_cast<std::uint32_t>(_mm_cvtsi128_si32(fold(v, idx)));
      std::memcpy(p, &w, 4);
    } else if constexpr (SB == 6) {
      __m256i v = _mm256_sllv_epi32(c, _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18));
      v = _mm256_or_si256(v, _mm256_srli_epi64(v, 32));
      v = _mm256_or_si256(v, _mm256_bsrli_epi128(v, 8));  // dword 0 of each half: one 24-bit group
      const __m256i idx = _mm256_setr_epi8(0, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                           -1, -1, -1, 0, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
      const auto w = static_cast<std::uint64_t>(_mm_cvtsi128_si64(fold(v, idx)));
      std::memcpy(p, &w, 6);
    } else if constexpr (SB == 8) {
      const __m256i idx = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                           -1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p), fold(c, idx));
    } else if constexpr (SB == 16) {
      const __m256i idx = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                           -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9, 12, 13);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), fold(c, idx));
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), c);
    }
  }
};

using K = Kernels<Avx2>;

}  // namespace

void encode_avx2(const EncodeParams& p, const float* in, std::size_t n, std::uint8_t* out, CastReport& rep) {
  K::encode(p, in, n, out, rep);
}
void decode_avx2(const DecodeParams& p, const std::uint8_t* in, std::size_t n, float* out) {
  K::decode(p, in, n, out);
}
void fake_quant_avx2(const EncodeParams& e, const DecodeParams& d, float* x, std::size_t n, CastReport& rep) {
  K::fake_quant(e, d, x, n, rep);
}

}  // namespace lowp::bulk_detail
