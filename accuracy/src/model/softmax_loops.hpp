// The attention softmax's row loop (model/attention.hpp's softmax_row), included by
// attention.cpp (the build's baseline ISA) and softmax_avx512.cpp (the same source under
// AVX-512, chosen at run time). Both files are built with -ffp-contract=off: every value is IEEE
// single operations in a fixed order, so the two give the same bits at any vector width.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "model/exp.hpp"

namespace lowp::accuracy::detail {
namespace {  // internal: each including file compiles its own copy, with its own flags

constexpr std::size_t kLanes = 8;  // partial sums per reduction, combined pairwise in lane order

// Combines kLanes partial sums in a fixed tree.
inline float combine(const float* l) { return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])); }

float softmax_row_values(float* s, std::size_t n, float scale, bool normalize) {
  float mx[kLanes], sum[kLanes];
  std::fill_n(mx, kLanes, -INFINITY);
  std::fill_n(sum, kLanes, 0.0f);
  const std::size_t body = n / kLanes * kLanes;
  for (std::size_t j = 0; j < body; j += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) mx[l] = std::max(mx[l], s[j + l]);
  for (std::size_t j = body; j < n; ++j) mx[j - body] = std::max(mx[j - body], s[j]);
  const float m = std::max(std::max(std::max(mx[0], mx[1]), std::max(mx[2], mx[3])),
                           std::max(std::max(mx[4], mx[5]), std::max(mx[6], mx[7])));
  for (std::size_t j = 0; j < n; ++j) s[j] = exp_nonpositive((s[j] - m) * scale);  // scale > 0: the max commutes
  for (std::size_t j = 0; j < body; j += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) sum[l] += s[j + l];
  for (std::size_t j = body; j < n; ++j) sum[j - body] += s[j];
  const float total = combine(sum);
  if (normalize)
    for (std::size_t j = 0; j < n; ++j) s[j] /= total;
  return total;
}

}  // namespace
}  // namespace lowp::accuracy::detail
