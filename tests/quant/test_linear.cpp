// The quantized linear layer: the fp32 recipe against a double-precision finite-difference
// reference, operand orientation of every GEMM against hand-quantized references, rotations
// cancelling, the weight cache, bad input, determinism across thread counts.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

#include "lowp/formats/registry.hpp"
#include "lowp/quant/linear.hpp"
#include "test_linear_support.hpp"

namespace lowp::quant {
namespace {

using test::LinearProblem;
using test::make_problem;
using test::rel_frob;
using test::run_linear;

// L(X, W, b) = sum G . (X W^T + b), in double.
double loss(const LinearProblem& p, const std::vector<double>& X, const std::vector<double>& W,
            const std::vector<double>& b) {
  double L = 0;
  for (std::size_t m = 0; m < p.M; ++m)
    for (std::size_t n = 0; n < p.N; ++n) {
      double y = b[n];
      for (std::size_t k = 0; k < p.K; ++k) y += X[m * p.K + k] * W[n * p.K + k];
      L += p.G[m * p.N + n] * y;
    }
  return L;
}

// Central differences of `loss` with respect to each element of `v` (step h).
std::vector<double> fd_gradient(const LinearProblem& p, std::vector<double>& X, std::vector<double>& W,
                                std::vector<double>& b, std::vector<double>& v) {
  const double h = 1e-3;
  std::vector<double> g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = loss(p, X, W, b);
    v[i] = keep - h;
    const double down = loss(p, X, W, b);
    v[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rel, const char* what) {
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * scale) << what << "[" << i << "]";
}

TEST(Linear, Fp32MatchesFiniteDifferences) {
  const LinearProblem p = make_problem(6, 5, 7, 11);
  std::vector<double> X(p.X.begin(), p.X.end()), W(p.W.begin(), p.W.end()), b(p.b.begin(), p.b.end());
  const auto r = run_linear(linear_preset("fp32"), p);
  std::vector<double> Y(p.M * p.N);
  for (std::size_t m = 0; m < p.M; ++m)
    for (std::size_t n = 0; n < p.N; ++n) {
      double y = b[n];
      for (std::size_t k = 0; k < p.K; ++k) y += X[m * p.K + k] * W[n * p.K + k];
      Y[m * p.N + n] = y;
    }
  // float32 accumulation over K = 7 or M = 6 terms: a few ulp of the largest term.
  expect_close(r.Y, Y, 1e-6, "Y");
  expect_close(r.dX, fd_gradient(p, X, W, b, X), 1e-6, "dX");
  expect_close(r.dW, fd_gradient(p, X, W, b, W), 1e-6, "dW");
  expect_close(r.db, fd_gradient(p, X, W, b, b), 1e-6, "db");
}

TEST(Linear, BackwardAccumulatesGradients) {
  const LinearProblem p = make_problem(4, 3, 5, 3);
  QuantLinear layer(linear_preset("fp32"), p.K, p.N, true);
  layer.weight() = p.W;
  std::vector<float> Y(p.M * p.N);
  layer.forward(p.X.data(), p.M, Y.data());
  layer.backward(p.G.data(), nullptr);
  const std::vector<float> dW1 = layer.weight_grad(), db1 = layer.bias_grad();
  layer.backward(p.G.data(), nullptr);
  for (std::size_t i = 0; i < dW1.size(); ++i) EXPECT_EQ(layer.weight_grad()[i], 2 * dW1[i]);
  for (std::size_t i = 0; i < db1.size(); ++i) EXPECT_EQ(layer.bias_grad()[i], 2 * db1[i]);
}

// borrow_input: the same bits as the default copy of X under recipes that keep a float X
// (fp32, fp8-tensorwise, mxfp8, SwitchBack's int8) or a quantized one (quartet-fp4, memory-
// efficient SwitchBack); and under fp32 the weight gradient reads the caller's X at the backward
// (X changed in between gives the gradient of the changed X), so no copy was kept.
TEST(Linear, BorrowedInputGivesTheCopysBitsAndReadsTheCallersX) {
  const LinearProblem p = make_problem(64, 32, 64, 41);
  const auto run = [&](const char* name, bool borrow, std::vector<float> X, const std::vector<float>* X_after) {
    QuantLinear layer(linear_preset(name), p.K, p.N, true);
    layer.weight() = p.W;
    layer.bias() = p.b;
    layer.borrow_input(borrow);
    std::vector<float> Y(p.M * p.N), dX(p.M * p.K);
    layer.forward(X.data(), p.M, Y.data(), 7);
    if (X_after) X = *X_after;
    layer.backward(p.G.data(), dX.data(), 8);
    return std::array{Y, dX, layer.weight_grad(), layer.bias_grad()};
  };
  for (const char* name : {"fp32", "fp8-tensorwise", "mxfp8", "switchback-int8", "quartet-fp4", "switchback-int8-memeff"}) {
    const auto copied = run(name, false, p.X, nullptr), borrowed = run(name, true, p.X, nullptr);
    for (std::size_t k = 0; k < copied.size(); ++k)
      for (std::size_t i = 0; i < copied[k].size(); ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(borrowed[k][i]), std::bit_cast<std::uint32_t>(copied[k][i]))
            << name << ", output " << k << " at " << i;
  }
  std::vector<float> X2 = p.X;
  for (float& x : X2) x = -0.5f * x;
  const auto changed = run("fp32", true, p.X, &X2), on_x2 = run("fp32", false, X2, nullptr);
  for (std::size_t i = 0; i < on_x2[2].size(); ++i) ASSERT_EQ(changed[2][i], on_x2[2][i]) << "dW at " << i;
  EXPECT_NE(changed[2], run("fp32", false, p.X, nullptr)[2]);
}

// A recipe whose six operands are quantized in six different ways; the test quantizes each
// operand by hand in the orientation the GEMM reads it (reduction along the columns).
TEST(Linear, EveryOperandQuantizedAlongItsReductionDimension) {
  const std::size_t M = 64, N = 32, K = 96;
  const LinearProblem p = make_problem(M, N, K, 21);
  LinearRecipe r;
  r.name = "orientation";
  r.fwd.a = parse_quant_spec("e4m3:b32:amax");   // X: blocks along K
  r.fwd.b = parse_quant_spec("e4m3:row:amax");   // W: per output row n
  r.dgrad.a = parse_quant_spec("e5m2:row:amax"); // dY: per token m
  r.dgrad.b = parse_quant_spec("e4m3:b16:amax"); // W^T: blocks along N
  r.wgrad.a = parse_quant_spec("e4m3:b32:amax"); // dY^T: blocks along M
  r.wgrad.b = parse_quant_spec("e5m2:row:amax"); // X^T: per input feature k
  const auto got = run_linear(r, p);

  const Format e4m3 = parse_format("e4m3"), e5m2 = parse_format("e5m2");
  using test::ref_fake_quant;
  using test::ref_gemm;
  using test::transposed;
  const auto Xq = ref_fake_quant(e4m3, p.X, M, K, 32);
  const auto Wq = ref_fake_quant(e4m3, p.W, N, K, K);
  std::vector<float> Y = ref_gemm(Xq, Wq, M, N, K);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) Y[m * N + n] += p.b[n];
  const auto dYq = ref_fake_quant(e5m2, p.G, M, N, N);
  const auto WTq = ref_fake_quant(e4m3, transposed(p.W, N, K), K, N, 16);
  const auto dX = ref_gemm(dYq, WTq, M, K, N);
  const auto dYTq = ref_fake_quant(e4m3, transposed(p.G, M, N), N, M, 32);
  const auto XTq = ref_fake_quant(e5m2, transposed(p.X, M, K), K, M, M);
  const auto dW = ref_gemm(dYTq, XTq, N, K, M);
  // The references differ from the layer only by float32 accumulation (and at most an ulp in
  // a few elements); any operand quantized along the wrong dimension moves them by ~1e-2.
  EXPECT_LT(rel_frob(got.Y, Y), 1e-5);
  EXPECT_LT(rel_frob(got.dX, dX), 1e-5);
  EXPECT_LT(rel_frob(got.dW, dW), 1e-5);
}

// The same recipe on per-tensor operands (quantized in the source layout, no transpose).
TEST(Linear, TensorwiseOperandsMatchHandQuantization) {
  const std::size_t M = 48, N = 40, K = 56;
  const LinearProblem p = make_problem(M, N, K, 5);
  const auto got = run_linear(linear_preset("fp8-tensorwise"), p);
  const Format e4m3 = parse_format("e4m3"), e5m2 = parse_format("e5m2");
  using test::ref_fake_quant;
  using test::ref_gemm;
  using test::transposed;
  const auto Xq = ref_fake_quant(e4m3, p.X, M, K, 0, true);
  const auto Wq = ref_fake_quant(e4m3, p.W, N, K, 0, true);
  std::vector<float> Y = ref_gemm(Xq, Wq, M, N, K);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) Y[m * N + n] += p.b[n];
  const auto dYq = ref_fake_quant(e5m2, p.G, M, N, 0, true);
  const auto dX = ref_gemm(dYq, transposed(Wq, N, K), M, K, N);
  const auto dW = ref_gemm(transposed(dYq, M, N), transposed(Xq, M, K), N, K, M);
  EXPECT_LT(rel_frob(got.Y, Y), 1e-5);
  EXPECT_LT(rel_frob(got.dX, dX), 1e-5);
  EXPECT_LT(rel_frob(got.dW, dW), 1e-5);
}

// Rotating both operands of each GEMM along its reduction dimension leaves the products
// unchanged (R R^T = I): only float32 rounding separates the result from fp32.
TEST(Linear, RotationsCancelInEveryGemm) {
  const LinearProblem p = make_problem(64, 48, 96, 8);
  const auto ref = run_linear(linear_preset("fp32"), p);
  for (auto kind : {hadamard::RotationKind::hadamard, hadamard::RotationKind::randomized,
                    hadamard::RotationKind::block_diagonal}) {
    LinearRecipe r;
    r.name = "rotated";
    for (GemmRecipe* g : {&r.fwd, &r.dgrad, &r.wgrad}) {
      g->rotation = kind;
      g->rotation_block = 16;
    }
    const auto got = run_linear(r, p, 3, 4);
    EXPECT_LT(rel_frob(got.Y, ref.Y), 1e-6);
    EXPECT_LT(rel_frob(got.dX, ref.dX), 1e-6);
    EXPECT_LT(rel_frob(got.dW, ref.dW), 1e-6);
    EXPECT_EQ(got.db, ref.db);
  }
}

TEST(Linear, WeightCacheFollowsWeightEdits) {
  const LinearProblem p = make_problem(16, 32, 64, 9);
  const LinearProblem q = make_problem(16, 32, 64, 10);
  for (const char* name : {"mxfp4", "switchback-int8"}) {
    QuantLinear layer(linear_preset(name), p.K, p.N, false);
    // A reference kept from before the forward passes: editing through it bypasses weight().
    std::vector<float>& w = layer.weight();
    w = p.W;
    std::vector<float> Y1(p.M * p.N), Y2(p.M * p.N), Yq(p.M * p.N), Yfresh(p.M * p.N);
    layer.forward(p.X.data(), p.M, Y1.data());
    layer.forward(p.X.data(), p.M, Y2.data());
    EXPECT_EQ(Y1, Y2) << name;
    // The cache is stale until invalidated...
    w = q.W;
    layer.forward(p.X.data(), p.M, Yq.data());
    EXPECT_EQ(Yq, Y1) << name << ": the cached weight should still be used";
    // ...and follows the edit once invalidated.
    layer.invalidate_weight_cache();
    layer.forward(p.X.data(), p.M, Yq.data());
    QuantLinear fresh(linear_preset(name), p.K, p.N, false);
    fresh.weight() = q.W;
    fresh.forward(p.X.data(), p.M, Yfresh.data());
    EXPECT_EQ(Yq, Yfresh) << name;
    // weight() itself drops the cache.
    layer.weight() = p.W;
    layer.forward(p.X.data(), p.M, Yq.data());
    EXPECT_EQ(Yq, Y1) << name;
  }
}

TEST(Linear, WgradFromQuantizedInputUsesTheForwardsX) {
  // fp8-tensorwise with wgrad_uses_quantized_x and a float32 X^T operand: dW must be dY^T
  // times the forward's E4M3 X (tensor-wise scale), not the float32 X.
  const std::size_t M = 32, N = 16, K = 24;
  const LinearProblem p = make_problem(M, N, K, 30);
  LinearRecipe r;
  r.name = "wgrad-from-quantized-x";
  r.fwd.a = parse_quant_spec("e4m3:tensor:amax");
  r.wgrad_uses_quantized_x = true;
  const auto got = run_linear(r, p);
  const auto Xq = test::ref_fake_quant(parse_format("e4m3"), p.X, M, K, 0, true);
  const auto dW = test::ref_gemm(test::transposed(p.G, M, N), test::transposed(Xq, M, K), N, K, M);
  EXPECT_LT(rel_frob(got.dW, dW), 1e-6);
}

// E4M3 fake quantization with a given multiplier s: decode(encode(x * s, saturating)) / s.
std::vector<float> fixed_scale_e4m3(std::vector<float> v, float s) {
  const Format f = parse_format("e4m3");
  CastOptions opt;
  opt.saturate = true;
  for (float& x : v) x = static_cast<float>(decode(f, encode(f, x * s, opt))) / s;
  return v;
}

// fp8-delayed: step 1 has no history (s = 1); step 2 quantizes with the amax of step 1, so a
// doubled input saturates where current scaling would not.
TEST(Linear, DelayedScalingUsesTheAmaxOfEarlierSteps) {
  const std::size_t M = 32, N = 16, K = 64;
  const LinearProblem p = make_problem(M, N, K, 40);
  QuantLinear layer(linear_preset("fp8-delayed"), K, N, false);
  layer.weight() = p.W;
  std::vector<float> X2 = p.X, Y(M * N);
  for (float& x : X2) x *= 2;
  float ax = 0, aw = 0;
  for (float x : p.X) ax = std::max(ax, std::fabs(x));
  for (float w : p.W) aw = std::max(aw, std::fabs(w));

  layer.forward(p.X.data(), M, Y.data());
  EXPECT_LT(rel_frob(Y, test::ref_gemm(fixed_scale_e4m3(p.X, 1.0f), fixed_scale_e4m3(p.W, 1.0f), M, N, K)), 1e-6);
  layer.forward(X2.data(), M, Y.data());
  const auto ref = test::ref_gemm(fixed_scale_e4m3(X2, 448.0f / ax), fixed_scale_e4m3(p.W, 448.0f / aw), M, N, K);
  EXPECT_LT(rel_frob(Y, ref), 1e-6);
}

TEST(Linear, BadInputRaisesErrors) {
  using test::expect_error;
  expect_error([] { QuantLinear(linear_preset("fp32"), 0, 4, false); }, {"in_features 0"});
  expect_error([] { linear_preset("fp9"); }, {"fp9", "fp8-tensorwise", "switchback-int8"});
  const LinearProblem p = make_problem(8, 8, 32, 1);
  std::vector<float> Y(8 * 8), dX(8 * 32);
  {
    QuantLinear layer(linear_preset("fp32"), 32, 8, true);
    expect_error([&] { layer.backward(p.G.data(), dX.data()); }, {"no forward"});
    expect_error([&] { layer.forward(p.X.data(), 0, Y.data()); }, {"M = 0"});
    expect_error([&] { layer.forward(nullptr, 8, Y.data()); }, {"null"});
    layer.weight().resize(5);
    expect_error([&] { layer.forward(p.X.data(), 8, Y.data()); }, {"weight 5", "expected 256"});
  }
  {
    // K = 32 is not a multiple of the 128 block: the message names the GEMM and operand.
    QuantLinear layer(linear_preset("fp8-block128"), 32, 8, false);
    expect_error([&] { layer.forward(p.X.data(), 8, Y.data()); }, {"fp8-block128", "fwd X", "128"});
  }
  {
    // The random-sign Hadamard of the backward along M = 7 tokens does not exist.
    const LinearProblem q = make_problem(7, 32, 32, 2);
    QuantLinear layer(linear_preset("quartet-fp4"), 32, 32, false);
    std::vector<float> Yq(7 * 32), dXq(7 * 32);
    layer.forward(q.X.data(), 7, Yq.data());
    expect_error([&] { layer.backward(q.G.data(), dXq.data()); }, {"quartet-fp4", "wgrad", "7"});
  }
  {
    LinearRecipe r = linear_preset("switchback-int8");
    r.fwd.b = parse_quant_spec("e4m3");
    expect_error([&] { QuantLinear(r, 32, 8, false); }, {"fwd W", "int8_sym"});
    r = linear_preset("switchback-int8");
    r.dgrad.rotation = hadamard::RotationKind::hadamard;
    expect_error([&] { QuantLinear(r, 32, 8, false); }, {"dgrad", "rotation"});
  }
  {
    LinearRecipe r = linear_preset("fp8-delayed");
    r.fwd.a = parse_quant_spec("e4m3:row");
    expect_error([&] { QuantLinear(r, 32, 8, false); }, {"fwd X", "per-tensor"});
  }
}

// Same inputs and seeds give bitwise the same outputs on 1 and 2 threads (the tensors are
// large enough for the parallel paths).
TEST(Linear, DeterministicAcrossThreadCounts) {
  const LinearProblem p = make_problem(256, 256, 512, 4);
  const int saved = omp_get_max_threads();
  for (const char* name : {"fp32", "fp8-tensorwise", "fp8-rowwise", "mxfp4", "nvfp4", "quartet-fp4",
                           "switchback-int8", "switchback-int8-vectorwise"}) {
    omp_set_num_threads(1);
    const auto one = run_linear(linear_preset(name), p, 5, 6);
    omp_set_num_threads(2);
    const auto two = run_linear(linear_preset(name), p, 5, 6);
    EXPECT_EQ(one.Y, two.Y) << name;
    EXPECT_EQ(one.dX, two.dX) << name;
    EXPECT_EQ(one.dW, two.dW) << name;
    EXPECT_EQ(one.db, two.db) << name;
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace lowp::quant
