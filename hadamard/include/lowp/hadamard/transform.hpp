// Hadamard transforms of any supported length n, on float32 rows, in place.
//
// Kronecker transform: for n = m * 2^k, x <- scale * (H_m (x) H_{2^k}) x, where H_{2^k} is
// Sylvester's (fwht.hpp) and H_m = hadamard_matrix(m) (matrix.hpp). Element i*2^k + t of a row
// is entry t of block i: every block gets an FWHT, then each output block is the +-1
// combination sum_j H_m[i][j] * block_j. m is picked by kronecker_order(n): m = 1 (a plain FWHT)
// for powers of two, else the largest m in supported_orders() with n = m * 2^k. With
// `transposed`, H_m^T replaces H_m (the matrix becomes its transpose; Sylvester's is
// symmetric), which with the same scale undoes the transform up to the factor scale^2 * n.
//
// Block-diagonal transform: for any n divisible by a power of two b, each of the n/b
// consecutive blocks of b elements gets x <- scale * H_b x independently. It is the explicit
// fallback for lengths without a Kronecker transform (use largest_power_of_two_block(n)).
//
// Arithmetic is float32 throughout: each output goes through k butterfly stages, then 3
// additions inside a table entry and m/4 - 1 across entries (see src/transform_kernels.hpp),
// each rounded once, and one multiply by scale. Worst case that is a relative error of
// (k + m/4 + 3) * 2^-24 on the sum of absolute terms; on Gaussian data the measured 2-norm
// error stays below 0.5 * log2(n) * 2^-24 of the result's norm (tests/hadamard).
// Every kernel (scalar, AVX2, AVX-512) and thread count give bitwise identical results.
// NaN or Inf in a row propagate to that row's outputs (block-diagonal: to its block's) and
// never affect other rows; an Inf may come out as NaN (Inf - Inf).
#pragma once
#include <cstddef>

#include "lowp/hadamard/fwht.hpp"  // orthonormal_scale
#include "lowp/numerics/cpu.hpp"

namespace lowp::hadamard {

// The order m of the Kronecker transform for length n: 1 if n is a power of two, the
// largest m of supported_orders() with n = m * 2^k, or 0 if there is none (or n = 0).
std::size_t kronecker_order(std::size_t n);

// The largest power of two dividing n (n > 0), the block for block-diagonal Hadamard.
std::size_t largest_power_of_two_block(std::size_t n);

// Kronecker transform of `rows` rows of length n (row r at x + r*stride; stride >= n, else
// lowp::Error; elements between n and stride untouched). lowp::Error naming n if
// kronecker_order(n) == 0, with the block-diagonal alternative in the message.
// Uses both cores (OpenMP) when the work is large enough.
void hadamard_transform_rows(float* x, std::size_t rows, std::size_t n, std::size_t stride,
                             float scale = 1.0f, bool transposed = false);

// One vector (rows = 1, stride = n).
void hadamard_transform(float* x, std::size_t n, float scale = 1.0f, bool transposed = false);

// hadamard_transform_rows with an explicit kernel (tests, benchmarks); lowp::Error if this
// CPU cannot run `isa`.
void hadamard_transform_rows_isa(Isa isa, float* x, std::size_t rows, std::size_t n,
                                 std::size_t stride, float scale = 1.0f, bool transposed = false);

// Block-diagonal Hadamard with blocks of b elements (b a power of two dividing n; else
// lowp::Error naming b and n).
void block_hadamard_rows(float* x, std::size_t rows, std::size_t n, std::size_t stride,
                         std::size_t b, float scale = 1.0f);

}  // namespace lowp::hadamard
