// Internal: a blocked matrix transpose (float32 operands, int8 codes).
#pragma once
#include <cstddef>
#include <cstdint>

namespace lowp::quant::detail {

// dst (cols x rows) = src^T for a row-major rows x cols src; blocked, OpenMP over row blocks.
template <class T>
void transpose(const T* src, T* dst, std::size_t rows, std::size_t cols);

}  // namespace lowp::quant::detail
