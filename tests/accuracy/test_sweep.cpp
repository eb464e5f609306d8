// The tensor sweep (data, passes, errors) and the model sweep, checked against oracles
// written here: the distributions' known moments, bfloat16 rounding by bit manipulation,
// integer rounding in double, the uniform-rounding-noise model of a float format, and a
// model sweep on a small random model whose fp32 recipe must give KLD exactly 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lowp/accuracy/model_sweep.hpp"
#include "lowp/accuracy/tensor_sweep.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using lowp::test::expect_error;

struct Moments {
  double mean = 0, var = 0, kurtosis = 0, tail3 = 0;  // tail3: fraction with |x| > 3
};

Moments moments(const std::vector<float>& x) {
  Moments m;
  long double s = 0, s2 = 0, s4 = 0;
  std::size_t tail = 0;
  for (float v : x) s += v;
  const long double mean = s / x.size();
  for (float v : x) {
    const long double d = v - mean;
    s2 += d * d;
    s4 += d * d * d * d;
    tail += std::fabs(v) > 3;
  }
  m.mean = static_cast<double>(mean);
  m.var = static_cast<double>(s2 / x.size());
  m.kurtosis = static_cast<double>(s4 / x.size() / (m.var * m.var));
  m.tail3 = static_cast<double>(tail) / static_cast<double>(x.size());
  return m;
}

TEST(SweepData, DistributionsHaveTheirKnownMoments) {
  const std::size_t rows = 256, cols = 1024;  // 262144 samples
  const Moments g = moments(generate_distribution(Distribution::gaussian, rows, cols, 3));
  EXPECT_NEAR(g.mean, 0.0, 0.01);
  EXPECT_NEAR(g.var, 1.0, 0.01);
  EXPECT_NEAR(g.kurtosis, 3.0, 0.05);
  EXPECT_NEAR(g.tail3, 0.0027, 0.0005);  // 2 (1 - Phi(3))
  const Moments l = moments(generate_distribution(Distribution::laplace, rows, cols, 3));
  EXPECT_NEAR(l.mean, 0.0, 0.01);
  EXPECT_NEAR(l.var, 1.0, 0.02);
  EXPECT_NEAR(l.kurtosis, 6.0, 0.3);
  EXPECT_NEAR(l.tail3, std::exp(-3 * std::sqrt(2.0)), 0.001);  // exp(-3 / b), b = 1/sqrt(2)
  // Student-t, nu = 3: P(|T| > 3) = 0.05767 (variance 3 but the fourth moment is infinite).
  const Moments t = moments(generate_distribution(Distribution::student_t3, rows, cols, 3));
  EXPECT_NEAR(t.mean, 0.0, 0.02);
  EXPECT_NEAR(t.tail3, 0.05767, 0.002);
  EXPECT_NEAR(t.var, 3.0, 0.5);
}

TEST(SweepData, LlmActivationsHaveAFewChannels100xLarger) {
  const std::size_t rows = 64, cols = 4096;
  const auto ch = outlier_channels(cols, 9);
  ASSERT_EQ(ch.size(), 8u);
  EXPECT_TRUE(std::is_sorted(ch.begin(), ch.end()));
  EXPECT_EQ(std::adjacent_find(ch.begin(), ch.end()), ch.end());
  EXPECT_EQ(outlier_channels(256, 9).size(), 1u);
  const auto x = generate_distribution(Distribution::llm_activations, rows, cols, 9);
  const auto base = generate_distribution(Distribution::gaussian, rows, cols, 9);
  for (std::size_t c = 0; c < cols; ++c) {
    const bool outlier = std::binary_search(ch.begin(), ch.end(), c);
    for (std::size_t r = 0; r < rows; ++r) {
      const float want = outlier ? static_cast<float>(100.0 * base[r * cols + c]) : base[r * cols + c];
      ASSERT_EQ(x[r * cols + c], want) << r << "," << c;
    }
  }
}

TEST(SweepData, DeterministicFromTheSeed) {
  for (auto d : all_distributions()) {
    const auto a = generate_distribution(d, 8, 64, 5), b = generate_distribution(d, 8, 64, 5);
    const auto c = generate_distribution(d, 8, 64, 6);
    EXPECT_EQ(a, b) << distribution_name(d);
    EXPECT_NE(a, c) << distribution_name(d);
    // Element i depends on the index only, not on the shape.
    const auto flat = generate_distribution(d, 1, 512, 5);
    if (d != Distribution::llm_activations) {
      EXPECT_EQ(a, flat) << distribution_name(d);
    }
  }
  EXPECT_EQ(parse_distribution("student_t3"), Distribution::student_t3);
  expect_error([] { parse_distribution("cauchy"); }, {"unknown distribution 'cauchy'", "gaussian", "llm_activations"});
  expect_error([] { generate_distribution(Distribution::gaussian, 0, 4, 1); }, {"empty shape 0 x 4"});
}

// Round to nearest even at bfloat16 (finite inputs).
float to_bf16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return std::bit_cast<float>(r);
}

struct Err {
  long double signal = 0, noise = 0, max = 0;
  double sqnr() const { return static_cast<double>(10 * std::log10(signal / noise)); }
  double mse(std::size_t n) const { return static_cast<double>(noise / n); }
};

TensorSweepOptions small(const std::vector<std::string>& specs, Distribution d,
                         std::vector<SweepRotation> rots = {SweepRotation::none}) {
  TensorSweepOptions o;
  o.rows = 64;
  o.cols = 1024;
  o.seed = 7;
  o.specs = specs;
  o.distributions = {d};
  o.rotations = std::move(rots);
  return o;
}

TEST(TensorSweep, Bf16PassMatchesBitLevelRounding) {
  const auto opt = small({"bf16"}, Distribution::laplace);
  const auto rows = run_tensor_sweep(opt);
  ASSERT_EQ(rows.size(), 1u);
  const auto x = generate_distribution(Distribution::laplace, opt.rows, opt.cols, opt.seed);
  Err e;
  for (float v : x) {
    const long double d = static_cast<long double>(to_bf16(v)) - v;
    e.signal += static_cast<long double>(v) * v;
    e.noise += d * d;
    e.max = std::max(e.max, std::fabs(d));
  }
  EXPECT_NEAR(rows[0].sqnr_db, e.sqnr(), 1e-9);
  EXPECT_NEAR(rows[0].mse, e.mse(x.size()), 1e-12 * e.mse(x.size()));
  EXPECT_EQ(rows[0].max_abs_error, static_cast<double>(e.max));
  EXPECT_EQ(rows[0].bits_per_element, 16.0);
  EXPECT_EQ(rows[0].format, "bfloat16");
  EXPECT_EQ(rows[0].scale, "none");
  EXPECT_EQ(rows[0].nonfinite, 0u);
}

TEST(TensorSweep, Int8RowPassMatchesAbsmaxRounding) {
  // SwitchBack / LLM.int8(): q = round(x * 127 / absmax(row)), x' = q * absmax / 127.
  const auto opt = small({"int8:row"}, Distribution::student_t3);
  const auto rows = run_tensor_sweep(opt);
  ASSERT_EQ(rows.size(), 1u);
  const auto x = generate_distribution(Distribution::student_t3, opt.rows, opt.cols, opt.seed);
  Err e;
  for (std::size_t r = 0; r < opt.rows; ++r) {
    double amax = 0;
    for (std::size_t c = 0; c < opt.cols; ++c) amax = std::max(amax, std::fabs(static_cast<double>(x[r * opt.cols + c])));
    for (std::size_t c = 0; c < opt.cols; ++c) {
      const double v = x[r * opt.cols + c];
      const double q = std::nearbyint(v * 127.0 / amax) * amax / 127.0;
      e.signal += v * v;
      e.noise += (q - v) * (q - v);
    }
  }
  // The library rounds in float32 arithmetic; ties and last-bit differences move the SQNR by
  // far less than 0.01 dB.
  EXPECT_NEAR(rows[0].sqnr_db, e.sqnr(), 0.01);
  EXPECT_NEAR(rows[0].bits_per_element, 8.0 + 32.0 / 1024, 1e-12);  // a float32 scale per row
}

TEST(TensorSweep, E4m3TensorPassFollowsTheUniformNoiseModel) {
  // With amax mapped to 448, Gaussian data sit in E4M3's normal range, where rounding to
  // nearest leaves an error uniform over one step 2^(floor(log2|y|) - 3): the expected noise
  // is sum step^2 / 12 (in the data's scale). An independent, statistical oracle.
  const auto opt = small({"e4m3:tensor"}, Distribution::gaussian);
  const auto rows = run_tensor_sweep(opt);
  const auto x = generate_distribution(Distribution::gaussian, opt.rows, opt.cols, opt.seed);
  double amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(static_cast<double>(v)));
  const double s = 448.0 / amax;
  long double signal = 0, noise = 0;
  for (float v : x) {
    const double y = std::fabs(v * s);
    const double step = y >= 0x1p-6 ? std::ldexp(1.0, std::ilogb(y) - 3) : 0x1p-9;
    signal += static_cast<long double>(v) * v;
    noise += step * step / 12 / (s * s);
  }
  const double model_db = static_cast<double>(10 * std::log10(signal / noise));
  EXPECT_NEAR(rows[0].sqnr_db, model_db, 0.15) << "model " << model_db;
  EXPECT_GT(rows[0].sqnr_db, 30.0);
}

TEST(TensorSweep, RotationsAreAppliedAndUndone) {
  // float32 "quantization" is exact: without rotation the pass has no error; with one, only
  // the float rounding of rotating and rotating back (far below any format's error).
  const auto opt = small({"fp32"}, Distribution::llm_activations, {SweepRotation::none, SweepRotation::hadamard,
                                                                     SweepRotation::block32});
  const auto rows = run_tensor_sweep(opt);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].rotation, "none");
  EXPECT_TRUE(std::isinf(rows[0].sqnr_db));
  EXPECT_EQ(rows[0].mse, 0.0);
  EXPECT_EQ(rows[0].max_abs_error, 0.0);
  for (int k : {1, 2}) {
    EXPECT_GT(rows[k].sqnr_db, 120.0) << rows[k].rotation;
    EXPECT_GT(rows[k].mse, 0.0) << rows[k].rotation;
  }
  // bf16 on outlier channels: the rotation spreads each outlier over the row, so the largest
  // error (an outlier's rounding, ~2^-9 x 100 sigma) shrinks.
  const auto bf = run_tensor_sweep(small({"bf16"}, Distribution::llm_activations,
                                         {SweepRotation::none, SweepRotation::hadamard}));
  EXPECT_LT(bf[1].max_abs_error, bf[0].max_abs_error / 4);
}

TEST(TensorSweep, HadamardRescuesPerRowInt8OnOutlierChannels) {
  // The QuaRot observation: with a few channels 100x larger, a per-row int8 scale wastes
  // most codes; the rotated rows are Gaussian-like and lose far less.
  const auto rows = run_tensor_sweep(small({"int8:row"}, Distribution::llm_activations,
                                           {SweepRotation::none, SweepRotation::hadamard}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_GT(rows[1].sqnr_db, rows[0].sqnr_db + 10) << rows[0].sqnr_db << " vs " << rows[1].sqnr_db;
}

TEST(TensorSweep, BitsPerElementCountTheScales) {
  auto opt = small({"mxfp8", "mxfp4", "nvfp4", "e4m3:tensor", "e2m1:b16", "fp16:none"}, Distribution::gaussian);
  const auto rows = run_tensor_sweep(opt);
  std::map<std::string, double> bits;
  for (const auto& r : rows) bits[r.spec] = r.bits_per_element;
  const double n = 64.0 * 1024;
  EXPECT_DOUBLE_EQ(bits["mxfp8"], 8.25);             // E8M0 per 32
  EXPECT_DOUBLE_EQ(bits["mxfp4"], 4.25);
  EXPECT_DOUBLE_EQ(bits["nvfp4"], 4.5 + 32 / n);     // UE4M3 per 16 + a float32 per tensor
  EXPECT_DOUBLE_EQ(bits["e4m3:tensor"], 8 + 32 / n);
  EXPECT_DOUBLE_EQ(bits["e2m1:b16"], 6.0);           // float32 per 16
  EXPECT_DOUBLE_EQ(bits["fp16:none"], 16.0);          // unscaled: no scale stored
}

TEST(TensorSweep, OrderCountAndDeterminism) {
  TensorSweepOptions opt;
  opt.rows = 8;
  opt.cols = 256;
  opt.seed = 3;
  std::size_t calls = 0, last_total = 0;
  opt.progress = [&](std::size_t done, std::size_t total) {
    EXPECT_EQ(done, ++calls);
    last_total = total;
  };
  const auto a = run_tensor_sweep(opt);
  const std::size_t specs = default_tensor_sweep_specs().size();
  ASSERT_EQ(a.size(), 4 * specs * 3);
  EXPECT_EQ(calls, a.size());
  EXPECT_EQ(last_total, a.size());
  EXPECT_EQ(a[0].distribution, "gaussian");
  EXPECT_EQ(a[0].spec, default_tensor_sweep_specs()[0]);
  EXPECT_EQ(a[1].rotation, "hadamard");
  EXPECT_EQ(a[3].spec, default_tensor_sweep_specs()[1]);
  EXPECT_EQ(a.back().distribution, "llm_activations");
  opt.progress = nullptr;
  const auto b = run_tensor_sweep(opt);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(a[i].sqnr_db), std::bit_cast<std::uint64_t>(b[i].sqnr_db)) << i;
    EXPECT_EQ(a[i].max_abs_error, b[i].max_abs_error) << i;
  }
  // Every default format is there, and no pass produced NaN or Inf.
  for (const auto& r : a) EXPECT_EQ(r.nonfinite, 0u) << r.distribution << " " << r.spec << " " << r.rotation;
  for (const char* f : {"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float6_e2m3fn",
                        "float6_e3m2fn", "float4_e2m1fn", "bfloat16", "float16", "int8", "int4"})
    EXPECT_TRUE(std::any_of(a.begin(), a.end(), [&](const auto& r) { return r.format == f; })) << f;
}

TEST(TensorSweep, BadOptionsAreRefusedBeforeAnyPass) {
  TensorSweepOptions opt;
  opt.rows = 4;
  opt.cols = 100;
  opt.specs = {"e4m3:tensor", "nope"};
  expect_error([&] { run_tensor_sweep(opt); }, {"'nope'"});
  opt.specs = {"mxfp4"};  // 100 columns: no 32-blocks
  expect_error([&] { run_tensor_sweep(opt); }, {"100", "32"});
  opt.cols = 6;  // no Hadamard matrix of order 6
  opt.specs = {"e4m3:tensor"};
  opt.rotations = {SweepRotation::hadamard};
  expect_error([&] { run_tensor_sweep(opt); }, {"rotation hadamard on rows of 6"});
  opt.rows = 0;
  expect_error([&] { run_tensor_sweep(opt); }, {"empty shape 0 x 6"});
  opt.rows = opt.cols = std::size_t{1} << 40;  // the product would overflow
  expect_error([&] { run_tensor_sweep(opt); }, {"exceeds the limit of 33554432 values"});
  EXPECT_EQ(parse_sweep_rotation("block32"), SweepRotation::block32);
  expect_error([] { parse_sweep_rotation("givens"); }, {"unknown rotation 'givens'", "none, hadamard, block32"});
}

// --- The model sweep on a small random model ---

LlamaModel tiny_model(float norm_gain) {
  LlamaModel m;
  auto& c = m.config;
  c.dim = 32;
  c.hidden_dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 48;
  c.seq_len = 32;
  lowp::test::SplitMix g{42};
  const auto fill = [&](std::size_t n, float scale) {
    std::vector<float> v(n);
    for (float& f : v) f = scale * static_cast<float>(static_cast<double>(g.next() >> 11) * 0x1.0p-53 * 2 - 1);
    return v;
  };
  const std::size_t d = 32, h = 64, kv = 16, V = 48;
  m.token_embedding = fill(V * d, 1.0f);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights w;
    w.attn_norm.assign(d, norm_gain);
    w.ffn_norm.assign(d, 1.0f);
    w.wq = fill(d * d, 0.3f);
    w.wk = fill(kv * d, 0.3f);
    w.wv = fill(kv * d, 0.3f);
    w.wo = fill(d * d, 0.3f);
    w.w_gate = fill(h * d, 0.3f);
    w.w_up = fill(h * d, 0.3f);
    w.w_down = fill(d * h, 0.2f);
    m.layers.push_back(std::move(w));
  }
  m.final_norm.assign(d, 1.0f);
  m.source = "test";
  validate(m);
  return m;
}

std::vector<int> tiny_tokens(std::size_t n) {
  lowp::test::SplitMix g{7};
  std::vector<int> t(n);
  for (int& x : t) x = static_cast<int>(g.next() % 48);
  return t;
}

TEST(ModelSweep, ReferenceIsExactSortedByKldFailuresRecorded) {
  const LlamaModel m = tiny_model(1.0f);
  const auto tokens = tiny_tokens(64);
  const std::vector<Recipe> recipes = {
      find_recipe("fp8-tensorwise"),
      parse_recipe("name = too-wide-block\nweights = e4m3:b1024\n"),  // 1024 > dim: an error
      find_recipe("bf16"),
      find_recipe("fp32"),
  };
  EvalOptions opt;
  opt.ctx = 16;
  std::vector<double> fractions;
  const ModelSweep s = run_model_sweep(m, tokens, recipes, opt, [&](std::string_view, double f) { fractions.push_back(f); });
  EXPECT_EQ(s.tokens, 64u);
  EXPECT_EQ(s.ctx, 16);
  // llama.cpp's convention: in each of the 4 windows of 16, the logits at positions 8..14
  // predict tokens 9..15.
  EXPECT_EQ(s.scored, 4u * 7);
  ASSERT_EQ(s.results.size(), 4u);
  EXPECT_EQ(s.results[0].recipe, "fp32");
  EXPECT_EQ(s.results[0].cmp.kld_mean, 0.0);
  EXPECT_EQ(s.results[0].cmp.kld_max, 0.0);
  EXPECT_EQ(s.results[0].cmp.same_top1, 100.0);
  EXPECT_EQ(s.results[0].cmp.ppl, s.ref_ppl);
  EXPECT_EQ(s.results[1].recipe, "bf16");
  EXPECT_EQ(s.results[2].recipe, "fp8-tensorwise");
  EXPECT_GT(s.results[1].cmp.kld_mean, 0.0);
  EXPECT_LT(s.results[1].cmp.kld_mean, s.results[2].cmp.kld_mean);
  EXPECT_EQ(s.results[3].recipe, "too-wide-block");
  EXPECT_NE(s.results[3].error.find("1024"), std::string::npos) << s.results[3].error;
  EXPECT_FALSE(s.results[1].tensor_errors.empty());  // per-layer attribution comes along
  ASSERT_FALSE(fractions.empty());
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_EQ(fractions.back(), 1.0);
}

TEST(ModelSweep, NaNFromARecipeIsCountedNotACrash) {
  // RMSNorm gains of 1000 push the activation entering wq far past E4M3's 448; an unscaled,
  // non-saturating cast turns it into NaN.
  const LlamaModel m = tiny_model(1000.0f);
  const auto tokens = tiny_tokens(32);
  const std::vector<Recipe> recipes = {parse_recipe("name = overflow\nact.wq = e4m3:tensor:none:nosat\n"),
                                       find_recipe("bf16")};
  const ModelSweep s = run_model_sweep(m, tokens, recipes, {});
  ASSERT_EQ(s.results.size(), 2u);
  EXPECT_EQ(s.results[0].recipe, "bf16");
  const auto& r = s.results[1];
  EXPECT_EQ(r.recipe, "overflow");
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.cmp.nonfinite, r.cmp.tokens);
  EXPECT_GT(r.cmp.tokens, 0u);
  EXPECT_TRUE(std::isnan(r.cmp.kld_mean));
}

TEST(ModelSweep, BadTokensAreErrors) {
  const LlamaModel m = tiny_model(1.0f);
  const std::vector<Recipe> recipes = {find_recipe("bf16")};
  expect_error([&] { run_model_sweep(m, std::vector<int>{1, 2, 48}, recipes); }, {"48"});
  expect_error([&] { run_model_sweep(m, std::vector<int>{}, recipes); }, {"empty"});
}

}  // namespace
