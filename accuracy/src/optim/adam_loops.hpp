// The optimizer's float32 element loops (Adam moments stored as float, float32 master weights:
// the default), included by optimizer.cpp (the build's baseline ISA) and adam_avx512.cpp (the
// same source under AVX-512, chosen at run time). Every value is IEEE double and single
// operations with no fused multiply-adds (both files are built with -ffp-contract=off), so the
// two give the same bits at any vector width.
#pragma once
#include <cmath>
#include <cstddef>

namespace lowp::train::detail {

// The scalars of one tensor's step (optimizer.hpp's formulas).
struct AdamScalars {
  double clip_scale = 1, beta1 = 0, beta2 = 0, bc1 = 1, bc2 = 1, eps = 0, lr = 0, decay = 0;
};

namespace {  // internal: each including file compiles its own copy, with its own flags

// g = clip_scale grad; m, v <- the moments rounded to float; term[i] = g^2 / max(v / bc2, eps^2)
// (the terms of r's sum, which the caller adds in element order).
inline void adam_moments_f32(const float* grad, float* mf, float* vf, double* term, std::size_t n,
                             const AdamScalars& s) {
  const double e2 = s.eps * s.eps;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = s.clip_scale * static_cast<double>(grad[i]);
    const auto mi = static_cast<float>(s.beta1 * static_cast<double>(mf[i]) + (1.0 - s.beta1) * g);
    const auto vi = static_cast<float>(s.beta2 * static_cast<double>(vf[i]) + (1.0 - s.beta2) * g * g);
    mf[i] = mi;
    vf[i] = vi;
    const double vh = static_cast<double>(vi) / s.bc2;
    term[i] = g * g / (vh > e2 ? vh : e2);
  }
}

// x <- x - decay x - lr (m / bc1) / (sqrt(v / bc2) + eps), rounded to float.
inline void adam_update_f32(float* x, const float* mf, const float* vf, std::size_t n, const AdamScalars& s) {
  for (std::size_t i = 0; i < n; ++i) {
    const double xi = x[i];
    x[i] = static_cast<float>(xi - s.decay * xi -
                              s.lr * (static_cast<double>(mf[i]) / s.bc1) /
                                  (std::sqrt(static_cast<double>(vf[i]) / s.bc2) + s.eps));
  }
}

}  // namespace
}  // namespace lowp::train::detail
