// Internal: the float32 GEMM micro-kernels, one per instruction set, and the driver they plug into.
//
// A tile computes an MR x NR block of C from a packed sliver of A (for each k, MR consecutive
// floats: the rows) and a packed sliver of B (for each k, NR consecutive floats: the columns).
// Each element is one fused multiply-add chain acc = fma(a_k, b_k, acc) from acc = 0 over the
// kc steps, then C = acc or C = C + acc. Every kernel performs exactly these roundings, so all
// kernels, tile shapes, blockings and thread splits give the same bits; only the K block
// (kGemmKc) sets the order.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <string>

#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::quant::detail {

constexpr std::size_t kGemmKc = 256;  // K block: sums run over 256 products, then into C

// out[k * width + r] = element k of row r (float32, at any alignment) for r < n, 0 for
// n <= r < width, k < kc: how both operands' slivers are packed (width = mr or nr, up to
// kMaxWidth; kc up to kGemmKc).
using PackRowsFn = void (*)(const void* const* rows, std::size_t n, std::size_t width, std::size_t kc, float* out);
constexpr std::size_t kMaxWidth = 32;
void pack_rows_scalar(const void* const* rows, std::size_t n, std::size_t width, std::size_t kc, float* out);
void pack_rows_avx2(const void* const* rows, std::size_t n, std::size_t width, std::size_t kc, float* out);
// out[k * width + c] = src[k * ld + c] for c < n, 0 for n <= c < width, k < kc: the slivers of
// an operand stored transposed (its rows side by side along k), width up to kMaxWidth.
using PackColsFn = void (*)(const float* src, std::size_t ld, std::size_t n, std::size_t width, std::size_t kc,
                            float* out);
void pack_cols_scalar(const float* src, std::size_t ld, std::size_t n, std::size_t width, std::size_t kc, float* out);
void pack_cols_avx512(const float* src, std::size_t ld, std::size_t n, std::size_t width, std::size_t kc, float* out);

struct GemmF32Kernel {
  std::size_t mr, nr;
  // c (mr x nr, row stride ldc) = or += the packed slivers ap (kc x mr) times bp (kc x nr, 64-byte
  // aligned). c_next: the C tile the next call will update (a prefetch hint), or null.
  void (*tile)(const float* ap, const float* bp, std::size_t kc, float* c, std::size_t ldc, bool add,
               const float* c_next);
  PackRowsFn pack_rows;
  PackColsFn pack_cols;
  // Whether the driver fetches the next B sliver into L2 over the current sliver's tiles. On
  // Zen 3 (AVX2, 512 KiB L2) the tiles otherwise waited on L3 at each sliver's start; on Zen 5
  // (AVX-512) the hardware prefetcher keeps up and the extra prefetches cost 3 % at 2048^3.
  bool prefetch_next_sliver = false;
};

const GemmF32Kernel& gemm_f32_kernel(Isa isa);  // isa must be available
extern const GemmF32Kernel kGemmF32Scalar, kGemmF32Avx2, kGemmF32Avx512;

// The operands of one GEMM C (M x N) = A B^T (+ C when accumulate).
// A: element (i, k) at a[i * a_rs + k * a_cs] (a_cs == 1: rows read in place).
// B: `b` (a stored matrix, N x K) or, when b_t is set, float32 stored K x N (element (j, k) at
// b_t[k * N + j]).
struct GemmF32Args {
  const float* a = nullptr;
  std::size_t a_rs = 0, a_cs = 1;
  StoredMatrix b;
  const float* b_t = nullptr;
  float* c = nullptr;
  std::size_t M = 0, N = 0, K = 0;
  bool accumulate = false;
};

// A 64-byte aligned scratch buffer that grows and is kept per thread (no page faults per call).
struct Scratch {
  float* p = nullptr;
  std::size_t n = 0;
  ~Scratch() { std::free(p); }
  float* get(std::size_t want) {
    if (want > n) {
      std::free(p);
      n = (want + 15) / 16 * 16;
      p = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
      if (!p) throw Error("gemm_f32: out of memory for a " + std::to_string(n * sizeof(float)) + "-byte panel");
    }
    return p;
  }
};

// Elements [k0, k0 + n) of logical row r of B as float32 (gemm_f32.cpp).
void widen_row(const StoredMatrix& b, std::size_t r, std::size_t k0, std::size_t n, float* out);

// Runs the GEMM with `kernel` on `threads` OpenMP threads (>= 1); the bits depend on neither.
void gemm_f32_run(const GemmF32Args& g, const GemmF32Kernel& kernel, int threads);

}  // namespace lowp::quant::detail
