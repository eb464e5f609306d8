// The float8 ScaledTensor MLP against a float32 MLP written here (forward, backward and Adam in
// plain loops), on a small teacher-student regression: loss curve and final weights within
// stated tolerances. Then the same problem with inputs and targets scaled by 2^20 and 2^-20:
// the scaled float8 MLP still matches float32, while the same float8 data without scales
// overflow (NaN, or saturation to +-448) or underflow (all zeros).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/half.hpp"
#include "quant/scaled_mlp.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

constexpr std::size_t B = 64, D = 16, H = 32, O = 4, Steps = 150;

struct Problem {
  std::vector<float> x, t, w1, w2;  // inputs B x D, targets B x O, initial weights
};

// Targets from a random teacher of the same shape; the student starts from other weights.
Problem make_problem(float c) {
  Problem p;
  p.x = test::normal_floats(B * D, 31);
  const std::vector<float> tw1 = test::normal_floats(H * D, 32), tw2 = test::normal_floats(O * H, 33);
  p.t.assign(B * O, 0.0f);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t o = 0; o < O; ++o) {
      double acc = 0;
      for (std::size_t h = 0; h < H; ++h) {
        double z = 0;
        for (std::size_t d = 0; d < D; ++d) z += tw1[h * D + d] * p.x[b * D + d] / std::sqrt(double(D));
        acc += tw2[o * H + h] * z / (1 + std::exp(-z)) / std::sqrt(double(H));
      }
      p.t[b * O + o] = static_cast<float>(acc);
    }
  p.w1 = test::normal_floats(H * D, 34);
  p.w2 = test::normal_floats(O * H, 35);
  for (float& w : p.w1) w /= std::sqrt(float(D));
  for (float& w : p.w2) w /= std::sqrt(float(H));
  for (float& v : p.x) v *= c;
  for (float& v : p.t) v *= c;
  return p;
}

// The float32 reference: y = W2 silu(W1 x + b1) + b2, loss sum (y-t)^2 / (2B), Adam.
struct RefMlp {
  RefMlp(bool bias_, float lr_, float eps_, std::vector<float> w1_, std::vector<float> w2_)
      : bias(bias_), lr(lr_), eps(eps_), w1(std::move(w1_)), w2(std::move(w2_)) {}
  bool bias;
  float lr, eps;
  std::vector<float> w1, w2, b1 = std::vector<float>(H), b2 = std::vector<float>(O);
  std::vector<std::vector<float>> m, v;
  int t = 0;

  void adam(std::vector<std::vector<float>*> ps, const std::vector<std::vector<float>>& gs) {
    if (m.empty())
      for (auto* p : ps) {
        m.emplace_back(p->size(), 0.0f);
        v.emplace_back(p->size(), 0.0f);
      }
    ++t;
    const float c1 = 1 - std::pow(0.9f, float(t)), c2 = 1 - std::pow(0.999f, float(t));
    for (std::size_t k = 0; k < ps.size(); ++k)
      for (std::size_t i = 0; i < ps[k]->size(); ++i) {
        const float g = gs[k][i];
        m[k][i] = 0.9f * m[k][i] + 0.1f * g;
        v[k][i] = 0.999f * v[k][i] + 0.001f * g * g;
        (*ps[k])[i] -= lr * (m[k][i] / c1) / (std::sqrt(v[k][i] / c2) + eps);
      }
  }

  // The loss of the current weights (no update).
  double loss(const std::vector<float>& x, const std::vector<float>& tg) const {
    double acc = 0;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t o = 0; o < O; ++o) {
        double z = bias ? b2[o] : 0.0;
        for (std::size_t j = 0; j < H; ++j) {
          double hz = bias ? b1[j] : 0.0;
          for (std::size_t d = 0; d < D; ++d) hz += double(w1[j * D + d]) * x[b * D + d];
          z += w2[o * H + j] * hz / (1 + std::exp(-hz));
        }
        acc += (z - tg[b * O + o]) * (z - tg[b * O + o]) / (2 * B);
      }
    return acc;
  }

  float step(const std::vector<float>& x, const std::vector<float>& tg) {
    std::vector<float> h(B * H), a(B * H), y(B * O), dy(B * O), da(B * H), dh(B * H);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t j = 0; j < H; ++j) {
        float z = bias ? b1[j] : 0.0f;
        for (std::size_t d = 0; d < D; ++d) z += w1[j * D + d] * x[b * D + d];
        h[b * H + j] = z;
        a[b * H + j] = z / (1 + std::exp(-z));
      }
    float loss = 0;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t o = 0; o < O; ++o) {
        float z = bias ? b2[o] : 0.0f;
        for (std::size_t j = 0; j < H; ++j) z += w2[o * H + j] * a[b * H + j];
        y[b * O + o] = z;
        const float e = z - tg[b * O + o];
        loss += e * e / (2 * B);
        dy[b * O + o] = e / B;
      }
    std::vector<float> gw1(H * D, 0.0f), gw2(O * H, 0.0f), gb1(H, 0.0f), gb2(O, 0.0f);
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t o = 0; o < O; ++o) {
        gb2[o] += dy[b * O + o];
        for (std::size_t j = 0; j < H; ++j) {
          gw2[o * H + j] += dy[b * O + o] * a[b * H + j];
          da[b * H + j] += dy[b * O + o] * w2[o * H + j];
        }
      }
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t j = 0; j < H; ++j) {
        const float z = h[b * H + j], s = 1 / (1 + std::exp(-z));
        const float g = da[b * H + j] * s * (1 + z * (1 - s));
        gb1[j] += g;
        for (std::size_t d = 0; d < D; ++d) gw1[j * D + d] += g * x[b * D + d];
      }
    if (bias)
      adam({&w1, &w2, &b1, &b2}, {gw1, gw2, gb1, gb2});
    else
      adam({&w1, &w2}, {gw1, gw2});
    return loss;
  }
};

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

std::vector<float> minus(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = a[i] - b[i];
  return r;
}

struct TrainingRun {
  std::vector<double> f8_loss, f32_loss;  // per step, divided by c^2
  double zero_loss = 0;                   // the loss of predicting 0, divided by c^2
  double f8_weights_f32_loss = 0;         // the float8-trained weights evaluated in float32
  std::vector<float> w1, w2;              // initial weights
  std::vector<float> f8_w1, f8_w2, f32_w1, f32_w2;
  ScaledTensor master_w1;
};

TrainingRun train_both(float c, bool bias, const char* master = "float32") {
  const Problem p = make_problem(c);
  const float lr = 1e-2f, eps = 1e-8f * c * c;  // Adam is invariant to the gradient scale c^2 but for eps
  const Format e4m3 = parse_format("e4m3");
  MlpConfig cfg;
  cfg.in = D;
  cfg.hidden = H;
  cfg.out = O;
  cfg.bias = bias;
  AdamConfig ac;
  ac.lr = lr;
  ac.eps = eps;
  ac.master = parse_format(master);
  ScaledMlp mlp(cfg, p.w1, p.w2, ac);
  RefMlp ref(bias, lr, eps, p.w1, p.w2);
  const ScaledTensor x = scaled_auto(p.x, B, D, e4m3), t = scaled_auto(p.t, B, O, e4m3);
  TrainingRun r;
  for (std::size_t s = 0; s < Steps; ++s) {
    r.f8_loss.push_back(mlp.train_step(x, t) / (double(c) * c));
    r.f32_loss.push_back(ref.step(p.x, p.t) / (double(c) * c));
  }
  r.master_w1 = mlp.w1();
  r.f8_w1 = mlp.w1().values();
  r.f8_w2 = mlp.w2().values();
  r.f32_w1 = ref.w1;
  r.f32_w2 = ref.w2;
  r.w1 = p.w1;
  r.w2 = p.w2;
  for (float v : p.t) r.zero_loss += double(v) * v / (2.0 * B * c * c);
  RefMlp eval(bias, lr, eps, r.f8_w1, r.f8_w2);
  eval.b1 = mlp.b1().values();
  eval.b2 = mlp.b2().values();
  r.f8_weights_f32_loss = eval.loss(p.x, p.t) / (double(c) * c);
  return r;
}

// Tolerances, stated. L0 is the loss of predicting zero. The float8 run sees E4M3 outputs
// and targets (3 mantissa bits: their rounding alone is a loss of about 2 (2^-4)^2 / 3 L0, and
// it is also the noise in the gradient once the fit gets that close) and E5M2 gradients.
// - loss curve: |L8 - L32| <= 25% of L32 + 2^-7 L0 at every step;
// - the float8-trained weights, evaluated in float32: loss <= L32 + 2^-6 L0, and below 20%
//   of the initial loss;
// - final weights within 30% of float32's in relative L2, and the weight updates (final minus
//   initial) within 40%. Measured: 10-22% and 15-33% (recorded as test properties).
void expect_matches(const TrainingRun& r) {
  ASSERT_EQ(r.f8_loss.size(), Steps);
  const auto record = [](const char* key, double v) { ::testing::Test::RecordProperty(key, std::to_string(v)); };
  record("f32_final_loss_over_L0", r.f32_loss.back() / r.zero_loss);
  record("f8_final_loss_over_L0", r.f8_loss.back() / r.zero_loss);
  record("f8_weights_f32_loss_over_L0", r.f8_weights_f32_loss / r.zero_loss);
  record("w1_rel_l2", rel_l2(r.f8_w1, r.f32_w1));
  record("w2_rel_l2", rel_l2(r.f8_w2, r.f32_w2));
  record("w1_update_rel_l2", rel_l2(minus(r.f8_w1, r.w1), minus(r.f32_w1, r.w1)));
  record("w2_update_rel_l2", rel_l2(minus(r.f8_w2, r.w2), minus(r.f32_w2, r.w2)));
  const double floor = 0x1p-7 * r.zero_loss;
  for (std::size_t s = 0; s < Steps; ++s) {
    ASSERT_TRUE(std::isfinite(r.f8_loss[s])) << "step " << s;
    EXPECT_NEAR(r.f8_loss[s], r.f32_loss[s], 0.25 * r.f32_loss[s] + floor) << "step " << s;
  }
  EXPECT_LT(r.f32_loss.back(), 0.2 * r.f32_loss.front()) << "the float32 run itself must train";
  EXPECT_LT(r.f8_weights_f32_loss, r.f32_loss.back() + 0x1p-6 * r.zero_loss);
  EXPECT_LT(r.f8_weights_f32_loss, 0.2 * r.f32_loss.front());
  EXPECT_LT(rel_l2(r.f8_w1, r.f32_w1), 0.30);
  EXPECT_LT(rel_l2(r.f8_w2, r.f32_w2), 0.30);
  EXPECT_LT(rel_l2(minus(r.f8_w1, r.w1), minus(r.f32_w1, r.w1)), 0.40);
  EXPECT_LT(rel_l2(minus(r.f8_w2, r.w2), minus(r.f32_w2, r.w2)), 0.40);
}

TEST(ScaledMlp, MatchesFloat32WithBias) { expect_matches(train_both(1.0f, true)); }

TEST(ScaledMlp, OptimizerStateIsFloat16AndTracksTheGradientScale) {
  std::vector<double> log2_scale;
  for (float c : {0x1p20f, 0x1p-20f}) {
    const Problem p = make_problem(c);
    MlpConfig cfg;
    cfg.in = D;
    cfg.hidden = H;
    cfg.out = O;
    cfg.bias = false;
    ScaledMlp mlp(cfg, p.w1, p.w2);
    const Format e4m3 = parse_format("e4m3");
    mlp.train_step(scaled_auto(p.x, B, D, e4m3), scaled_auto(p.t, B, O, e4m3));
    ASSERT_EQ(mlp.optimizer().first_moments().size(), 2u);
    for (const auto* states : {&mlp.optimizer().first_moments(), &mlp.optimizer().second_moment_roots()})
      for (const ScaledTensor& s : *states) {
        EXPECT_EQ(s.format, parse_format("float16"));
        // Unit-RMS data; the magnitude lives in the scale.
        EXPECT_LT(tensor_stat(s.data, RescaleStat::rms), 2.0);
        EXPECT_GE(tensor_stat(s.data, RescaleStat::rms), 1.0);
      }
    const ScaledTensor& r = mlp.optimizer().second_moment_roots()[0];
    log2_scale.push_back(std::log2(r.scale));
    RecordProperty(c > 1 ? "sqrt_v_log2_scale_at_2^20" : "sqrt_v_log2_scale_at_2^-20", std::to_string(log2_scale.back()));
    // Stored as plain float16 the same values would overflow (max 65504) or flush to zero
    // (smallest subnormal 2^-24).
    const double amax = tensor_stat(r.values(), RescaleStat::max);
    if (c > 1)
      EXPECT_GT(amax, 65504.0);
    else
      EXPECT_LT(amax, 0x1p-25);
  }
  // W1's gradient dh^T x scales with c^2: 2^80 between the two runs, up to the rounding of
  // the data (the scale moves by one binade at most).
  EXPECT_NEAR(log2_scale[0] - log2_scale[1], 80.0, 1.0);
}

// Plain float8 arithmetic (scale 1), the way the data would be without scales: the input and
// the hidden pre-activation cast to E4M3.
struct PlainForward {
  std::vector<float> x, h;
};
PlainForward plain_forward(const Problem& p, bool saturate) {
  const Format e4m3 = parse_format("e4m3");
  BulkOptions opt;
  opt.cast.saturate = saturate;
  PlainForward f{p.x, std::vector<float>(B * H)};
  fake_quant_f32(e4m3, f.x, opt);
  std::vector<float> w1 = p.w1;
  fake_quant_f32(e4m3, w1, opt);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t j = 0; j < H; ++j) {
      float z = 0;
      for (std::size_t d = 0; d < D; ++d) z += w1[j * D + d] * f.x[b * D + d];
      f.h[b * H + j] = z;
    }
  fake_quant_f32(e4m3, f.h, opt);
  return f;
}

TEST(ScaledMlp, TrainsAt2Pow20WhereUnscaledFloat8Overflows) {
  // Without scales: every input above 448 is NaN (OCP E4M3 has no Inf), or +-448 when saturating,
  // which leaves only the signs of the inputs.
  const Problem p = make_problem(0x1p20f);
  const PlainForward nonsat = plain_forward(p, false), sat = plain_forward(p, true);
  std::size_t nan = 0, clipped = 0;
  for (float v : nonsat.x) nan += std::isnan(v);
  for (float v : sat.x) clipped += std::fabs(v) == 448.0f;
  EXPECT_GE(nan, B * D * 99 / 100);
  EXPECT_GE(clipped, B * D * 99 / 100);
  // With scales: trains like float32 (bias-free: an O(lr) bias is not on the problem's scale).
  expect_matches(train_both(0x1p20f, false));
}

TEST(ScaledMlp, TrainsAt2PowMinus20WhereUnscaledFloat8Underflows) {
  // Without scales: |c x| < 2^-10, half E4M3's smallest subnormal, so every input is 0, the
  // hidden layer is 0, and so is every weight gradient dW1 = dh^T x.
  const Problem p = make_problem(0x1p-20f);
  const PlainForward f = plain_forward(p, true);
  for (float v : f.x) ASSERT_EQ(v, 0.0f);
  for (float v : f.h) ASSERT_EQ(v, 0.0f);
  std::vector<float> t = p.t;
  fake_quant_f32(parse_format("e4m3"), t);
  for (float v : t) ASSERT_EQ(v, 0.0f);
  expect_matches(train_both(0x1p-20f, false));
}

TEST(ScaledMlp, MatchesFloat32WithoutBias) { expect_matches(train_both(1.0f, false)); }

TEST(ScaledMlp, MatchesFloat32WithFloat16MasterWeights) {
  const TrainingRun r = train_both(1.0f, true, "float16");
  expect_matches(r);
  EXPECT_EQ(r.master_w1.format, parse_format("float16"));
  for (float d : r.master_w1.data) EXPECT_EQ(f16_to_f32(f32_to_f16(d)), d);
}

TEST(ScaledMlp, RejectsBadShapes) {
  MlpConfig cfg;
  cfg.in = D;
  cfg.hidden = H;
  cfg.out = O;
  const Problem p = make_problem(1.0f);
  test::expect_error([&] { ScaledMlp(cfg, std::vector<float>(3), p.w2); }, {"ScaledMlp", "3"});
  ScaledMlp mlp(cfg, p.w1, p.w2);
  const Format e4m3 = parse_format("e4m3");
  test::expect_error([&] { mlp.forward(scaled_auto(std::vector<float>(B * 5), B, 5, e4m3)); },
                     {"ScaledMlp", "5 columns", "16"});
  test::expect_error([&] { mlp.train_step(scaled_auto(p.x, B, D, e4m3), scaled_auto(p.x, B, D, e4m3)); },
                     {"ScaledMlp", "target", "64x16"});
  cfg.hidden = 0;
  test::expect_error([&] { ScaledMlp(cfg, p.w1, p.w2); }, {"ScaledMlp", "hidden 0"});
}

}  // namespace
}  // namespace lowp::quant
