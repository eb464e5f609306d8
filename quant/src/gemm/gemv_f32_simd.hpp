// Internal: the one-row GEMM's kernels written once (instantiated in gemv_f32_avx2.cpp and
// gemv_f32_avx512.cpp). Fma::fma(x, y, z) must be the fused x * y + z, as in
// gemm_f32_kernels_simd.hpp.
#pragma once
#include <xsimd/xsimd.hpp>

#include <cmath>

#include "gemv_f32_kernels.hpp"

namespace lowp::quant::detail {

// dot_cols: B stored transposed, so a row of B^T holds consecutive outputs: one lane per output.
template <class Arch, class Fma>
void gemv_simd_cols(const float* x, const float* bt, std::size_t ldb, std::size_t kc, std::size_t n, float* acc) {
  using F = xsimd::batch<float, Arch>;
  constexpr std::size_t W = F::size;
  std::size_t j = 0;
  for (; j + 2 * W <= n; j += 2 * W) {  // two independent chains per k
    F a0(0.0f), a1(0.0f);
    for (std::size_t k = 0; k < kc; ++k) {
      const F xk(x[k]);
      a0 = Fma::fma(xk, F::load_unaligned(bt + k * ldb + j), a0);
      a1 = Fma::fma(xk, F::load_unaligned(bt + k * ldb + j + W), a1);
    }
    a0.store_unaligned(acc + j);
    a1.store_unaligned(acc + j + W);
  }
  for (; j + W <= n; j += W) {
    F a0(0.0f);
    for (std::size_t k = 0; k < kc; ++k) a0 = Fma::fma(F(x[k]), F::load_unaligned(bt + k * ldb + j), a0);
    a0.store_unaligned(acc + j);
  }
  for (; j < n; ++j) {
    float a = 0.0f;
    for (std::size_t k = 0; k < kc; ++k) a = std::fma(x[k], bt[k * ldb + j], a);
    acc[j] = a;
  }
}

// dot_rows: V::groups x V::W rows at a time, one per lane of V::groups registers (V: the
// ISA's register type R, width W, zero, broadcast, fma, store; Square::columns(w, k, r):
// r[c] = element k + c of rows w[0 .. W), one per lane). Each step takes a W x W square of each
// group's rows and runs the W fused multiply-adds of every row's chain in k order; the groups'
// chains are independent, so one runs while another waits on the fma latency (four groups
// spill registers and were slower). A tail of kc shorter than a square continues the chains in
// scalar code.
template <class V, class Square, StoredType T>
void gemv_simd_rows(const float* x, const void* const* w, std::size_t kc, float* acc, const void* const* next) {
  constexpr std::size_t W = V::W, esize = T == StoredType::f32 ? 4 : 2;
  constexpr std::size_t G = V::groups;
  typename V::R a[G];
  for (auto& v : a) v = V::zero();
  std::size_t k = 0;
  for (; k + W <= kc; k += W) {
    if ((esize == 2 || V::prefetch_f32) && next && k * esize % 64 == 0)
      for (std::size_t i = 0; i < G * W; ++i)
        __builtin_prefetch(static_cast<const char*>(next[i]) + k * esize, 0, 2);
    for (std::size_t h = 0; h < G; ++h) {
      typename V::R r[W];
      Square::columns(w + h * W, k, r);
#pragma GCC unroll 16
      for (std::size_t c = 0; c < W; ++c) a[h] = V::fma(V::broadcast(x[k + c]), r[c], a[h]);
    }
  }
  for (std::size_t h = 0; h < G; ++h) V::store(acc + h * W, a[h]);
  gemv_rows_tail(T, x, w, G * W, k, kc, acc);
}

// A Square that loads each row's W elements (Load::load(row, k), as floats) and transposes the
// W x W square in registers (V::transpose).
template <class V, class Load>
struct TransposedRows {
  [[gnu::always_inline]] static inline void columns(const void* const* w, std::size_t k, typename V::R r[V::W]) {
#pragma GCC unroll 16
    for (std::size_t i = 0; i < V::W; ++i) r[i] = Load::load(w[i], k);
    V::transpose(r);
  }
};

// dot_lanes (Rows = kGemvLaneRows) and the interleaved dot (Rows = kInterleave): Rows / W
// independent chains of W rows each, one register apiece; w 64-byte aligned.
template <class Arch, class Fma, std::size_t Rows = kGemvLaneRows>
void gemv_simd_lanes(const float* x, const float* w, std::size_t n, float* acc) {
  using F = xsimd::batch<float, Arch>;
  constexpr std::size_t G = Rows / F::size;
  F a[G];
#pragma GCC unroll 4
  for (std::size_t g = 0; g < G; ++g) a[g] = F::load_unaligned(acc + g * F::size);
  for (std::size_t k = 0; k < n; ++k, w += Rows) {
    const F xk(x[k]);
#pragma GCC unroll 4
    for (std::size_t g = 0; g < G; ++g) a[g] = Fma::fma(xk, F::load_aligned(w + g * F::size), a[g]);
  }
#pragma GCC unroll 4
  for (std::size_t g = 0; g < G; ++g) a[g].store_unaligned(acc + g * F::size);
}

// The interleaved dot over 16-bit rows (dot_interleaved16_*): kInterleave / V::W chains of
// V::W rows; Widen::load(p, 0) gives the V::W elements at p as floats.
template <class V, class Widen>
void gemv_interleaved16(const float* x, const std::uint16_t* w, std::size_t n, float* acc) {
  constexpr std::size_t G = kInterleave / V::W;
  typename V::R a[G];
#pragma GCC unroll 8
  for (std::size_t g = 0; g < G; ++g) a[g] = V::load(acc + g * V::W);
  for (std::size_t k = 0; k < n; ++k, w += kInterleave) {
    const typename V::R xk = V::broadcast(x[k]);
#pragma GCC unroll 8
    for (std::size_t g = 0; g < G; ++g) a[g] = V::fma(xk, Widen::load(w + g * V::W, 0), a[g]);
  }
#pragma GCC unroll 8
  for (std::size_t g = 0; g < G; ++g) V::store(acc + g * V::W, a[g]);
}

// The kernel table of an ISA: V and its squares of f32, f16 and bf16 rows.
template <class V, class SquareF32, class SquareF16, class SquareBf16, class Fma, class Arch>
constexpr GemvF32Kernel gemv_simd_table() {
  return {V::groups * V::W,
          {&gemv_simd_rows<V, SquareF32, StoredType::f32>, &gemv_simd_rows<V, SquareF16, StoredType::f16>,
           &gemv_simd_rows<V, SquareBf16, StoredType::bf16>},
          &gemv_simd_cols<Arch, Fma>, &gemv_simd_lanes<Arch, Fma>};
}

}  // namespace lowp::quant::detail
