// AVX-512 one-row GEMM (gemv_f32_simd.hpp): 16 rows of B at a time, one per lane; f16 / bf16
// widened in registers, a 16 x 16 square transposed per step.
#include "lowp/numerics/simd_warnings.hpp"  // first: GCC 12 warns inside the intrinsics
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "fma_avx512.hpp"
#include "gemv_f32_simd.hpp"
#include "transpose16_avx512.hpp"

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
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  [[gnu::always_inline]] static inline void transpose(R r[16]);
};

void V512::transpose(__m512 r[16]) { transpose16x16(r); }

}  // namespace

void dot_interleaved_avx512(const float* x, const float* w, std::size_t n, float* acc) {
  gemv_simd_lanes<xsimd::avx512f, Fma512, kInterleave>(x, w, n, acc);  // four 16-row chains
}

template <StoredType T>
void dot_interleaved16_avx512(const float* x, const std::uint16_t* w, std::size_t n, float* acc) {
  gemv_interleaved16<V512, std::conditional_t<T == StoredType::f16, LoadF16, LoadBf16>>(x, w, n, acc);
}
template void dot_interleaved16_avx512<StoredType::f16>(const float*, const std::uint16_t*, std::size_t, float*);
template void dot_interleaved16_avx512<StoredType::bf16>(const float*, const std::uint16_t*, std::size_t, float*);

const GemvF32Kernel kGemvF32Avx512 =
    gemv_simd_table<V512, TransposedRows<V512, LoadF32>, TransposedRows<V512, LoadF16>,
                    TransposedRows<V512, LoadBf16>, Fma512, xsimd::avx512f>();

}  // namespace lowp::quant::detail
