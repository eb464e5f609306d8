// AVX-512 bulk cast kernels: 16 elements per register.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include <bit>

#include "bulk_kernels.hpp"
#include "bulk_simd.hpp"

namespace lowp::bulk_detail {
namespace {

struct Avx512 {
  using I = xsimd::batch<std::int32_t, xsimd::avx512bw>;
  using F = xsimd::batch<float, xsimd::avx512bw>;
  using M = xsimd::batch_bool<std::int32_t, xsimd::avx512bw>;

  // xsimd 8 has no AVX-512 per-lane shifts (it loops over lanes); counts >= 32 give 0.
  static I sllv(I x, I s) { return _mm512_sllv_epi32(x, s); }
  static I srlv(I x, I s) { return _mm512_srlv_epi32(x, s); }
  template <int K>
  static I srl(I x) { return _mm512_srli_epi32(x, K); }
  static M gt_u(I a, I b) { return _mm512_cmpgt_epu32_mask(a, b); }
  static I inc_if(I x, M m) { return _mm512_mask_add_epi32(x, m, x, _mm512_set1_epi32(1)); }
  static std::size_t count(M m) { return static_cast<std::size_t>(std::popcount(static_cast<unsigned>(static_cast<__mmask16>(m)))); }
  static F gather(const float* table, I idx) { return _mm512_i32gather_ps(idx, table, 4); }

  // 16 codes from SB-bit storage (see bulk.hpp for the layout).
  template <int SB>
  static I load(const std::uint8_t* p) {
    if constexpr (SB == 4) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      const __m128i m = _mm_set1_epi8(0x0f);
      const __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
      return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
    } else if constexpr (SB == 6) {
      const __m512i b = _mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(0x0fff, p));
      // Lane j of group g takes bytes 3g + {0,0,1,2}[j] and the next one, then shifts by {0,6,4,2}[j].
      const __m512i idx = _mm512_setr_epi32(
          k6(0, 0), k6(0, 0), k6(0, 1), k6(0, 2), k6(1, 0), k6(1, 0), k6(1, 1), k6(1, 2),
          k6(2, 0), k6(2, 0), k6(2, 1), k6(2, 2), k6(3, 0), k6(3, 0), k6(3, 1), k6(3, 2));
      const __m512i v = _mm512_srlv_epi32(_mm512_shuffle_epi8(b, idx), _mm512_set4_epi32(2, 4, 6, 0));
      return _mm512_and_si512(v, _mm512_set1_epi32(63));
    } else if constexpr (SB == 8) {
      return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else if constexpr (SB == 16) {
      return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
      return _mm512_loadu_si512(p);
    }
  }

  template <int SB>
  static void store(std::uint8_t* p, I c) {
    if constexpr (SB == 4) {
      const __m512i v = _mm512_or_si512(c, _mm512_srli_epi64(c, 28));  // byte 0 of each qword: c0 | c1 << 4
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm512_cvtepi64_epi8(v));
    } else if constexpr (SB == 6) {
      __m512i v = _mm512_sllv_epi32(c, _mm512_set4_epi32(18, 12, 6, 0));
      v = _mm512_or_si512(v, _mm512_srli_epi64(v, 32));
      v = _mm512_or_si512(v, _mm512_bsrli_epi128(v, 8));  // dword 0 of each 128 bits: one 24-bit group
      const __m128i g = _mm512_castsi512_si128(_mm512_maskz_compress_epi32(0x1111, v));
      const __m128i idx = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
      _mm_mask_storeu_epi8(p, 0x0fff, _mm_shuffle_epi8(g, idx));
    } else if constexpr (SB == 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(c));
    } else if constexpr (SB == 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(c));
    } else {
      _mm512_storeu_si512(p, c);
    }
  }

  // pshufb control for one lane: bytes 3g + o and 3g + o + 1, the upper two bytes zeroed.
  static constexpr int k6(int g, int o) { return static_cast<int>(0xffff0000u | (3u * g + o + 1) << 8 | (3u * g + o)); }
};

using K = Kernels<Avx512>;

}  // namespace

void encode_avx512(const EncodeParams& p, const float* in, std::size_t n, std::uint8_t* out, CastReport& rep) {
  K::encode(p, in, n, out, rep);
}
void decode_avx512(const DecodeParams& p, const std::uint8_t* in, std::size_t n, float* out) {
  K::decode(p, in, n, out);
}
void fake_quant_avx512(const EncodeParams& e, const DecodeParams& d, float* x, std::size_t n, CastReport& rep) {
  K::fake_quant(e, d, x, n, rep);
}

}  // namespace lowp::bulk_detail
