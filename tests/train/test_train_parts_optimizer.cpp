// The optimizers against an independent double-precision AdamW written here, the schedule
// against its formulas, bf16 master weights stalling without stochastic rounding and moving
// with it, low-precision moments close to fp32 ones, bitwise resume, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "support/test_support.hpp"
#include "lowp/numerics/cpu.hpp"
#include "optim/adam_avx512.hpp"
#include "optim/optimizer.hpp"

namespace lowp::train {
namespace {

// The reference: AdamW (and StableAdamW's update clipping) as the papers write it, in double,
// with the parameters and moments stored as float32 between steps (as the fp32 master keeps them).
struct RefAdam {
  OptimizerConfig c;
  std::vector<std::vector<float>> m, v;
  int t = 0;
  std::vector<double> rms;
  void step(std::vector<std::vector<float>>& p, const std::vector<std::vector<float>>& g,
            const std::vector<bool>& decay) {
    if (m.empty())
      for (const auto& x : p) m.emplace_back(x.size(), 0.0f), v.emplace_back(x.size(), 0.0f);
    ++t;
    double sq = 0;
    for (const auto& x : g)
      for (float e : x) sq += double(e) * e;
    const double norm = std::sqrt(sq);
    const double clip = c.clip_norm > 0 && norm > 0 ? std::min(1.0, c.clip_norm / (norm + 1e-6)) : 1.0;
    double lr = c.schedule.lr;
    const double w = double(c.schedule.warmup_steps), T = double(c.schedule.total_steps);
    if (t <= w) {
      lr = c.schedule.lr * t / w;
    } else {
      const double progress = std::min(1.0, (t - w) / (T - w));
      lr = c.schedule.lr * (c.schedule.min_lr_ratio + (1 - c.schedule.min_lr_ratio) * 0.5 * (1 + std::cos(M_PI * progress)));
    }
    rms.clear();
    for (std::size_t k = 0; k < p.size(); ++k) {
      std::vector<double> gg(p[k].size());
      double acc = 0;
      for (std::size_t i = 0; i < p[k].size(); ++i) {
        gg[i] = clip * g[k][i];
        m[k][i] = float(c.beta1 * m[k][i] + (1 - c.beta1) * gg[i]);
        v[k][i] = float(c.beta2 * v[k][i] + (1 - c.beta2) * gg[i] * gg[i]);
        const double vh = v[k][i] / (1 - std::pow(c.beta2, t));
        acc += gg[i] * gg[i] / std::max(vh, c.eps * c.eps);
      }
      const double r = std::sqrt(acc / double(p[k].size()));
      rms.push_back(r);
      const double eta = c.kind == OptimizerKind::stable_adamw ? lr / std::max(1.0, r / c.update_clip) : lr;
      for (std::size_t i = 0; i < p[k].size(); ++i) {
        const double mh = m[k][i] / (1 - std::pow(c.beta1, t)), vh = v[k][i] / (1 - std::pow(c.beta2, t));
        double x = p[k][i];
        if (decay[k]) x *= 1 - lr * c.weight_decay;  // decay at the unclipped rate
        x -= eta * mh / (std::sqrt(vh) + c.eps);
        p[k][i] = float(x);
      }
    }
  }
};

struct Problem {
  std::vector<std::vector<float>> p;
  std::vector<bool> decay{true, false, true};
  std::vector<std::string> names{"w1", "norm", "w2"};
  explicit Problem(std::uint32_t seed) {
    for (std::size_t n : {300u, 17u, 1000u}) p.push_back(test::normal_floats(n, seed++));
  }
  // A gradient per step: a pull toward 0.3 plus noise, with a spike at step 12 on tensor 2.
  std::vector<std::vector<float>> grads(int step) const {
    std::vector<std::vector<float>> g;
    for (std::size_t k = 0; k < p.size(); ++k) {
      auto noise = test::normal_floats(p[k].size(), 1000u * step + k);
      std::vector<float> x(p[k].size());
      for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = 0.5f * (p[k][i] - 0.3f) + 0.1f * noise[i] * (step == 12 && k == 2 ? 40.0f : 1.0f);
      g.push_back(x);
    }
    return g;
  }
  std::vector<ParamTensor> view(std::vector<std::vector<float>>& params, const std::vector<std::vector<float>>& g) const {
    std::vector<ParamTensor> v;
    for (std::size_t k = 0; k < params.size(); ++k) v.push_back({names[k], params[k], g[k], decay[k]});
    return v;
  }
};

OptimizerConfig base_config(OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.schedule = {3e-2, 5, 30, 0.1};
  c.weight_decay = 0.1;
  c.clip_norm = 4.0;
  return c;
}

// |a - b| <= 2 float ulps of the larger magnitude: the two compute the same formula in double
// in a different order, then round to float.
void expect_close_f32(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  for (std::size_t k = 0; k < a.size(); ++k)
    for (std::size_t i = 0; i < a[k].size(); ++i)
      ASSERT_NEAR(a[k][i], b[k][i], 2.5e-7 * std::max(1.0f, std::fabs(b[k][i]))) << "tensor " << k << " [" << i << "]";
}

void run_against_reference(OptimizerKind kind) {
  Problem prob(5);
  const OptimizerConfig c = base_config(kind);
  Optimizer opt(c);
  RefAdam ref;
  ref.c = c;
  auto p = prob.p, q = prob.p;
  bool clipped_update = false, clipped_norm = false;
  for (int s = 1; s <= 30; ++s) {
    const auto g = prob.grads(s);
    const StepStats st = opt.step(prob.view(p, g));
    ref.step(q, g, prob.decay);
    expect_close_f32(p, q);
    EXPECT_EQ(st.step, std::size_t(s));
    ASSERT_EQ(st.tensors.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_NEAR(st.tensors[k].rms_g2_over_v, ref.rms[k], 1e-5 * ref.rms[k]);
      clipped_update |= st.tensors[k].lr_scale < 1;
    }
    clipped_norm |= st.clip_scale < 1;
  }
  EXPECT_TRUE(clipped_norm);  // the spike exceeds clip_norm
  EXPECT_EQ(clipped_update, kind == OptimizerKind::stable_adamw);
}

TEST(TrainOptimizer, AdamWMatchesDoubleReference) { run_against_reference(OptimizerKind::adamw); }
TEST(TrainOptimizer, StableAdamWMatchesDoubleReference) { run_against_reference(OptimizerKind::stable_adamw); }

TEST(TrainOptimizer, ScheduleWarmupThenCosine) {
  const Schedule s{1.0, 10, 110, 0.1};
  EXPECT_DOUBLE_EQ(learning_rate(s, 1), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(s, 10), 1.0);
  EXPECT_NEAR(learning_rate(s, 60), 0.1 + 0.9 * 0.5, 1e-12);  // half way: cos = 0
  EXPECT_NEAR(learning_rate(s, 110), 0.1, 1e-12);
  EXPECT_NEAR(learning_rate(s, 500), 0.1, 1e-12);
  EXPECT_GT(learning_rate(s, 30), learning_rate(s, 31));
}

TEST(TrainOptimizer, RmsSignalIsOneOnTheFirstStepAndJumpsOnASpike) {
  // Step 1: vh = g^2 exactly (up to float rounding), so r = 1.
  Problem prob(9);
  OptimizerConfig c = base_config(OptimizerKind::adamw);
  c.clip_norm = 0;
  Optimizer opt(c);
  auto p = prob.p;
  const StepStats s1 = opt.step(prob.view(p, prob.grads(1)));
  for (const auto& t : s1.tensors) EXPECT_NEAR(t.rms_g2_over_v, 1.0, 1e-6);
  double before = 0, spike = 0;
  for (int s = 2; s <= 12; ++s) {
    const StepStats st = opt.step(prob.view(p, prob.grads(s)));
    (s == 12 ? spike : before) = st.tensors[2].rms_g2_over_v;
  }
  // The 40x gradient is far above what v expected; r is bounded by 1 / sqrt(1 - beta2) = 4.5
  // because v already holds (1 - beta2) g^2 of this step.
  EXPECT_NEAR(before, 1.0, 0.1);
  EXPECT_GT(spike, 2.5 * before);
  const double layer = combined_rms(s1.tensors);
  EXPECT_NEAR(layer, 1.0, 1e-6);
}

// The bf16 stall: with p near 1 (bf16 spacing 2^-7) an Adam step of ~lr = 1e-3 is below half a
// spacing, so round-to-nearest never moves p; stochastic rounding moves it in expectation.
TEST(TrainOptimizer, Bf16MasterStallsWithoutStochasticRounding) {
  const std::size_t n = 512;
  const auto run = [&](MasterFormat master, bool sr) {
    OptimizerConfig c;
    c.schedule = {1e-3, 0, 0, 1.0};
    c.weight_decay = 0;
    c.clip_norm = 0;
    c.master = master;
    c.master_stochastic = sr;
    c.moments = master == MasterFormat::bf16 ? MomentFormat::bf16 : MomentFormat::fp32;
    c.seed = 3;
    Optimizer opt(c);
    std::vector<float> p(n, 1.0f), g(n);
    for (int s = 0; s < 300; ++s) {
      for (std::size_t i = 0; i < n; ++i) g[i] = 2 * (p[i] - 1.5f);  // loss (p - 1.5)^2
      std::vector<ParamTensor> t{{"p", p, g, false}};
      opt.step(t);
    }
    double loss = 0;
    for (float x : p) loss += (x - 1.5) * (x - 1.5);
    return loss / n;
  };
  const double start = 0.25, fp32 = run(MasterFormat::fp32, false);
  const double pure = run(MasterFormat::bf16, false), pure_sr = run(MasterFormat::bf16, true);
  std::printf("loss (p-1.5)^2 after 300 steps: start %.4f fp32 %.4f bf16-pure %.4f bf16-pure-sr %.4f\n", start, fp32,
              pure, pure_sr);
  EXPECT_LT(fp32, 0.5 * start);
  EXPECT_EQ(pure, start);  // not one weight moved
  EXPECT_LT(std::fabs(pure_sr - fp32), 0.1 * (start - fp32));
}

TEST(TrainOptimizer, StochasticBf16RoundingIsUnbiased) {
  const float x = 1.0f + 0.3f * 0x1p-7f;  // 30% of the way from 1 to the next bf16
  double sum = 0;
  const int n = 100000;
  test::SplitMix rng{7};
  for (int i = 0; i < n; ++i) sum += round_bf16_stochastic(x, static_cast<std::uint32_t>(rng.next()));
  EXPECT_NEAR(sum / n, x, 4 * std::sqrt(0.3 * 0.7 / n) * 0x1p-7);  // 4 sigma
  EXPECT_EQ(round_bf16(x), 1.0f);
}

// Low-precision moments stay close to fp32 moments over 20 steps (relative distance of the
// total parameter change), and a run saved at step 10 and resumed ends bitwise the same.
TEST(TrainOptimizer, MomentFormatsTrackFp32AndResumeBitwise) {
  Problem prob(21);
  const auto run = [&](MomentFormat f, MasterFormat master, bool sr, int split) {
    OptimizerConfig c = base_config(OptimizerKind::stable_adamw);
    c.moments = f;
    c.master = master;
    c.master_stochastic = sr;
    c.seed = 11;
    auto p = prob.p;
    auto opt = std::make_unique<Optimizer>(c);
    opt->init_params(prob.view(p, prob.p));
    for (int s = 1; s <= 20; ++s) {
      if (s == split) {  // checkpoint, then continue in a fresh optimizer
        const auto bytes = opt->save();
        opt = std::make_unique<Optimizer>(c);
        opt->load(bytes);
      }
      opt->step(prob.view(p, prob.grads(s)));
    }
    return p;
  };
  const auto ref = run(MomentFormat::fp32, MasterFormat::fp32, false, 0);
  const struct {
    MomentFormat f;
    double tol;
  } cases[] = {{MomentFormat::fp32, 0}, {MomentFormat::bf16, 0.02}, {MomentFormat::fp16_scaled, 0.002},
               {MomentFormat::e4m3_scaled, 0.15}};
  for (const auto& cs : cases) {
    const auto p = run(cs.f, MasterFormat::fp32, false, 0);
    double num = 0, den = 0;
    for (std::size_t k = 0; k < p.size(); ++k)
      for (std::size_t i = 0; i < p[k].size(); ++i) {
        num += std::pow(double(p[k][i]) - ref[k][i], 2);
        den += std::pow(double(ref[k][i]) - prob.p[k][i], 2);
      }
    const double rel = std::sqrt(num / den);
    std::printf("moments %-12s relative distance of the update from fp32 moments: %.5f\n",
                std::string(name(cs.f)).c_str(), rel);
    EXPECT_LE(rel, cs.tol) << name(cs.f);
    for (MasterFormat master : {MasterFormat::fp32, MasterFormat::bf16})
      EXPECT_EQ(run(cs.f, master, master == MasterFormat::bf16, 10), run(cs.f, master, master == MasterFormat::bf16, 0))
          << name(cs.f) << " " << name(master);
  }
}

TEST(TrainOptimizer, BadInputIsOneClearError) {
  test::expect_error([] { OptimizerConfig c; c.beta2 = 1.0; Optimizer o(c); }, {"beta"});
  test::expect_error([] { OptimizerConfig c; c.schedule = {1e-3, 50, 10, 0.1}; Optimizer o(c); }, {"warmup_steps 50"});
  test::expect_error([] { parse_moment_format("fp8"); }, {"fp8", "e4m3-scaled"});
  Problem prob(1);
  Optimizer opt(base_config(OptimizerKind::adamw));
  auto p = prob.p;
  auto g = prob.grads(1);
  opt.step(prob.view(p, g));
  auto shorter = prob.view(p, g);
  shorter.pop_back();
  test::expect_error([&] { opt.step(shorter); }, {"2 tensors", "3"});
  auto renamed = prob.view(p, g);
  renamed[1].name = "other";
  test::expect_error([&] { opt.step(renamed); }, {"'other'", "'norm'"});
  const auto before = p;
  g[2][5] = NAN;
  test::expect_error([&] { opt.step(prob.view(p, g)); }, {"non-finite", "'w2'"});
  EXPECT_EQ(p, before);  // nothing changed
  auto bytes = opt.save();
  Optimizer other(base_config(OptimizerKind::adamw));
  test::expect_error([&] { other.load(std::span(bytes).first(bytes.size() - 3)); }, {"optimizer state"});
  auto bad = bytes;
  bad[0] = 'X';
  test::expect_error([&] { other.load(bad); }, {"magic"});
  OptimizerConfig bf = base_config(OptimizerKind::adamw);
  bf.moments = MomentFormat::bf16;
  Optimizer third(bf);
  test::expect_error([&] { third.load(bytes); }, {"moment", "bf16"});
  // Given the model's tensors, load() refuses a state of other tensors before it changes anything.
  test::expect_error([&] { other.load(bytes, shorter); }, {"load with 2 tensors", "3"});
  test::expect_error([&] { other.load(bytes, renamed); }, {"'other'", "'norm'"});
  // The step count (after the magic and the two formats) beyond an int would make a resumed
  // run's step loop wrap around (a fuzzing finding: 4,211,081,223 meant 2^32 - 84M steps).
  auto huge = bytes;
  const std::uint64_t steps = 4211081223u;
  std::memcpy(huge.data() + 24, &steps, 8);
  test::expect_error([&] { other.load(huge, prob.view(p, g)); }, {"implausible step count 4211081223"});
  EXPECT_EQ(other.steps_done(), 0u);
  other.load(bytes, prob.view(p, g));
  EXPECT_EQ(other.steps_done(), 1u);
}

// Threads take whole tensors: the parameters and the state after 3 steps are bitwise the same at
// 1, 2 and 3 threads, for every moment format and master (tensors large enough to run parallel).
TEST(TrainOptimizer, BitwiseTheSameAtAnyThreadCount) {
  Problem prob(9);
  prob.p = {test::normal_floats(36000, 1), test::normal_floats(17, 2), test::normal_floats(30001, 3)};
  const auto run = [&](MomentFormat f, MasterFormat master, int threads) {
    OptimizerConfig c = base_config(OptimizerKind::stable_adamw);
    c.moments = f;
    c.master = master;
    c.master_stochastic = master == MasterFormat::bf16;
    c.seed = 3;
    auto p = prob.p;
    Optimizer opt(c);
    opt.init_params(prob.view(p, prob.p));
    std::vector<double> stats;
    for (int s = 1; s <= 3; ++s) {
      const StepStats st = opt.step(prob.view(p, prob.grads(s)), threads);
      stats.push_back(st.grad_norm);
      for (const TensorStepStats& t : st.tensors) stats.push_back(t.rms_g2_over_v);
    }
    return std::make_tuple(p, opt.save(), stats);
  };
  for (MomentFormat f : {MomentFormat::fp32, MomentFormat::bf16, MomentFormat::e4m3_scaled})
    for (MasterFormat master : {MasterFormat::fp32, MasterFormat::bf16}) {
      const auto one = run(f, master, 1);
      EXPECT_TRUE(one == run(f, master, 2)) << name(f) << " " << name(master);
      if (f == MomentFormat::fp32) {
        EXPECT_TRUE(one == run(f, master, 3)) << name(master);
      }
    }
}

// The float32 element loops (optim/adam_loops.hpp) against their formula element by element, in
// double with each product and sum its own rounding (noinline: no fused multiply-add can form),
// for the baseline build's copy and the AVX-512 one, over a length with a vector tail, zero
// moments (the eps^2 floor) and magnitudes from 1e-30 to 1e3.
[[gnu::noinline]] double mul(double a, double b) { return a * b; }
[[gnu::noinline]] double add(double a, double b) { return a + b; }

TEST(TrainOptimizer, AdamLoopsOfEveryIsaFollowTheFormulaBitwise) {
  const std::size_t n = 1037;
  std::vector<float> grad = test::normal_floats(n, 4), m0 = test::normal_floats(n, 5), v0(n), x0 = test::normal_floats(n, 6);
  for (std::size_t i = 0; i < n; ++i) {
    v0[i] = i % 7 == 0 ? 0.0f : std::fabs(m0[i]) * std::pow(10.0f, float(int(i % 11) - 5));
    grad[i] *= std::pow(10.0f, float(int(i % 13) - 6));
    if (i % 97 == 0) grad[i] = 1e-30f;
  }
  detail::AdamScalars s;
  s.clip_scale = 0.7, s.beta1 = 0.9, s.beta2 = 0.95, s.bc1 = 1 - std::pow(0.9, 3), s.bc2 = 1 - std::pow(0.95, 3);
  s.eps = 1e-8, s.lr = 3e-3, s.decay = 3e-4;
  std::vector<float> mw(n), vw(n), xw(n);
  std::vector<double> tw(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double g = mul(s.clip_scale, grad[i]);
    mw[i] = static_cast<float>(add(mul(s.beta1, m0[i]), mul(1.0 - s.beta1, g)));
    vw[i] = static_cast<float>(add(mul(s.beta2, v0[i]), mul(mul(1.0 - s.beta2, g), g)));
    const double vh = double(vw[i]) / s.bc2;
    tw[i] = mul(g, g) / std::max(vh, mul(s.eps, s.eps));
    const double xi = x0[i];
    xw[i] = static_cast<float>(add(add(xi, -mul(s.decay, xi)),
                                   -(mul(s.lr, double(mw[i]) / s.bc1) / add(std::sqrt(double(vw[i]) / s.bc2), s.eps))));
  }
  using Moments = void (*)(const float*, float*, float*, double*, std::size_t, const detail::AdamScalars&);
  using Update = void (*)(float*, const float*, const float*, std::size_t, const detail::AdamScalars&);
  std::vector<std::tuple<const char*, Moments, Update>> copies = {
      {"baseline", detail::adam_moments_f32, detail::adam_update_f32}};
  if (isa_available(Isa::avx512)) copies.emplace_back("avx512", detail::adam_moments_f32_avx512, detail::adam_update_f32_avx512);
  for (const auto& [what, moments, update] : copies) {
    std::vector<float> m = m0, v = v0, x = x0;
    std::vector<double> t(n);
    moments(grad.data(), m.data(), v.data(), t.data(), n, s);
    update(x.data(), m.data(), v.data(), n, s);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(m[i], mw[i]) << what << " m[" << i << "]";
      ASSERT_EQ(v[i], vw[i]) << what << " v[" << i << "]";
      ASSERT_EQ(t[i], tw[i]) << what << " term[" << i << "]";
      ASSERT_EQ(x[i], xw[i]) << what << " x[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace lowp::train
