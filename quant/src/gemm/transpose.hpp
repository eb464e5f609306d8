// Internal: a blocked matrix transpose (float32 operands, int8 codes).
#pragma once
#include <cstddef>
#include <cstdint>

#include "lowp/numerics/cpu.hpp"

namespace lowp::quant::detail {

// dst (cols x rows) = src^T for a row-major rows x cols src; blocked, OpenMP over row blocks,
// float32 strips in `isa`'s registers (transpose: best_isa()'s), int8 ones by transpose_bytes.
template <class T>
void transpose(const T* src, T* dst, std::size_t rows, std::size_t cols, Isa isa);
template <class T>
void transpose(const T* src, T* dst, std::size_t rows, std::size_t cols) {
  transpose(src, dst, rows, cols, best_isa());
}

// dst[c * dld + r] = src[r * sld + c] for r < rows, c < cols (bytes, any strides): 16 x 16
// blocks in the baseline ISA's 16-byte vectors, the edges one byte at a time.
void transpose_bytes(const std::uint8_t* src, std::size_t sld, std::uint8_t* dst, std::size_t dld, std::size_t rows,
                     std::size_t cols);

// Columns [0, cols - cols % 16) of a strip of 16 rows (src: row stride cols) into dst (row
// stride rows); returns the columns done. Compiled with AVX-512.
std::size_t transpose_strip16_avx512(const float* src, float* dst, std::size_t rows, std::size_t cols);

}  // namespace lowp::quant::detail
