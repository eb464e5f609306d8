// AVX2 + FMA one-row GEMM (gemv_f32_simd.hpp): 2 x 8 rows of B at a time, one per lane; f16 /
// bf16 widened in registers. Each 8 x 8 square is built from 128-bit halves: row i's elements
// in the low lane and row i + 4's in the high one (a load and an insert), so 4 x 4 transposes
// inside the lanes give each column's 8 rows in order: 16 shuffles per square instead of the
// 24 of a full 8 x 8 transpose (which the lane crossings make the bottleneck of a bf16 GEMV).
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "fma_avx2.hpp"
#include "gemv_f32_simd.hpp"

namespace lowp::quant::detail {
namespace {

struct V256 {
  using R = __m256;
  static constexpr std::size_t W = 8;
  static constexpr std::size_t groups = 2;  // two 8-row chains per call (four spilled: slower)
  static constexpr bool prefetch_f32 = false;  // float32 rows ran slower with it on Zen 3
  static R zero() { return _mm256_setzero_ps(); }
  static R broadcast(float x) { return _mm256_set1_ps(x); }
  static R fma(R x, R y, R z) { return _mm256_fmadd_ps(x, y, z); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
};

// In each 128-bit lane s[i] holds 4 elements of row i (rows 0..3 low, 4..7 high):
// r[c * stride] = element c of the 8 rows.
[[gnu::always_inline]] inline void transpose_lanes(const __m256 s[4], __m256* r, int stride) {
  const __m256 t0 = _mm256_unpacklo_ps(s[0], s[1]), t1 = _mm256_unpackhi_ps(s[0], s[1]);
  const __m256 t2 = _mm256_unpacklo_ps(s[2], s[3]), t3 = _mm256_unpackhi_ps(s[2], s[3]);
  r[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  r[stride] = _mm256_shuffle_ps(t0, t2, 0xEE);
  r[2 * stride] = _mm256_shuffle_ps(t1, t3, 0x44);
  r[3 * stride] = _mm256_shuffle_ps(t1, t3, 0xEE);
}

template <class T>
const T* at(const void* row, std::size_t k) {
  return static_cast<const T*>(row) + k;
}

// f32 and f16: two passes of 4 columns, each register [row i, k..k+3 | row i + 4, k..k+3].
struct SquareF32 {
  [[gnu::always_inline]] static inline void columns(const void* const* w, std::size_t k, __m256 r[8]) {
    for (std::size_t c = 0; c < 8; c += 4) {
      __m256 s[4];
      for (int i = 0; i < 4; ++i)
        s[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(at<float>(w[i], k + c))),
                                    _mm_loadu_ps(at<float>(w[i + 4], k + c)), 1);
      transpose_lanes(s, r + c, 1);
    }
  }
};
struct SquareF16 {
  [[gnu::always_inline]] static inline void columns(const void* const* w, std::size_t k, __m256 r[8]) {
    for (std::size_t c = 0; c < 8; c += 4) {
      __m256 s[4];
      for (int i = 0; i < 4; ++i) {
        const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(at<std::uint16_t>(w[i], k + c)));
        const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(at<std::uint16_t>(w[i + 4], k + c)));
        s[i] = _mm256_cvtph_ps(_mm_unpacklo_epi64(lo, hi));
      }
      transpose_lanes(s, r + c, 1);
    }
  }
};
// bf16 is the top half of a float32: a 32-bit lane holding elements (k + 2j, k + 2j + 1) gives
// element k + 2j by a left shift of 16 and element k + 2j + 1 by masking the low half, with no
// widening shuffle. One register [row i, k..k+7 | row i + 4, k..k+7] per row pair: its evens
// are columns k, k + 2, .., its odds k + 1, k + 3, ...
struct SquareBf16 {
  [[gnu::always_inline]] static inline void columns(const void* const* w, std::size_t k, __m256 r[8]) {
    __m256 e[4], o[4];
    for (int i = 0; i < 4; ++i) {
      const __m256i v = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at<std::uint16_t>(w[i], k)))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(at<std::uint16_t>(w[i + 4], k))), 1);
      e[i] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
      o[i] = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
    }
    transpose_lanes(e, r, 2);
    transpose_lanes(o, r + 1, 2);
  }
};

// 8 consecutive f16 / bf16 elements as floats (the interleaved dot's loads).
struct Load8F16 {
  static __m256 load(const std::uint16_t* p, std::size_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k)));
  }
};
struct Load8Bf16 {
  static __m256 load(const std::uint16_t* p, std::size_t k) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
};

}  // namespace

template <StoredType T>
void dot_interleaved16_avx2(const float* x, const std::uint16_t* w, std::size_t n, float* acc) {
  gemv_interleaved16<V256, std::conditional_t<T == StoredType::f16, Load8F16, Load8Bf16>>(x, w, n, acc);
}
template void dot_interleaved16_avx2<StoredType::f16>(const float*, const std::uint16_t*, std::size_t, float*);
template void dot_interleaved16_avx2<StoredType::bf16>(const float*, const std::uint16_t*, std::size_t, float*);

void dot_interleaved_avx2(const float* x, const float* w, std::size_t n, float* acc) {
  gemv_simd_lanes<xsimd::fma3<xsimd::avx2>, Fma256, kInterleave>(x, w, n, acc);  // eight 8-row chains
}

const GemvF32Kernel kGemvF32Avx2 =
    gemv_simd_table<V256, SquareF32, SquareF16, SquareBf16, Fma256, xsimd::fma3<xsimd::avx2>>();

}  // namespace lowp::quant::detail
