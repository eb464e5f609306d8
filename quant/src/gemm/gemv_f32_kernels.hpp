// Internal: the one-row float32 GEMM (GEMV) y = x B^T (+ y) that gemm_f32 runs when M = 1,
// reading each weight once in its stored type (no packing).
//
// Each y[j] gets gemm_f32's bits (gemm_f32_kernels.hpp): per K block of kGemmKc, one fma chain
// acc = fma(x_k, b_jk, acc) from acc = 0, then y[j] = acc or y[j] + acc. A kernel keeps one row
// of B per SIMD lane, so it needs B's rows transposed: it loads a square of rows x lanes
// elements and transposes it in registers. Threads take contiguous runs of rows; a row's
// chain is never split, so the thread count does not change the bits. Block-coded (custom)
// rows with a StoredMatrix::widen_lanes decoder skip the float transpose: it writes 32 rows'
// floats already in lanes into an L1 tile, which dot_lanes runs its chains over.
#pragma once
#include <atomic>
#include <cstddef>
#include <span>

#include "gemm_f32_kernels.hpp"
#include "work_share.hpp"

namespace lowp::quant::detail {

// acc[r] = the fma chain from 0 over k = 0 .. kc-1 of x[k] * w_r[k], for the kernel's `rows`
// rows; w[r] points at row r's first element in its stored type (StoredType f32, f16 or bf16:
// the array index), at any alignment. If `next` is set, f16 and bf16 kernels prefetch the same
// span of the next `rows` rows (next[r], read by the following call) along the way, a line per
// row as each 64 bytes of a row begin: out of memory, the hardware prefetcher alone left their
// rows' loads waiting. Float32 rows too where the kernel says so (V::prefetch_f32: AVX-512 on
// Zen 5; AVX2's ran slower with it on Zen 3).
using GemvRowsFn = void (*)(const float* x, const void* const* w, std::size_t kc, float* acc,
                            const void* const* next);
// acc[j] = the fma chain from 0 over k = 0 .. kc-1 of x[k] * bt[k * ldb + j], for j < n
// (B stored transposed, float32).
using GemvColsFn = void (*)(const float* x, const float* bt, std::size_t ldb, std::size_t kc, std::size_t n,
                            float* acc);

// Rows of B whose custom blocks StoredMatrix::widen_lanes decodes into lanes (groups of 8 laid
// side by side: element k of row r at w[k * kGemvLaneRows + r]); four independent groups of
// 8 (two of 16 on AVX-512) keep the fma units busy while each chain waits on its latency.
constexpr std::size_t kGemvLaneGroup = 8, kGemvLaneRows = 32;
// Rows of B per StoredMatrix::dot_lanes call (its public contract).
constexpr std::size_t kGemvDotRows = 64;
// acc[r] (r < kGemvLaneRows) continues its fma chain over k = 0 .. n-1 of x[k] * w[k * kGemvLaneRows + r].
using GemvLanesFn = void (*)(const float* x, const float* w, std::size_t n, float* acc);

// Float32 rows interleaved kInterleave at a time (lowp/quant/interleaved_rows.hpp): acc[r]
// (r < kInterleave) continues its fma chain over k = 0 .. n-1 of x[k] * w[k * kInterleave + r];
// w 64-byte aligned. One dot_lanes call's rows.
constexpr std::size_t kInterleave = kGemvDotRows;
using InterleavedDotFn = void (*)(const float* x, const float* w, std::size_t n, float* acc);
void dot_interleaved_scalar(const float* x, const float* w, std::size_t n, float* acc);
void dot_interleaved_avx2(const float* x, const float* w, std::size_t n, float* acc);
void dot_interleaved_avx512(const float* x, const float* w, std::size_t n, float* acc);
// The same over f16 or bf16 rows (T), interleaved the same way: element k of row r at
// w[k * kInterleave + r], each widened to float32 exactly.
using Interleaved16DotFn = void (*)(const float* x, const std::uint16_t* w, std::size_t n, float* acc);
template <StoredType T>
void dot_interleaved16_scalar(const float* x, const std::uint16_t* w, std::size_t n, float* acc);
template <StoredType T>
void dot_interleaved16_avx2(const float* x, const std::uint16_t* w, std::size_t n, float* acc);
template <StoredType T>
void dot_interleaved16_avx512(const float* x, const std::uint16_t* w, std::size_t n, float* acc);

struct GemvF32Kernel {
  std::size_t rows;        // rows of B per dot_rows call
  GemvRowsFn dot_rows[3];  // by StoredType: f32, f16, bf16
  GemvColsFn dot_cols;
  GemvLanesFn dot_lanes;
};

const GemvF32Kernel& gemv_f32_kernel(Isa isa);  // isa must be available
extern const GemvF32Kernel kGemvF32Scalar, kGemvF32Avx2, kGemvF32Avx512;

// The scalar chains the SIMD kernels finish their rows with when kc is not a whole number of
// their squares: acc[r] continues over k = k0 .. kc-1.
void gemv_rows_tail(StoredType t, const float* x, const void* const* w, std::size_t rows, std::size_t k0,
                    std::size_t kc, float* acc);

// y (1 x g.N) as gemm_f32_run computes it for g.M == 1, on `threads` OpenMP threads (>= 1).
void gemv_f32_run(const GemmF32Args& g, const GemvF32Kernel& kernel, int threads);
// The same for several products of one x (each g's a, a_cs and K the same), in one parallel
// region: their row groups, in order, split between the threads by run_shares.
void gemv_f32_run(std::span<const GemmF32Args> gs, const GemvF32Kernel& kernel, int threads);

}  // namespace lowp::quant::detail
