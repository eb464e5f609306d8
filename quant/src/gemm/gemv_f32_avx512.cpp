// AVX-512 one-row GEMM (gemv_f32_simd.hpp): 16 rows of B at a time, one per lane; f16 / bf16
// widened in registers, a 16 x 16 square transposed per step.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include <cstdint>

#include "fma_avx512.hpp"
#include "gemv_f32_simd.hpp"

namespace lowp::quant::detail {
namespace {

struct LoadF32 {
  static __m512 load(const void* p, std::size_t k) { return _mm512_loadu_ps(static_cast<const float*>(p) + k); }
};
struct LoadF16 {
  static __m512 load(const void* p, std::size_t k) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const std::uint16_t*>(p) + k)));
  }
};
struct LoadBf16 {  // bf16 is the top half of a float32
  static __m512 load(const void* p, std::size_t k) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const std::uint16_t*>(p) + k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

struct V512 {
  using R = __m512;
  static constexpr std::size_t W = 16;
  // One 16-row chain per call: two (2 x 16 rows' registers) measured slower on Zen 5.
  static constexpr std::size_t groups = 1;
  // Float32 rows prefetched too: out of memory on Zen 5, 1.2-1.7x the bytes per second at K of
  // 256 to 768 (the 16 rows read side by side are more streams than the hardware follows).
  static constexpr bool prefetch_f32 = true;
  static R zero() { return _mm512_setzero_ps(); }
  static R broadcast(float x) { return _mm512_set1_ps(x); }
  static R fma(R x, R y, R z) { return _mm512_fmadd_ps(x, y, z); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  [[gnu::always_inline]] static inline void transpose(R r[16]);
};

// r[i] = row i (16 columns) -> r[c] = column c (16 rows).
void V512::transpose(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {  // within 128-bit lanes: pairs of rows interleaved
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // u[i + m]: lane L holds column 4L + m of rows i .. i+3
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) {  // gather the 128-bit lanes: lanes 0, 2 then 1, 3 of rows 0-7, 8-15
    t[m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88);
    t[4 + m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xDD);
    t[8 + m] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88);
    t[12 + m] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xDD);
  }
  for (int m = 0; m < 4; ++m) {
    r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88);
    r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xDD);
    r[4 + m] = _mm512_shuffle_f32x4(t[4 + m], t[12 + m], 0x88);
    r[12 + m] = _mm512_shuffle_f32x4(t[4 + m], t[12 + m], 0xDD);
  }
}

}  // namespace

const GemvF32Kernel kGemvF32Avx512 =
    gemv_simd_table<V512, TransposedRows<V512, LoadF32>, TransposedRows<V512, LoadF16>,
                    TransposedRows<V512, LoadBf16>, Fma512, xsimd::avx512f>();

}  // namespace lowp::quant::detail
