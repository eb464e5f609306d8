// SwiGLU's element loops (model/layers.hpp), included by layers.cpp (the build's baseline ISA)
// and swiglu_avx512.cpp (the same source under AVX-512, chosen at run time). Each value's
// arithmetic is IEEE single or double operations with no fused multiply-adds (both files are
// built with -ffp-contract=off), so the two give the same bits at any vector width.
#pragma once
#include <cmath>
#include <cstddef>

#include "model/exp.hpp"

namespace lowp::accuracy::detail {
namespace {  // internal: each including file compiles its own copy, with its own flags

// x sigmoid(x), the sigmoid from e^-|x| (model/exp.hpp, vectorized) for either sign of x.
inline float silu_inline(float x) {
  const float e = exp_nonpositive(-std::fabs(x)), d = 1.0f / (1.0f + e);
  return x * (x >= 0 ? d : e * d);
}

// h[0..n) = silu(g) u.
inline void swiglu_forward_values(float* h, const float* g, const float* u, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) h[i] = silu_inline(g[i]) * u[i];
}

// silu'(g) = s (1 + g (1 - s)) with s = sigmoid(g) = 1 / (1 + e^-g), or e^g / (1 + e^g) for g < 0
// (e^-|g| <= 1 either way), in double: dg = dh u silu'(g), du = dh g s.
inline void swiglu_backward_values(float* dg, float* du, const float* dh, const float* g, const float* u,
                                   std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double e = exp_nonpositive(-std::fabs(g[i])), d = 1.0 / (1.0 + e);
    const double s = g[i] >= 0 ? d : e * d;
    dg[i] = static_cast<float>(dh[i] * u[i] * s * (1.0 + g[i] * (1.0 - s)));
    du[i] = static_cast<float>(dh[i] * g[i] * s);
  }
}

}  // namespace
}  // namespace lowp::accuracy::detail
