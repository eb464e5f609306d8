// Internal: the decoder of PackedWeight's rows (packed_weight.cpp; the AVX2 kernel in
// packed_weight_avx2.cpp, equal to the scalar one bitwise) and its one-pass decode and dot
// (packed_weight_avx2.cpp, packed_weight_avx512.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "lowp/numerics/cpu.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::quant::detail {

// A row is `groups` float32 factors, then cols / 2 bytes of codes (element 2i in the low
// nibble of byte i). Element k is table[code] * f[k / group], or table[code] / f[k / group]
// when divide is set: the code's value times the table entry computed once per group.
struct PackedRows {
  float table[16];        // the element format's value of each code (0 past its codes)
  std::size_t group = 0;  // elements per factor, a multiple of 16
  std::size_t groups = 0, row_bytes = 0;
  bool divide = false;
};

// out[0 .. n) = elements k0 .. k0 + n - 1 of `row`; k0 and n are multiples of 16 (StoredMatrix::block).
using PackedWidenFn = void (*)(const PackedRows& p, const std::uint8_t* row, std::size_t k0, std::size_t n,
                               float* out);
PackedWidenFn packed_widen_kernel(Isa isa);  // isa must be available
// The layout of a PackedWeight's matrix() (m must be one).
const PackedRows& packed_rows(const StoredMatrix& m);
void packed_widen_scalar(const PackedRows& p, const std::uint8_t* row, std::size_t k0, std::size_t n, float* out);
void packed_widen_avx2(const PackedRows& p, const std::uint8_t* row, std::size_t k0, std::size_t n, float* out);

// StoredMatrix::dot_lanes on 64 rows of the layout p (k0, n multiples of 32): acc[r] continues
// its fma chain over elements k0 .. k0 + n - 1 of rows[r], each packed_widen_scalar's value.
using PackedDotFn = void (*)(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n,
                             const float* x, float* acc);
PackedDotFn packed_dot_kernel(Isa isa);  // nullptr where the ISA has none (scalar)
void packed_dot_avx2(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                     float* acc);
void packed_dot_avx512(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                       float* acc);
// The same over InterleavedRows' copy of the rows (StoredMatrix::dot_interleaved), or nullptr (scalar).
PackedDotFn packed_dot_interleaved_kernel(Isa isa);
void packed_dot_interleaved_avx2(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n,
                                 const float* x, float* acc);
void packed_dot_interleaved_avx512(const PackedRows& p, const void* const* rows, std::size_t k0, std::size_t n,
                                   const float* x, float* acc);

}  // namespace lowp::quant::detail
