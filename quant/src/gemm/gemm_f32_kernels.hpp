// Internal: the float32 GEMM micro-kernels, one per instruction set, and the driver they plug into.
//
// A tile computes an MR x NR block of C from MR rows of A (row-major, reduction along the
// row) and a packed sliver of B (for each k, NR consecutive floats). Each element is one
// fused multiply-add chain acc = fma(a_k, b_k, acc) from acc = 0 over the kc steps, then
// C = acc or C = C + acc. Every kernel performs exactly these roundings, so all kernels, tile
// shapes and thread splits give the same bits; only the K block (kGemmKc) sets the order.
#pragma once
#include <cstddef>

#include "lowp/numerics/cpu.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::quant::detail {

constexpr std::size_t kGemmKc = 256;  // K block: sums run over 256 products, then into C

struct GemmF32Kernel {
  std::size_t mr, nr;
  // c (mr x nr, row stride ldc) = or += a (mr x kc, row stride lda) times the packed sliver
  // bp (kc x nr, 64-byte aligned).
  void (*tile)(const float* a, std::size_t lda, const float* bp, std::size_t kc, float* c, std::size_t ldc,
               bool add);
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

// Runs the GEMM with `kernel` on `threads` OpenMP threads (>= 1); the bits depend on neither.
void gemm_f32_run(const GemmF32Args& g, const GemmF32Kernel& kernel, int threads);

}  // namespace lowp::quant::detail
