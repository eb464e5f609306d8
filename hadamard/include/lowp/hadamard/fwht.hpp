// Fast Walsh-Hadamard transform (FWHT) of float32 data, in place.
//
// x <- scale * H_n x with H_n the unnormalised Sylvester-ordered Hadamard matrix
// (H_1 = [1], H_2n = [[H_n, H_n], [H_n, -H_n]]), n a power of two, 1 <= n <= 2^30.
// Every kernel (scalar, AVX2, AVX-512) runs the same butterflies in the same order (stage
// h = 1, 2, 4, ... n/2, then the scale), so all of them and every thread count give bitwise
// identical results for finite data.
// NaN/Inf in a vector propagate: they never crash and never touch other rows, but an Inf may
// turn into NaN (Inf - Inf) and NaN payloads are unspecified.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "lowp/numerics/cpu.hpp"

namespace lowp::hadamard {

// The scale that makes the transform orthonormal: 1/sqrt(n) rounded to float.
inline float orthonormal_scale(std::size_t n) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
}

// One vector of length n. Throws lowp::Error naming n if n is not a power of two.
void fwht(float* x, std::size_t n, float scale = 1.0f);

// Each of `rows` rows of a row-major matrix (row r starts at x + r*stride, stride >= n, else
// lowp::Error); elements between n and stride are not touched. Uses both cores (OpenMP) when
// rows*n is large enough to pay, with bitwise identical results at any thread count.
void fwht_rows(float* x, std::size_t rows, std::size_t n, std::size_t stride, float scale = 1.0f);

// fwht_rows out of place: dst's rows become the transforms of src's (both laid out with
// `stride`; src == dst, or not overlapping). The first pass reads src, which saves a copy.
void fwht_rows_from(const float* src, float* dst, std::size_t rows, std::size_t n, std::size_t stride,
                    float scale = 1.0f);

// Transforms of length m down each of the columns [0, cols) of an m-row block (row r at
// src + r*stride, stride >= cols, else lowp::Error), written to dst (the same layout; src == dst
// or not overlapping): column c becomes scale * H_m (src[0][c], ..., src[m-1][c]), bitwise what
// fwht_rows gives those vectors stored as rows. On the calling thread (callers split the rows
// or columns), in cache-sized strips of columns.
void fwht_columns(const float* src, float* dst, std::size_t m, std::size_t cols, std::size_t stride,
                  float scale = 1.0f);

// Storage variants: bfloat16 / IEEE binary16 bit patterns, computed in float32 and rounded
// back once with round-to-nearest-even (overflow to Inf).
void fwht_rows_bf16(std::uint16_t* x, std::size_t rows, std::size_t n, std::size_t stride,
                    float scale = 1.0f);
void fwht_rows_f16(std::uint16_t* x, std::size_t rows, std::size_t n, std::size_t stride,
                   float scale = 1.0f);

// fwht_rows with an explicit kernel (for tests and benchmarks); lowp::Error if this CPU cannot
// run `isa`. fwht_rows uses lowp::best_isa().
void fwht_rows_isa(Isa isa, float* x, std::size_t rows, std::size_t n, std::size_t stride,
                   float scale = 1.0f);

namespace reference {
// The plain scalar butterfly every SIMD kernel is checked against (single thread).
void fwht(float* x, std::size_t n, float scale = 1.0f);
}  // namespace reference

}  // namespace lowp::hadamard
