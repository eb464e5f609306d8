// Shared by the linear-layer tests: a random layer problem, one forward + backward step, and
// an independent float reference of per-tensor / per-row / 1-D block amax fake quantization
// written from the scalar codec (not from lowp_quant).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lowp/formats/codec.hpp"
#include "lowp/quant/linear.hpp"
#include "support/test_support.hpp"

namespace lowp::test {

struct LinearProblem {
  std::size_t M = 0, N = 0, K = 0;
  std::vector<float> X, W, b, G;  // G: the upstream gradient dY
};

// X ~ N(0, 1), W ~ N(0, 1/K) (the usual init), b ~ N(0, 0.01), dY ~ N(0, 1).
inline LinearProblem make_problem(std::size_t M, std::size_t N, std::size_t K, std::uint32_t seed) {
  LinearProblem p{M, N, K, normal_floats(M * K, seed), normal_floats(N * K, seed + 1),
                  normal_floats(N, seed + 2), normal_floats(M * N, seed + 3)};
  const float ws = 1.0f / std::sqrt(static_cast<float>(K));
  for (float& w : p.W) w *= ws;
  for (float& v : p.b) v *= 0.1f;
  return p;
}

struct LinearResult {
  std::vector<float> Y, dX, dW, db;
};

// `steps` forward + backward steps on the same data (seeds fwd_seed + i, bwd_seed + i); the
// last step's Y and dX, and the gradients of the last step alone.
inline LinearResult run_linear(const quant::LinearRecipe& r, const LinearProblem& p, std::uint64_t fwd_seed = 1,
                               std::uint64_t bwd_seed = 2, int steps = 1) {
  quant::QuantLinear layer(r, p.K, p.N, true);
  layer.weight() = p.W;
  layer.bias() = p.b;
  LinearResult out{std::vector<float>(p.M * p.N), std::vector<float>(p.M * p.K), {}, {}};
  for (int i = 0; i < steps; ++i) {
    std::fill(layer.weight_grad().begin(), layer.weight_grad().end(), 0.0f);
    std::fill(layer.bias_grad().begin(), layer.bias_grad().end(), 0.0f);
    layer.forward(p.X.data(), p.M, out.Y.data(), fwd_seed + static_cast<std::uint64_t>(i));
    layer.backward(p.G.data(), out.dX.data(), bwd_seed + static_cast<std::uint64_t>(i));
  }
  out.dW = layer.weight_grad();
  out.db = layer.bias_grad();
  return out;
}

// ||a - ref||_F / ||ref||_F in double.
// E2M1 round to nearest, ties to the even code, saturating at 6 (the OCP FP4 grid), from the
// grid itself: the independent FP4 rounding of the linear tests.
inline double e2m1_rne(double y) {
  static const double grid[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const double a = std::min(std::fabs(y), 6.0);
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    const double d = std::fabs(a - grid[c]), db = std::fabs(a - grid[best]);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return std::copysign(grid[best], y);
}

inline double rel_frob(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(a[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

// The relative error of the mean of dX and dW over 16 / 64 / 256 seeds, as a gtest property
// ("dx16 dx64 dx256 dw16 dw64 dw256"): docs/quantization.md's table of it is generated from
// --gtest_output=json (scripts/results, SEED_MEANS).
inline void record_seed_means(const std::string& name, const std::vector<double>& dx, const std::vector<double>& dw) {
  char line[160];
  std::snprintf(line, sizeof line, "%.6g %.6g %.6g %.6g %.6g %.6g", dx.at(0), dx.at(1), dx.at(2), dw.at(0), dw.at(1),
                dw.at(2));
  ::testing::Test::RecordProperty("seed_means " + name, line);
}

inline std::vector<float> transposed(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  std::vector<float> t(x.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}

// Fake quantization of L (rows x cols) in `f` with group amax scaling, groups of `block`
// consecutive elements along each row (block = cols: per row; block = rows * cols with
// per_tensor: one group). torchao's arithmetic: s = fmt_max / amax in float32, value =
// decode(encode(x * s, nearest-even, saturating)) / s.
inline std::vector<float> ref_fake_quant(const Format& f, std::vector<float> L, std::size_t rows, std::size_t cols,
                                         std::size_t block, bool per_tensor = false) {
  const float fmax = static_cast<float>(f.max_finite());
  CastOptions opt;
  opt.saturate = true;
  // One group: the `len` consecutive elements from `begin`.
  const auto apply = [&](std::size_t begin, std::size_t len) {
    float amax = 0;
    for (std::size_t j = begin; j < begin + len; ++j) amax = std::max(amax, std::fabs(L[j]));
    const float s = amax == 0.0f ? 1.0f : fmax / amax;
    for (std::size_t j = begin; j < begin + len; ++j)
      L[j] = static_cast<float>(decode(f, encode(f, L[j] * s, opt))) / s;
  };
  if (per_tensor) {
    apply(0, rows * cols);
  } else {
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; c += block) apply(r * cols + c, std::min(block, cols - c));
  }
  return L;
}

// C (m x n) = A B^T in double, rounded to float; A is m x k, B is n x k.
inline std::vector<float> ref_gemm(const std::vector<float>& A, const std::vector<float>& B, std::size_t m,
                                   std::size_t n, std::size_t k) {
  std::vector<float> C(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t t = 0; t < k; ++t) acc += static_cast<double>(A[i * k + t]) * B[j * k + t];
      C[i * n + j] = static_cast<float>(acc);
    }
  return C;
}


// ---------------------------------------------------------------------------------------------
// An upper bound on a recipe's relative Frobenius error against float32, from an error
// analysis (the tolerances of test_linear_presets.cpp and test_linear_training.cpp).
//
// One operand. Quantizing element x of a group with scale s (value = code * s) leaves an
// error e with e^2 <= u^2 x^2 + v^2 s^2: u = 2^-(m+1) is half an ulp relative to x in the
// element format's normal range (m mantissa bits), v s half the subnormal spacing below it.
// Stochastic rounding obeys the same bound in mean square (f(1-f) ulp^2 <= ulp^2 / 4). The
// scale rule bounds s <= r * amax_g / fmt_max: r = 1 for amax and int, 2 for the power-of-two
// rules (pow2, rceil), fmt_max / 2^emax for the OCP floor rule (twice that for MX CEIL and
// EVEN), 1 + 2^-4 for NVFP4's UE4M3 block scale (round to nearest). The OCP floor rule (and
// EVEN) also clips: s > amax_g / 2^(emax+1), so only |x| > k amax_g with
// k = fmt_max / 2^(emax+1) can exceed fmt_max * s, and their error is
// at most |x| - k amax_g, added. So the operand's relative squared error
//   rho^2 = ||E||^2 / ||L||^2 <= sum_g sum_i (u^2 x_i^2 + v^2 r^2 amax_g^2 / fmt_max^2
//                                            [+ (|x_i| - k amax_g)^2 if above]) / sum x^2.
// The operands here are i.i.d. Gaussian (make_problem), and an orthonormal rotation keeps them
// so; hence the group statistics are taken over consecutive chunks of the data as stored, of
// the group's size, whatever the orientation and rotation of the operand.
// The special quantizers (linear.hpp, SpecialQuant):
//   quest       s = 2^floor(log2(0.487 sd)) in (0.2435 sd, 0.487 sd] of the 32-group; elements
//               below 6 s as above (u = v = 1/4); the clipped ones (|x| >= 6 s >= 1.461 sd)
//               add at most (|x| - 1.461 sd)^2;
//   quartet_sr  s = 2^floor(log2 amax) / 3 <= 2 amax / 6: r = 2, nothing clips;
//   four_over_six  per block the smaller error of the 6- and 4-scaled choices: at most the
//               6-scaled NVFP4 bound (r = 1 + 2^-4);
//   ms_eden     per block x, its NVFP4 rounding q (||x - q|| <= e_b, the nvfp4 bound) and the
//               output c' q, c = <x,x> / <x,q> rounded stochastically to c' (UE4M3: E(c'-c) = 0,
//               E(c'-c)^2 <= (2^-3 c)^2 / 4). c q is x's projection scaled so that x - c q is
//               orthogonal to x: ||x - c q|| = ||x|| tan t with sin t <= e_b / ||x|| = rho_b, so
//               E||x - c' q||^2 = ||x - c q||^2 + E(c'-c)^2 ||q||^2
//                              <= (e_b^2 + 2^-8 ||x||^2) / (1 - rho_b^2).
// One GEMM C = A B^T with A + E_A, B + E_B: if the errors are uncorrelated with each other and
// with the other operand (independent data; exact in expectation for stochastic rounding),
//   E ||dC||^2 = sum_ij sum_k (E_A^2 B^2 + A^2 E_B^2 + E_A^2 E_B^2) ~ (rho_A^2 + rho_B^2 +
//   rho_A^2 rho_B^2) ||C||^2,
// since ||C||^2 ~ sum_ij sum_k A^2 B^2 for independent zero-mean data; the realized value
// concentrates within ~1% of it over the 32768 outputs here. An operand quantized twice (the
// forward's quantized W or X re-quantized by the backward) has rho <= rho_fwd + rho_bwd; a quest
// clip mask gating a gradient zeroes a fraction p of it (p <= the fraction of |x| > 1.461 sd),
// adding p to rho^2 of that gradient.
struct ErrorBound {
  double y = 0, dx = 0, dw = 0;
};

namespace detail {

inline double group_sum(const std::vector<float>& x, std::size_t g,
                        const std::function<double(const float*, std::size_t)>& per_group) {
  double t = 0;
  for (std::size_t i = 0; i + g <= x.size(); i += g) t += per_group(x.data() + i, g);
  return t;
}

inline double sum_sq(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += double(v) * v;
  return s;
}

// The elements of one group of the operand's spec (rows x cols as its GEMM reads it).
inline std::size_t group_size(const quant::QuantSpec& s, std::size_t rows, std::size_t cols) {
  switch (s.granularity) {
    case quant::Granularity::tensor: return rows * cols;
    case quant::Granularity::row: return cols;
    case quant::Granularity::column: return rows;
    case quant::Granularity::block: return s.block;
    case quant::Granularity::tile: return s.block * s.block;
  }
  return rows * cols;
}

struct FormatErr {
  double u = 0, v = 0, r = 1, fmt_max = 1, k = 0;  // k: the OCP floor rule's clipping threshold
};

inline FormatErr format_err(const quant::QuantSpec& s) {
  const Format& f = s.format;
  FormatErr e;
  e.fmt_max = f.max_finite();
  if (f.kind == Kind::integer) {
    e.u = 0;    // integers: an absolute error of half a step,
    e.v = 0.5;  // the step being the scale
  } else {
    e.u = std::ldexp(1.0, -(f.man_bits + 1));
    e.v = f.min_subnormal() / 2;
  }
  const int emax = static_cast<int>(std::floor(std::log2(e.fmt_max)));
  switch (s.rule) {
    case quant::ScaleRule::none: break;  // a plain cast (operand_rho2: u only)
    case quant::ScaleRule::amax:
    case quant::ScaleRule::absmax_int: e.r = 1; break;
    case quant::ScaleRule::nvfp4: e.r = 1 + 1.0 / 16; break;
    case quant::ScaleRule::mx:
      e.r = e.fmt_max / std::ldexp(1.0, emax);
      e.k = e.fmt_max / std::ldexp(1.0, emax + 1);
      break;
    case quant::ScaleRule::mx_ceil:  // 2^ceil: up to 2x the floor's scale, nothing clips
      e.r = 2 * e.fmt_max / std::ldexp(1.0, emax);
      break;
    case quant::ScaleRule::mx_even:  // the floor of a rounded amax: either way, and may clip
      e.r = 2 * e.fmt_max / std::ldexp(1.0, emax);
      e.k = e.fmt_max / std::ldexp(1.0, emax + 1);
      break;
    default: e.r = 2; break;  // pow2, rceil and the other power-of-two rules: within 2x
  }
  return e;
}

// rho^2 of an operand quantized by `spec` (and `special`), for i.i.d. data `x` laid out as a
// rows x cols GEMM operand.
inline double operand_rho2(const std::optional<quant::QuantSpec>& spec, quant::SpecialQuant special,
                           const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  if (!spec) return 0;
  const double total = sum_sq(x);
  using quant::SpecialQuant;
  if (special == SpecialQuant::quest) {
    const double u = 0.25, v = 0.25;
    return group_sum(x, 32, [&](const float* g, std::size_t n) {
             double m = 0, q = 0;
             for (std::size_t i = 0; i < n; ++i) m += g[i], q += double(g[i]) * g[i];
             const double sd = std::sqrt(std::max(0.0, q / n - (m / n) * (m / n)));
             double t = 0;
             for (std::size_t i = 0; i < n; ++i) {
               const double a = std::fabs(g[i]);
               t += u * u * a * a + v * v * (0.487 * sd) * (0.487 * sd);
               if (a > 1.461 * sd) t += (a - 1.461 * sd) * (a - 1.461 * sd);
             }
             return t;
           }) /
           total;
  }
  FormatErr fe = format_err(*spec);
  std::size_t g = group_size(*spec, rows, cols);
  if (special == SpecialQuant::quartet_sr) g = 32, fe.r = 2;
  if (special == SpecialQuant::four_over_six || special == SpecialQuant::ms_eden) g = 16, fe.r = 1 + 1.0 / 16;
  if (spec->rule == quant::ScaleRule::none) {  // a plain cast: no scale, only the relative error
    return fe.u * fe.u;
  }
  return group_sum(x, g, [&](const float* b, std::size_t n) {
           double amax = 0, xx = 0;
           for (std::size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(double(b[i]))), xx += double(b[i]) * b[i];
           const double floor2 = fe.v * fe.r * amax / fe.fmt_max;
           double er = 0;  // sum of the rounding bounds e_r^2
           for (std::size_t i = 0; i < n; ++i) {
             const double a = std::fabs(double(b[i]));
             er += fe.u * fe.u * a * a + floor2 * floor2;
             if (fe.k > 0 && a > fe.k * amax) er += (a - fe.k * amax) * (a - fe.k * amax);
           }
           if (special != SpecialQuant::ms_eden || xx == 0) return er;
           const double rho2 = std::min(0.9, er / xx);
           return (er + xx / 256) / (1 - rho2);
         }) /
         total;
}

// The fraction of elements a quest clip mask may zero (|x| > 1.461 sd of its 32-group).
inline double quest_clip_fraction(const std::vector<float>& x) {
  return group_sum(x, 32, [](const float* g, std::size_t n) {
           double m = 0, q = 0;
           for (std::size_t i = 0; i < n; ++i) m += g[i], q += double(g[i]) * g[i];
           const double sd = std::sqrt(std::max(0.0, q / n - (m / n) * (m / n)));
           double c = 0;
           for (std::size_t i = 0; i < n; ++i) c += std::fabs(g[i]) > 1.461 * sd;
           return c;
         }) /
         double(x.size());
}

inline double gemm_bound(double ra2, double rb2, double extra = 0) {
  return std::sqrt(ra2 + rb2 + ra2 * rb2 + extra);
}

}  // namespace detail

inline ErrorBound error_bound(const quant::LinearRecipe& r, const LinearProblem& p) {
  using detail::operand_rho2;
  using quant::SpecialQuant;
  const std::vector<float> Wt = transposed(p.W, p.N, p.K), Gt = transposed(p.G, p.M, p.N),
                           Xt = transposed(p.X, p.M, p.K);
  const double fx = operand_rho2(r.fwd.a, r.fwd.a_special, p.X, p.M, p.K);
  const double fw = operand_rho2(r.fwd.b, r.fwd.b_special, p.W, p.N, p.K);
  const double dg = operand_rho2(r.dgrad.a, r.dgrad.a_special, p.G, p.M, p.N);
  double dw = operand_rho2(r.dgrad.b, r.dgrad.b_special, Wt, p.K, p.N);
  const double wg = operand_rho2(r.wgrad.a, r.wgrad.a_special, Gt, p.N, p.M);
  double wx = operand_rho2(r.wgrad.b, r.wgrad.b_special, Xt, p.K, p.M);
  const auto twice = [](double a2, double b2) { return (std::sqrt(a2) + std::sqrt(b2)) * (std::sqrt(a2) + std::sqrt(b2)); };
  if (r.backward_from_forward_operands) dw = twice(fw, dw), wx = twice(fx, wx);
  if (r.wgrad_uses_quantized_x) wx = twice(fx, wx);
  // The dgrad reusing the forward's W: the same spec, so dw is already that of the forward's W.
  const double px = r.fwd.a_special == SpecialQuant::quest ? detail::quest_clip_fraction(p.X) : 0;
  const double pw = r.fwd.b_special == SpecialQuant::quest ? detail::quest_clip_fraction(p.W) : 0;
  return {detail::gemm_bound(fx, fw), detail::gemm_bound(dg, dw, px), detail::gemm_bound(wg, wx, pw)};
}

}  // namespace lowp::test
