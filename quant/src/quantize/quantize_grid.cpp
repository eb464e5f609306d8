// The group grid, the per-group amax pass and the per-group scaling pass.
#include "quantize_grid.hpp"

#include <algorithm>
#include <cstring>

#include "quantize_kernels.hpp"

namespace lowp::quant::detail {
namespace {

constexpr std::uint32_t kAbs = 0x7fffffffu, kInf = 0x7f800000u;

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

std::uint32_t bits(const float* p) noexcept {
  std::uint32_t b;
  std::memcpy(&b, p, 4);
  return b;
}

float from_bits(std::uint32_t b) noexcept {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace

void count_nonfinite(const float* x, std::size_t n, std::size_t& nan, std::size_t& inf) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t b = bits(x + i) & kAbs;
    nan += b > kInf;
    inf += b == kInf;
  }
}

Grid make_grid(const QuantSpec& spec, std::size_t rows, std::size_t cols) {
  Grid g;
  g.rows = rows;
  g.cols = cols;
  const std::size_t r1 = std::max<std::size_t>(rows, 1), c1 = std::max<std::size_t>(cols, 1);
  switch (spec.granularity) {
    case Granularity::tensor: g.rh = r1; g.cw = c1; break;
    case Granularity::row: g.rh = 1; g.cw = c1; break;
    case Granularity::column: g.rh = r1; g.cw = 1; break;
    case Granularity::block: g.rh = 1; g.cw = spec.block; break;
    case Granularity::tile: g.rh = g.cw = spec.block; break;
  }
  if (spec.granularity == Granularity::tensor) return g;  // one group, even when empty
  g.ngr = ceil_div(rows, g.rh);
  g.ngc = ceil_div(cols, g.cw);
  return g;
}

GroupStats group_stats(const Grid& g, const float* x) {
  const QuantKernels& k = quant_kernels();
  GroupStats st;
  std::vector<std::uint32_t> am(g.count(), 0u);
  const std::size_t rows = g.rows, cols = g.cols;
  const bool par = g.size() >= kParallelMin;
  std::size_t nan = 0, inf = 0;
  if (g.rh == 1) {
    // row / block: each row owns its groups.
#pragma omp parallel for schedule(static) reduction(+ : nan, inf) if (par)
    for (std::size_t r = 0; r < rows; ++r) {
      const float* xr = x + r * cols;
      if (k.group_max(xr, cols, g.cw, am.data() + r * g.ngc) >= kInf) count_nonfinite(xr, cols, nan, inf);
    }
  } else if (g.ngr > 1) {
    // tiles, and 1-D blocks down the columns (cw 1): each band of rh rows owns its groups.
#pragma omp parallel for schedule(static) reduction(+ : nan, inf) if (par)
    for (std::size_t gr = 0; gr < g.ngr; ++gr) {
      std::vector<std::uint32_t> row(g.cw > 1 ? g.ngc : 0);
      std::uint32_t* band = am.data() + gr * g.ngc;
      for (std::size_t r = gr * g.rh; r < std::min(rows, (gr + 1) * g.rh); ++r) {
        const float* xr = x + r * cols;
        if (g.cw == 1) {
          if (k.max_into(xr, cols, band) >= kInf) count_nonfinite(xr, cols, nan, inf);
          continue;
        }
        if (k.group_max(xr, cols, g.cw, row.data()) >= kInf) count_nonfinite(xr, cols, nan, inf);
        for (std::size_t c = 0; c < g.ngc; ++c) band[c] = std::max(band[c], row[c]);
      }
    }
  } else {
    // tensor / column (and tiles one band high): per-thread partial maxima over rows, merged
    // by max, which is exact, so the result does not depend on the split.
    const bool column = g.cw == 1;
#pragma omp parallel reduction(+ : nan, inf) if (par)
    {
      std::vector<std::uint32_t> acc(column ? cols : g.ngc, 0u), row(column ? 0 : g.ngc);
#pragma omp for schedule(static)
      for (std::size_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        std::uint32_t raw;
        if (column) {
          raw = k.max_into(xr, cols, acc.data());
        } else {
          raw = k.group_max(xr, cols, g.cw, row.data());
          for (std::size_t c = 0; c < g.ngc; ++c) acc[c] = std::max(acc[c], row[c]);
        }
        if (raw >= kInf) count_nonfinite(xr, cols, nan, inf);
      }
#pragma omp critical(lowp_quant_group_stats)
      for (std::size_t i = 0; i < acc.size(); ++i) am[i] = std::max(am[i], acc[i]);
    }
  }
  st.amax.resize(am.size());
  for (std::size_t i = 0; i < am.size(); ++i) st.amax[i] = from_bits(am[i]);
  st.nan_inputs = nan;
  st.inf_inputs = inf;
  return st;
}

void scale_range(const Grid& g, const float* src, float* dst, std::size_t dst_off, std::size_t a,
                 std::size_t b, const float* v, bool mul) {
  const QuantKernels& k = quant_kernels();
  const std::size_t cols = g.cols;
  std::size_t i = a;
  while (i < b) {
    const std::size_t r = i / cols, c = i % cols;
    const std::size_t row_end = std::min(b, (r + 1) * cols), n = row_end - i;
    const float* vr = v + (r / g.rh) * g.ngc;
    if (g.cw == 1) k.scale_each(src + i, dst + (i - dst_off), n, vr + c, mul);
    else k.scale_groups(src + i, dst + (i - dst_off), n, g.cw - c % g.cw, g.cw, vr + c / g.cw, mul);
    i = row_end;
  }
}

}  // namespace lowp::quant::detail
