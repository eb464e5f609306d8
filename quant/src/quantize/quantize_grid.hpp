// Internal: the group grid of a granularity, the per-group amax pass and the per-group scaling
// pass that quantize / dequantize / fake_quant share.
//
// A rows x cols tensor is cut into groups of rh rows x cw columns: group (r / rh, c / cw),
// numbered row-major. tensor: one group; row: 1 x cols; column: rows x 1; block: 1 x b;
// tile: b x b. The last group of a row / column band may be partial (padding: the missing
// elements are zeros, which change no amax, so they are simply not visited).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lowp/quant/quantize.hpp"

namespace lowp::quant::detail {

struct Grid {
  std::size_t rows = 0, cols = 0;
  std::size_t rh = 1, cw = 1;    // group height and width
  std::size_t ngr = 1, ngc = 1;  // groups per column / per row
  std::size_t count() const noexcept { return ngr * ngc; }
  std::size_t size() const noexcept { return rows * cols; }
};
Grid make_grid(const QuantSpec& spec, std::size_t rows, std::size_t cols);

// Tensors at least this large are processed with OpenMP (over rows, bands or pieces).
inline constexpr std::size_t kParallelMin = std::size_t{1} << 16;
// The flat pieces the cast passes use: a multiple of 4 elements, so that packed 4- and 6-bit
// codes of a piece start on a byte / group boundary.
inline constexpr std::size_t kPiece = 16384;

struct GroupStats {
  std::vector<float> amax;  // per group, over finite elements
  std::size_t nan_inputs = 0, inf_inputs = 0;
};
GroupStats group_stats(const Grid& g, const float* x);

// Adds the NaN and the +-Inf elements of x[0..n) to the counts.
void count_nonfinite(const float* x, std::size_t n, std::size_t& nan, std::size_t& inf) noexcept;

// dst[i - dst_off] = src[i] * v[group(i)] (mul) or src[i] / v[group(i)], for flat indices i
// in [a, b). src and dst may be the same array (dst_off 0).
void scale_range(const Grid& g, const float* src, float* dst, std::size_t dst_off, std::size_t a,
                 std::size_t b, const float* v, bool mul);

}  // namespace lowp::quant::detail
