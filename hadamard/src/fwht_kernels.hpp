// Internal: the per-ISA FWHT kernels that fwht.cpp dispatches to.
//
// Every kernel performs exactly the butterflies of reference::fwht, stage h = 1, 2, 4, ...
// in ascending order for every element (a+b and a-b, rounded once each; the scale is one
// multiply after the last stage), so results match the reference bitwise.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lowp::hadamard::detail {

// A cache-resident transform: vectors of up to kBlock floats are done by `rows` in one go;
// longer ones as kBlock-long blocks (`rows`) followed by column transforms (`cols`).
inline constexpr std::size_t kBlock = std::size_t{1} << 14;

struct Kernels {
  std::size_t min_n;  // smallest n the SIMD paths accept (one register)
  // Full transform of `rows` rows of length n (min_n <= n <= kBlock) starting `stride` apart,
  // read from `in` (x itself, or a source laid out like x that does not overlap it), written
  // to x.
  void (*rows)(const float* in, float* x, std::size_t rows, std::size_t n, std::size_t stride, float scale);
  // Transforms of length m down the columns [0, width) of an m x stride row-major matrix;
  // width is a multiple of min_n. `in` as for rows.
  void (*cols)(const float* in, float* x, std::size_t m, std::size_t stride, std::size_t width, float scale);
};

const Kernels& kernels_avx2() noexcept;
const Kernels& kernels_avx512() noexcept;

}  // namespace lowp::hadamard::detail
