// GEMMs on float32 data: C = A * B^T with A (M x K) and B (N x K) row-major, contiguous.
//
// Every lowp format decodes exactly to float32, so a GEMM "in format F" is a float32 GEMM on
// dequantized operands; what differs between hardware is the accumulation, emulated here.
#pragma once
#include <cstddef>
#include <cstdint>
#include "lowp/numerics/rounding.hpp"

namespace lowp::quant {

// C (M x N) = A B^T (+ C when accumulate). float32 accumulation (Eigen). threads = 0: all.
void gemm_f32(const float* A, const float* B, float* C, std::size_t M, std::size_t N, std::size_t K,
              bool accumulate = false, int threads = 0);

// A limited-precision floating accumulator: the products a*b are exact; each addition into
// the accumulator (the first one, 0 + a*b, included) is rounded to `man_bits` mantissa bits
// and `exp_bits` of exponent range (IEEE-style: bias 2^(exp_bits-1) - 1, subnormals,
// overflow to infinity or to the largest finite value as the rounding mode dictates).
// promote_every = k > 0: every k products the partial sum is added into a float32 total
// (round to nearest even) and restarted (DeepSeek-V3's work-around for the ~14-bit
// accumulation of FP8 tensor cores). man_bits in [1, 23], exp_bits in [2, 8] (else lowp::Error).
// Round::stochastic draws random_bits(rng_key(seed), (i * N + j) * K + k) for the addition
// of product k into C[i][j].
struct Accumulation {
  int man_bits = 23;
  int exp_bits = 8;
  Round round = Round::toward_zero;
  std::size_t promote_every = 0;
  std::uint64_t seed = 0;
};
void gemm_emulated(const float* A, const float* B, float* C, std::size_t M, std::size_t N,
                   std::size_t K, const Accumulation& acc);

}  // namespace lowp::quant
