// Shared by the linear-layer tests: a random layer problem, one forward + backward step, and
// an independent float reference of per-tensor / per-row / 1-D block amax fake quantization
// written from the scalar codec (not from lowp_quant).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

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
inline double rel_frob(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(a[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
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

}  // namespace lowp::test
