// SwitchBack against an independent int8 computation written here: quantize by hand
// (127 / absmax, nearbyint), an integer triple loop, dequantize in the documented float order.
// The int8 forward and dgrad must match it bit for bit; the bf16 wgrad within float32
// accumulation error of a double reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/quant/linear.hpp"
#include "test_linear_support.hpp"

namespace lowp::quant {
namespace {

using test::LinearProblem;
using test::make_problem;
using test::rel_frob;
using test::run_linear;
using test::transposed;

// int8 codes of L (rows x cols) with one scale per row (per_row) or per tensor.
struct Hand {
  std::vector<std::int32_t> q;
  std::vector<float> scale;  // absmax / 127 per row (all equal when per tensor)
};
Hand hand_quantize(const std::vector<float>& L, std::size_t rows, std::size_t cols, bool per_row) {
  Hand h{std::vector<std::int32_t>(L.size()), std::vector<float>(rows)};
  float tensor_max = 0;
  for (float v : L) tensor_max = std::max(tensor_max, std::fabs(v));
  for (std::size_t r = 0; r < rows; ++r) {
    float amax = tensor_max;
    if (per_row) {
      amax = 0;
      for (std::size_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(L[r * cols + c]));
    }
    h.scale[r] = amax / 127.0f;
    const float mult = amax == 0 ? 0.0f : 127.0f / amax;
    for (std::size_t c = 0; c < cols; ++c) {
      const float v = std::nearbyint(L[r * cols + c] * mult);
      h.q[r * cols + c] = static_cast<std::int32_t>(std::max(-127.0f, std::min(127.0f, v)));
    }
  }
  return h;
}

// C[i][j] = (float)(sum_k a[i][k] b[j][k]) * (sa[i] * sb[j]) (+ bias[j]).
std::vector<float> hand_gemm(const Hand& a, const Hand& b, std::size_t m, std::size_t n, std::size_t k,
                             const std::vector<float>* bias) {
  std::vector<float> C(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int32_t acc = 0;
      for (std::size_t t = 0; t < k; ++t) acc += a.q[i * k + t] * b.q[j * k + t];
      float c = static_cast<float>(acc) * (a.scale[i] * b.scale[j]);
      if (bias) c += (*bias)[j];
      C[i * n + j] = c;
    }
  return C;
}

std::vector<float> bf16(std::vector<float> v) {
  const Format f = parse_format("bf16");
  for (float& x : v) x = static_cast<float>(decode(f, encode(f, x)));
  return v;
}

void check_exact(const char* preset, std::size_t M, std::size_t N, std::size_t K, std::uint32_t seed) {
  const LinearProblem p = make_problem(M, N, K, seed);
  const bool vectorwise = std::string(preset) == "switchback-int8-vectorwise";
  const auto got = run_linear(linear_preset(preset), p);
  const Hand x = hand_quantize(p.X, M, K, true);
  const Hand w = hand_quantize(p.W, N, K, vectorwise);
  EXPECT_EQ(got.Y, hand_gemm(x, w, M, N, K, &p.b)) << preset << " " << M << "x" << N << "x" << K;
  // dgrad: dY row-wise; W^T (K x N) per tensor, or per row of W^T = per column of W.
  const Hand dy = hand_quantize(p.G, M, N, true);
  const Hand wt = hand_quantize(transposed(p.W, N, K), K, N, vectorwise);
  EXPECT_EQ(got.dX, hand_gemm(dy, wt, M, K, N, nullptr)) << preset << " " << M << "x" << N << "x" << K;
  // wgrad: bf16 operands, float32 accumulation: dW = bf16(dY)^T bf16(X).
  const auto dW = test::ref_gemm(bf16(transposed(p.G, M, N)), bf16(transposed(p.X, M, K)), N, K, M);
  EXPECT_LT(rel_frob(got.dW, dW), 1e-6) << preset;
}

TEST(SwitchBack, ForwardAndDgradEqualTheIntegerReferenceBitForBit) {
  check_exact("switchback-int8", 64, 96, 128, 1);
  check_exact("switchback-int8-vectorwise", 64, 96, 128, 2);
}

TEST(SwitchBack, RaggedShapesBitForBit) {
  check_exact("switchback-int8", 7, 13, 37, 3);
  check_exact("switchback-int8-vectorwise", 17, 5, 71, 4);
  check_exact("switchback-int8", 1, 1, 1, 5);
}

TEST(SwitchBack, MemoryEfficientWgradUsesTheDequantizedInt8X) {
  const std::size_t M = 48, N = 32, K = 64;
  const LinearProblem p = make_problem(M, N, K, 6);
  const auto plain = run_linear(linear_preset("switchback-int8"), p);
  const auto memeff = run_linear(linear_preset("switchback-int8-memeff"), p);
  EXPECT_EQ(plain.Y, memeff.Y);
  EXPECT_EQ(plain.dX, memeff.dX);
  const Hand x = hand_quantize(p.X, M, K, true);
  std::vector<float> xd(M * K);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t k = 0; k < K; ++k) xd[i * K + k] = static_cast<float>(x.q[i * K + k]) * x.scale[i];
  const auto dW = test::ref_gemm(bf16(transposed(p.G, M, N)), bf16(transposed(xd, M, K)), N, K, M);
  EXPECT_LT(rel_frob(memeff.dW, dW), 1e-6);
  EXPECT_GT(rel_frob(memeff.dW, plain.dW), 1e-4);  // it really differs from the float X path
}

TEST(SwitchBack, ZeroAndNonFiniteRows) {
  const std::size_t M = 4, N = 8, K = 16;
  LinearProblem p = make_problem(M, N, K, 7);
  std::fill(p.X.begin() + 1 * K, p.X.begin() + 2 * K, 0.0f);  // row 1: zeros
  p.X[2 * K + 3] = std::numeric_limits<float>::quiet_NaN();     // row 2: a NaN
  p.X[3 * K + 5] = std::numeric_limits<float>::infinity();      // row 3: an Inf
  QuantLinear layer(linear_preset("switchback-int8"), K, N, false);
  layer.weight() = p.W;
  std::vector<float> Y(M * N);
  layer.forward(p.X.data(), M, Y.data());
  for (std::size_t j = 0; j < N; ++j) {
    EXPECT_TRUE(std::isfinite(Y[j]));
    EXPECT_EQ(Y[1 * N + j], 0.0f);
    EXPECT_TRUE(std::isnan(Y[2 * N + j]));
    EXPECT_TRUE(std::isnan(Y[3 * N + j]));
  }
}

// A row whose absmax is below 127 / FLT_MAX (~3.7e-37): 127/absmax overflows float. The row
// must still come out as its product (not as +-absmax everywhere, its zero as -absmax).
TEST(SwitchBack, RowBelowTheMultiplierRange) {
  const std::size_t M = 2, N = 8, K = 16;
  LinearProblem p = make_problem(M, N, K, 8);
  for (std::size_t c = 0; c < K; ++c) p.X[K + c] = p.X[c] * 1e-37f;  // row 1: row 0 scaled
  p.X[K + 2] = 0.0f;
  float amax = 0;
  for (std::size_t c = 0; c < K; ++c) amax = std::max(amax, std::fabs(p.X[K + c]));
  ASSERT_FALSE(std::isfinite(127.0f / amax));
  QuantLinear layer(linear_preset("switchback-int8"), K, N, false);
  layer.weight() = p.W;
  std::vector<float> Y(M * N);
  layer.forward(p.X.data(), M, Y.data());
  double err = 0, ref_norm = 0;
  for (std::size_t j = 0; j < N; ++j) {
    double ref = 0;
    for (std::size_t c = 0; c < K; ++c) ref += double(p.X[K + c]) * p.W[j * K + c];
    ASSERT_TRUE(std::isfinite(Y[N + j]));
    err += (Y[N + j] - ref) * (Y[N + j] - ref);
    ref_norm += ref * ref;
  }
  // Codes of at most ~|x| * FLT_MAX (tens): a few percent, where the overflow gave ~100%.
  EXPECT_LT(std::sqrt(err / ref_norm), 0.1);
}

}  // namespace
}  // namespace lowp::quant
