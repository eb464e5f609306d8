// The training presets at layer level, each against an oracle written here: every preset's
// Y, dX, dW against a double-precision GEMM; nvfp4-train's shared 16x16-tile weight and its
// wgrad-only random Hadamard; Quartet's QuEST forward and the clip mask gating the gradient;
// 4-over-6 against an independent NVFP4 quantizer; DeepSeek's promoted 14-bit accumulator
// against an independent accumulation; MXFP8 column-wise copies from the float data; thread
// independence of the stochastic presets.
#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>

#include "lowp/quant/linear.hpp"
#include "test_linear_support.hpp"

namespace lowp::quant {
namespace {

using test::LinearProblem;
using test::e2m1_rne;
using test::make_problem;
using test::ref_gemm;
using test::rel_frob;
using test::run_linear;
using test::transposed;

// UE4M3 round to nearest even, saturating at 448 (subnormal quantum 2^-9).
float ue4m3_rne(float v) {
  if (!(v > 0)) return 0;
  if (v >= 448) return 448;
  const int e = std::max(std::ilogb(v), -6);
  const double quantum = std::ldexp(1.0, e - 3);
  return static_cast<float>(std::min(448.0, std::nearbyint(v / quantum) * quantum));
}

// Sylvester Hadamard, orthonormal, n a power of two.
double hadamard(std::size_t i, std::size_t j, std::size_t n) {
  return (std::popcount(i & j) % 2 ? -1.0 : 1.0) / std::sqrt(double(n));
}

// x (rows x cols) times the block-diagonal orthonormal Hadamard of block b, or its transpose.
std::vector<double> block_rotate(const std::vector<double>& x, std::size_t rows, std::size_t cols, std::size_t b) {
  std::vector<double> y(x.size(), 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c0 = 0; c0 < cols; c0 += b)
      for (std::size_t j = 0; j < b; ++j) {
        double acc = 0;
        for (std::size_t i = 0; i < b; ++i) acc += x[r * cols + c0 + i] * hadamard(i, j, b);
        y[r * cols + c0 + j] = acc;
      }
  return y;  // H is symmetric, so this is also x H^T
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }
std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// Every preset's Y, dX, dW against the double GEMM, within the analysis bound of
// test_linear_support.hpp (error_bound) plus 1e-5 for the float32 accumulation (relative error
// ~ sqrt(K) 2^-24 < 1e-6 for these K).
TEST(LinearTraining, EveryPresetAgainstDoubleGemm) {
  const LinearProblem p = make_problem(256, 128, 256, 77);
  std::vector<float> Y = ref_gemm(p.X, p.W, p.M, p.N, p.K);
  for (std::size_t i = 0; i < p.M; ++i)
    for (std::size_t j = 0; j < p.N; ++j) Y[i * p.N + j] += p.b[j];
  const std::vector<float> dX = ref_gemm(p.G, transposed(p.W, p.N, p.K), p.M, p.K, p.N);
  const std::vector<float> dW = ref_gemm(transposed(p.G, p.M, p.N), transposed(p.X, p.M, p.K), p.N, p.K, p.M);
  for (const LinearRecipe& r : linear_presets()) {
    if (r.name == "fp8-block128") continue;  // its emulated accumulator: AccumulatorPromotedEvery128 below
    const test::ErrorBound t = test::error_bound(r, p);
    const auto got = run_linear(r, p, 1, 2, 2);
    EXPECT_LE(rel_frob(got.Y, Y), t.y + 1e-5) << r.name;
    EXPECT_LE(rel_frob(got.dX, dX), t.dx + 1e-5) << r.name;
    EXPECT_LE(rel_frob(got.dW, dW), t.dw + 1e-5) << r.name;
  }
}

// Forward and dgrad read one quantized W: its 16x16 tiles, transposed. With X = I the forward
// returns Wq^T, with dY = I the dgrad returns Wq (identity rows are exact in NVFP4).
TEST(LinearTraining, Nvfp4TrainForwardAndDgradShareTheTiledWeight) {
  const std::size_t K = 64, N = 32;
  const LinearProblem p = make_problem(K, N, K, 5);
  QuantLinear layer(linear_preset("nvfp4-train"), K, N, false);
  layer.weight() = p.W;
  std::vector<float> eyeK(K * K, 0.0f), eyeN(N * N, 0.0f), Y(K * N), dX(N * K);
  for (std::size_t i = 0; i < K; ++i) eyeK[i * K + i] = 1;
  for (std::size_t i = 0; i < N; ++i) eyeN[i * N + i] = 1;
  layer.forward(eyeK.data(), K, Y.data(), 3);
  // The dgrad through a layer whose last forward had M = N rows, so that dY = I_N fits.
  std::vector<float> XN(N * K, 0.0f), YN(N * N);
  QuantLinear layer3(linear_preset("nvfp4-train"), K, N, false);
  layer3.weight() = p.W;
  layer3.forward(XN.data(), N, YN.data(), 3);
  layer3.backward(eyeN.data(), dX.data(), 11);
  std::vector<float> Wq = p.W;
  fake_quant(parse_quant_spec("e2m1:t16:nvfp4"), Wq.data(), N, K);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k) {
      ASSERT_EQ(Y[k * N + n], Wq[n * K + k]) << n << "," << k;
      ASSERT_EQ(dX[n * K + k], Wq[n * K + k]) << n << "," << k;
    }
  // 2-D tiles: within a 16x16 tile every value is a code times one scale, so the tile holds
  // at most 15 distinct magnitudes across its rows (1-D blocks would allow 15 per row).
  for (std::size_t t0 = 0; t0 < N; t0 += 16)
    for (std::size_t k0 = 0; k0 < K; k0 += 16) {
      std::vector<float> mags;
      for (std::size_t n = t0; n < t0 + 16; ++n)
        for (std::size_t k = k0; k < k0 + 16; ++k) mags.push_back(std::fabs(Wq[n * K + k]));
      std::sort(mags.begin(), mags.end());
      EXPECT_LE(std::unique(mags.begin(), mags.end()) - mags.begin(), 8);  // E2M1: 0 and 7 magnitudes
    }
}

// The random Hadamard transform acts on the wgrad operands only: the forward does not depend
// on the step seed; the wgrad's rotation alone (no quantization) cancels to float rounding.
TEST(LinearTraining, RandomHadamardOnlyOnWgrad) {
  const LinearProblem p = make_problem(64, 32, 64, 8);
  const auto a = run_linear(linear_preset("nvfp4-train"), p, 1, 2), b = run_linear(linear_preset("nvfp4-train"), p, 5, 6);
  EXPECT_EQ(a.Y, b.Y);    // no randomness in the forward
  EXPECT_NE(a.dW, b.dW);  // fresh signs and rounding every step
  LinearRecipe rot_only;
  rot_only.name = "rht-only";
  rot_only.wgrad.rotation = hadamard::RotationKind::block_diagonal;
  rot_only.wgrad.rotation_block = 16;
  rot_only.wgrad.signs = BlockSigns::fixed;
  const auto ref = run_linear(linear_preset("fp32"), p), got = run_linear(rot_only, p);
  EXPECT_EQ(got.Y, ref.Y);
  EXPECT_EQ(got.dX, ref.dX);
  EXPECT_LT(rel_frob(got.dW, ref.dW), 1e-6);
  EXPECT_GT(rel_frob(got.dW, ref.dW), 0.0);  // it did rotate
}

// QuEST forward (block-32 Hadamard, scale 2^floor(log2(2.92247856 / 6 std + 1e-8)), E2M1 RTN)
// against a double reference; the clip mask (|x / scale| >= 6) zeroes the straight-through
// gradient in the rotated basis, for X (dX) and W (dW): checked on quartet-fp4-fullrot, whose
// backward starts from the float X and W (quartet-fp4's own backward, which starts from the
// forward's quantized operands: test_linear_recipes.cpp).
TEST(LinearTraining, QuartetQuestClipMaskGatesTheGradient) {
  LinearProblem p = make_problem(64, 32, 64, 21);
  for (std::size_t i = 0; i < p.X.size(); i += 37) p.X[i] *= 8;  // outliers to clip
  const std::size_t M = p.M, N = p.N, K = p.K;
  const auto quest = [&](const std::vector<float>& x, std::size_t rows, std::vector<std::uint8_t>& mask) {
    std::vector<double> r = block_rotate(to_double(x), rows, K, 32);
    mask.assign(r.size(), 0);
    for (std::size_t g = 0; g < r.size(); g += 32) {
      double s = 0, s2 = 0;
      for (std::size_t i = g; i < g + 32; ++i) s += r[i], s2 += r[i] * r[i];
      const double mean = s / 32, sd = std::sqrt(std::max(0.0, s2 / 32 - mean * mean));
      const double scale = std::exp2(std::floor(std::log2(2.92247856 / 6.0 * sd + 1e-8)));
      for (std::size_t i = g; i < g + 32; ++i) {
        mask[i] = std::fabs(r[i] / scale) < 6;
        r[i] = e2m1_rne(r[i] / scale) * scale;
      }
    }
    return to_float(r);
  };
  std::vector<std::uint8_t> mx, mw;
  const std::vector<float> Xq = quest(p.X, M, mx), Wq = quest(p.W, N, mw);
  std::vector<float> Yref = ref_gemm(Xq, Wq, M, N, K);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) Yref[i * N + j] += p.b[j];
  const auto got = run_linear(linear_preset("quartet-fp4-fullrot"), p, 1, 2);
  EXPECT_LT(rel_frob(got.Y, Yref), 1e-5);
  EXPECT_EQ(run_linear(linear_preset("quartet-fp4"), p, 1, 2).Y, got.Y);  // the same forward
  const double clipped = double(std::count(mx.begin(), mx.end(), 0)) / double(mx.size());
  EXPECT_GT(clipped, 0.001);
  EXPECT_LT(clipped, 0.2);

  LinearRecipe ungated = linear_preset("quartet-fp4-fullrot");
  ungated.fwd.a_special = ungated.fwd.b_special = SpecialQuant::none;
  const auto u = run_linear(ungated, p, 1, 2);  // the same backward GEMMs, no gating
  const auto gate = [&](const std::vector<float>& g, std::size_t rows, const std::vector<std::uint8_t>& mask) {
    std::vector<double> r = block_rotate(to_double(g), rows, K, 32);
    for (std::size_t i = 0; i < r.size(); ++i) r[i] *= mask[i];
    return to_float(block_rotate(r, rows, K, 32));
  };
  EXPECT_LT(rel_frob(got.dX, gate(u.dX, M, mx)), 1e-5);
  EXPECT_LT(rel_frob(got.dW, gate(u.dW, N, mw)), 1e-5);
  EXPECT_GT(rel_frob(got.dX, u.dX), 1e-3);  // the mask did remove something
}

// 4-over-6 against an independent NVFP4 quantizer: tensor scale amax / (6 * 256), per 16-block
// UE4M3 scales for a block maximum of 6 and of 4, the one with the smaller squared error.
TEST(LinearTraining, FourOverSixAgainstIndependentQuantizer) {
  const std::size_t K = 64, N = 32;
  const LinearProblem p = make_problem(K, N, K, 31);
  float amax = 0;
  for (float w : p.W) amax = std::max(amax, std::fabs(w));
  const float ts = amax / (6.0f * 256.0f);
  std::vector<float> ref(p.W.size());
  int fours = 0;
  for (std::size_t g = 0; g < p.W.size(); g += 16) {
    float a = 0;
    for (std::size_t i = g; i < g + 16; ++i) a = std::max(a, std::fabs(p.W[i]));
    double best = INFINITY;
    for (float Mx : {6.0f, 4.0f}) {
      const float mult = ts * ue4m3_rne(a / (Mx * ts));
      double err = 0;
      std::vector<float> q(16);
      for (std::size_t i = 0; i < 16; ++i) {
        q[i] = static_cast<float>(e2m1_rne(p.W[g + i] / mult)) * mult;
        err += std::pow(double(q[i]) - p.W[g + i], 2);
      }
      if (err < best) {
        best = err;
        std::copy(q.begin(), q.end(), ref.begin() + long(g));
        if (Mx == 4.0f) ++fours;
      }
    }
  }
  EXPECT_GT(fours, 0);
  std::vector<float> eye(K * K, 0.0f), Y(K * N);
  for (std::size_t i = 0; i < K; ++i) eye[i * K + i] = 1;  // exact under 4-over-6
  QuantLinear layer(linear_preset("quartet2-nvfp4"), K, N, false);
  layer.weight() = p.W;
  layer.forward(eye.data(), K, Y.data(), 1);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k) ASSERT_EQ(Y[k * N + n], ref[n * K + k]) << n << "," << k;
  // And it is more accurate than plain NVFP4 on the same weight.
  std::vector<float> nv = p.W;
  fake_quant(parse_quant_spec("nvfp4"), nv.data(), N, K);
  EXPECT_LT(rel_frob(ref, p.W), rel_frob(nv, p.W));
}

// DeepSeek-V3's accumulator: products summed with each addition truncated to 14 significant
// bits, the partial sum added into a float32 total every 128 products.
TEST(LinearTraining, AccumulatorPromotedEvery128) {
  const std::size_t M = 4, N = 128, K = 384;
  const LinearProblem p = make_problem(M, N, K, 41);
  std::vector<float> Xq = p.X, Wq = p.W;
  fake_quant(parse_quant_spec("e4m3:b128:amax"), Xq.data(), M, K);
  fake_quant(parse_quant_spec("e4m3:t128:amax"), Wq.data(), N, K);
  const auto trunc14 = [](double v) {
    if (v == 0) return v;
    const double q = std::ldexp(1.0, std::ilogb(v) - 13);
    return std::trunc(v / q) * q;
  };
  std::vector<float> ref(M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      float total = 0;
      for (std::size_t k0 = 0; k0 < K; k0 += 128) {
        double acc = 0;
        for (std::size_t k = k0; k < k0 + 128; ++k) acc = trunc14(acc + double(Xq[i * K + k]) * Wq[j * K + k]);
        total = static_cast<float>(double(total) + acc);
      }
      ref[i * N + j] = total;
    }
  QuantLinear layer(linear_preset("fp8-block128"), K, N, false);
  layer.weight() = p.W;
  std::vector<float> Y(M * N);
  layer.forward(p.X.data(), M, Y.data(), 1);
  EXPECT_EQ(Y, ref);
  EXPECT_NE(Y, ref_gemm(Xq, Wq, M, N, K));  // the 14-bit accumulator shows
}

// MXFP8 as TransformerEngine: the wgrad's X^T and dY^T are quantized from the float data in
// 32-blocks along the tokens (column-wise copies), not from the forward's row-wise codes.
TEST(LinearTraining, Mxfp8ColumnwiseCopiesFromFloat) {
  LinearProblem p = make_problem(64, 32, 64, 51);
  // An outlier feature (column 0 of X): its row blocks flush their small neighbours to zero,
  // which a column-wise copy made from the forward's codes could not recover.
  for (std::size_t m = 0; m < p.M; ++m) p.X[m * p.K] *= 1e6f;
  const QuantSpec s = parse_quant_spec("e4m3:b32:rceil");
  std::vector<float> gt = transposed(p.G, p.M, p.N), xt = transposed(p.X, p.M, p.K);
  fake_quant(s, gt.data(), p.N, p.M);
  fake_quant(s, xt.data(), p.K, p.M);
  const std::vector<float> ref = ref_gemm(gt, xt, p.N, p.K, p.M);
  std::vector<float> xrow = p.X;  // the forward's row-wise copy, re-quantized column-wise
  fake_quant(s, xrow.data(), p.M, p.K);
  std::vector<float> xt2 = transposed(xrow, p.M, p.K);
  fake_quant(s, xt2.data(), p.K, p.M);
  const std::vector<float> requant = ref_gemm(gt, xt2, p.N, p.K, p.M);
  const auto got = run_linear(linear_preset("mxfp8-te"), p);
  // dW columns 1..K-1 (column 0, the outlier's, would dominate the norm).
  const auto rest = [&](std::vector<float> dw) {
    for (std::size_t n = 0; n < p.N; ++n) dw[n * p.K] = 0;
    return dw;
  };
  EXPECT_LT(rel_frob(rest(got.dW), rest(ref)), 1e-6);
  EXPECT_GT(rel_frob(rest(requant), rest(ref)), 1e-2);  // the two differ, so the check can fail
}

// Stochastic and randomized presets: bitwise the same at 1 and 2 threads.
TEST(LinearTraining, SameBitsAtAnyThreadCount) {
  const LinearProblem p = make_problem(128, 128, 128, 61);
  const int saved = omp_get_max_threads();
  // (fp8-block128's accumulator computes each output alone: gemm_emulated's own tests.)
  for (const char* name : {"nvfp4-train", "quartet-fp4", "quartet2-nvfp4"}) {
    omp_set_num_threads(1);
    const auto one = run_linear(linear_preset(name), p, 3, 4, 2);
    omp_set_num_threads(2);
    const auto two = run_linear(linear_preset(name), p, 3, 4, 2);
    EXPECT_EQ(one.Y, two.Y) << name;
    EXPECT_EQ(one.dX, two.dX) << name;
    EXPECT_EQ(one.dW, two.dW) << name;
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace lowp::quant

namespace lowp::quant {
namespace {

// fp8-delayed carries its amax histories across steps; save_state / load_state carry them
// across a checkpoint, so a resumed layer computes the next step bitwise like the original.
TEST(LinearTraining, DelayedScalingStateSurvivesACheckpoint) {
  const LinearProblem p = make_problem(32, 16, 32, 71);
  const auto step = [&](QuantLinear& l, float gain, std::vector<float>& Y, std::vector<float>& dX) {
    std::vector<float> X = p.X;
    for (float& x : X) x *= gain;
    l.forward(X.data(), p.M, Y.data(), 1);
    l.backward(p.G.data(), dX.data(), 2);
  };
  QuantLinear a(linear_preset("fp8-delayed"), p.K, p.N, false);
  a.weight() = p.W;
  std::vector<float> Y(p.M * p.N), dX(p.M * p.K), Y2 = Y, dX2 = dX, Y3 = Y, dX3 = dX;
  for (float gain : {1.0f, 4.0f, 0.5f}) step(a, gain, Y, dX);
  const std::vector<std::uint8_t> state = a.save_state();
  QuantLinear b(linear_preset("fp8-delayed"), p.K, p.N, false), fresh(linear_preset("fp8-delayed"), p.K, p.N, false);
  b.weight() = fresh.weight() = p.W;
  b.load_state(state);
  step(a, 2.0f, Y, dX);
  step(b, 2.0f, Y2, dX2);
  step(fresh, 2.0f, Y3, dX3);
  EXPECT_EQ(Y, Y2);
  EXPECT_EQ(dX, dX2);
  EXPECT_NE(Y, Y3);  // without the history the scales differ
  EXPECT_TRUE(QuantLinear(linear_preset("fp8-rowwise"), 8, 8, false).save_state().empty());
  test::expect_error([&] { b.load_state(std::span(state).first(state.size() - 1)); }, {"fp8-delayed", "truncated"});
  std::vector<std::uint8_t> longer = state;
  longer.push_back(0);
  test::expect_error([&] { b.load_state(longer); }, {"1 bytes"});
}

}  // namespace
}  // namespace lowp::quant

namespace lowp::quant {
namespace {

// Operand statistics: collecting them changes no result; the saturation and flush counts of
// MXFP8 (OCP floor scales, so a block's largest elements can exceed 448 * 2^e) against counts
// made here from the scale rule; signal and noise against the operand quantized directly.
TEST(LinearTraining, OperandStatsCountSaturationAndFlushes) {
  LinearProblem p = make_problem(64, 32, 64, 81);
  for (std::size_t i = 0; i < p.X.size(); i += 5) p.X[i] *= 1e-4f;  // some tiny values to flush
  for (const LinearRecipe& r : linear_presets()) {
    if (r.name == "fp8-block128") continue;  // 128-multiples only (and slow)
    const auto plain = run_linear(r, p, 1, 2);
    QuantLinear layer(r, p.K, p.N, true);
    layer.weight() = p.W;
    layer.bias() = p.b;
    layer.collect_stats(true);
    std::vector<float> Y(p.M * p.N), dX(p.M * p.K);
    layer.forward(p.X.data(), p.M, Y.data(), 1);
    layer.backward(p.G.data(), dX.data(), 2);
    EXPECT_EQ(Y, plain.Y) << r.name;
    EXPECT_EQ(dX, plain.dX) << r.name;
    EXPECT_EQ(layer.weight_grad(), plain.dW) << r.name;
    const auto st = layer.take_stats();
    if (r.engine == LinearEngine::emulated && r.fwd.a) {
      EXPECT_EQ(st[0].count, p.X.size()) << r.name;
    }
    EXPECT_EQ(layer.take_stats()[0].count, 0u);  // reset
  }
  QuantLinear layer(linear_preset("mxfp8"), p.K, p.N, false);
  layer.weight() = p.W;
  layer.collect_stats(true);
  std::vector<float> Y(p.M * p.N);
  layer.forward(p.X.data(), p.M, Y.data(), 1);
  const OperandStats x = layer.take_stats()[0];
  std::size_t sat = 0, flushed = 0;
  double signal = 0;
  for (std::size_t b = 0; b < p.X.size(); b += 32) {
    float a = 0;
    for (std::size_t i = b; i < b + 32; ++i) a = std::max(a, std::fabs(p.X[i]));
    const double scale = std::ldexp(1.0, std::ilogb(a) - 8);  // E4M3's emax is 8
    for (std::size_t i = b; i < b + 32; ++i) {
      const double v = std::fabs(p.X[i]) / scale;
      sat += v > 448;
      flushed += p.X[i] != 0 && v <= 0x1p-10;  // at most half the smallest subnormal 2^-9
      signal += double(p.X[i]) * p.X[i];
    }
  }
  std::vector<float> xq = p.X;
  fake_quant(parse_quant_spec("mxfp8"), xq.data(), p.M, p.K);
  double noise = 0;
  for (std::size_t i = 0; i < xq.size(); ++i) noise += std::pow(double(p.X[i]) - xq[i], 2);
  EXPECT_GT(sat, 0u);
  EXPECT_GT(flushed, 0u);
  EXPECT_EQ(x.count, p.X.size());
  EXPECT_EQ(x.saturated, sat);
  EXPECT_EQ(x.flushed, flushed);
  EXPECT_DOUBLE_EQ(x.signal, signal);
  EXPECT_DOUBLE_EQ(x.noise, noise);
  EXPECT_NEAR(x.sqnr_db(), 10 * std::log10(signal / noise), 1e-9);
}

}  // namespace
}  // namespace lowp::quant
