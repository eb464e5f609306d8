// Static activation and KV scales (act.scale / attn.scale = static, docs/recipes.md): the
// calibrated amax and percentile against a float64 computation over the calibration text,
// evaluation using the calibration text's scales (not the evaluated text's), the recipe keys,
// and the cache beside weights.calibrate's. The decoder with static scales: test_llama_decode.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "llama_test_util.hpp"
#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"

namespace {

namespace fs = std::filesystem;
using namespace lowp::accuracy;
using namespace lowp::test;

// Tokens in [lo, hi) only: calibration and evaluation texts that share no token.
std::vector<int> tokens_in(std::size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<int> t(n);
  for (int& x : t) x = lo + static_cast<int>(gen() % static_cast<unsigned>(hi - lo));
  return t;
}

std::shared_ptr<CalibrationText> calib_text(std::vector<int> tokens, const std::string& cache = "") {
  auto t = std::make_shared<CalibrationText>();
  t->tokens = std::move(tokens);
  t->ctx = 16;
  t->model_id = "static scales test model";
  t->cache_dir = cache;
  return t;
}

// Layer 0's q/k/v input, rmsnorm(embedding[t]) * attn_norm, in float64 for every calibration
// token (no quantization point comes before it, and it does not depend on the position).
std::vector<double> layer0_attn_input(const LlamaModel& m, const std::vector<int>& tokens) {
  const std::size_t dim = static_cast<std::size_t>(m.config.dim);
  std::vector<double> out;
  for (int t : tokens) {
    const float* e = m.token_embedding.data() + static_cast<std::size_t>(t) * dim;
    double ss = 0;
    for (std::size_t j = 0; j < dim; ++j) ss += static_cast<double>(e[j]) * e[j];
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(dim) + m.config.norm_eps);
    for (std::size_t j = 0; j < dim; ++j) out.push_back(std::fabs(e[j] * r * m.layers[0].attn_norm[j]));
  }
  return out;
}

// Nearest rank: the value of ascending rank ceil(p n / 100) (1-based).
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()) / 100.0 - 1e-9));
  return v[rank - 1];
}

Recipe parse(const std::string& body) { return parse_recipe("name = static-test\n" + body); }

// lowp's rmsnorm sums the squares in double and rounds the scale and the two products to
// float32: each element within 3 u (u = 2^-24) relative of the float64 value. An order
// statistic moves by at most the largest element error, so both figures agree to 3 u x amax;
// 4 u x amax allows the float64 side's own rounding.
TEST(StaticScales, AmaxAndPercentileOfTheCalibrationActivations) {
  const LlamaModel m = make_model(gqa_config(), 21);
  const auto text = calib_text(tokens_in(40, 0, 20, 3));
  const std::vector<double> x = layer0_attn_input(m, text->tokens);
  const double amax = *std::max_element(x.begin(), x.end()), tol = 4 * std::ldexp(amax, -24);
  const auto amax_scales = static_scales(m, parse("act = e4m3\nact.scale = static\n"), *text, 1);
  // Unfused q, k and v (float32 weights): one point each, the same input; every linear inside
  // the two layers, not the classifier (act = covers the layers only), no attention point.
  EXPECT_EQ(amax_scales.size(), 14u);
  for (const char* p : {"0.x.wq", "0.x.wk", "0.x.wv"}) {
    ASSERT_TRUE(amax_scales.count(p)) << p;
    EXPECT_NEAR(amax_scales.at(p), amax, tol) << p;
  }
  EXPECT_FALSE(amax_scales.count("-1.x.classifier"));
  const double p90 = percentile(x, 90), p99 = percentile(x, 99.9);
  EXPECT_LT(p90, amax * 0.9) << "the percentile must differ from the amax for the test to see it";
  EXPECT_NEAR(static_scales(m, parse("act = e4m3\nact.scale = static:p90\n"), *text, 1).at("0.x.wq"), p90, tol);
  EXPECT_NEAR(static_scales(m, parse("act = e4m3\nact.scale = static:p99.9\n"), *text, 1).at("0.x.wq"), p99, tol);
  // attn.scale: fp8-attn's Q, K, V per layer; NVFP4's tensor level under act.scale.
  Recipe attn = find_recipe("fp8-attn");
  attn.attn_scale.fixed = true;
  const auto a = static_scales(m, attn, *text, 1);
  EXPECT_EQ(a.size(), 6u);
  for (const char* p : {"0.q", "0.k", "0.v", "1.q", "1.k", "1.v"}) EXPECT_GT(a.count(p) ? a.at(p) : 0.0f, 0.0f) << p;
  Recipe nv = find_recipe("nvfp4");
  nv.act_scale.fixed = true;
  EXPECT_NEAR(static_scales(m, nv, *text, 1).at("0.x.wq"), amax, tol) << "nvfp4's tensor amax";
}

// evaluate() quantizes with the calibration text's scales: calibrating on the evaluated text
// itself (the mutant: scales from the window) gives other logits, and so does the dynamic recipe.
TEST(StaticScales, EvaluationUsesTheCalibrationTextsScales) {
  const LlamaModel m = make_model(gqa_config(), 22);
  const std::vector<int> calib = tokens_in(40, 0, 20, 4), eval = tokens_in(24, 20, 40, 5);
  const auto run = [&](const Recipe& r, std::vector<int> c) {
    EvalOptions opt;
    opt.keep_logits = true;
    opt.score_all = true;
    opt.threads = 1;
    if (!c.empty()) opt.calib = calib_text(std::move(c));
    return evaluate(m, eval, r, opt).logits;
  };
  Recipe r = find_recipe("fp8-tensorwise");
  const std::vector<float> dynamic = run(r, {});
  r.act_scale.fixed = true;
  const std::vector<float> from_calib = run(r, calib), from_eval = run(r, eval);
  EXPECT_NE(from_calib, from_eval);
  EXPECT_NE(from_calib, dynamic);
  EXPECT_EQ(from_calib, run(r, calib)) << "deterministic";
  try {
    run(r, {});
    ADD_FAILURE() << "a static recipe without calibration text";
  } catch (const lowp::Error& e) {
    EXPECT_STREQ(e.what(), "recipe 'fp8-tensorwise': act.scale = static:amax needs calibration text (--calib FILE)");
  }
}

TEST(StaticScales, RecipeKeys) {
  const Recipe r = parse("act.scale = static:p99.99\nattn.scale = static\n");
  EXPECT_TRUE(r.act_scale.fixed);
  EXPECT_EQ(r.act_scale.percentile_e4, 999900u);
  EXPECT_EQ(r.attn_scale.percentile_e4, 1000000u);
  EXPECT_EQ(scale_source_text(r.act_scale), "static:p99.99");
  EXPECT_EQ(to_text(parse_recipe(to_text(r))), to_text(r));
  EXPECT_NE(to_text(r).find("attn.scale = static:amax\n"), std::string::npos);
  EXPECT_EQ(parse("act.scale = static:p100\n").act_scale, parse("act.scale = static:amax\n").act_scale);
  EXPECT_FALSE(parse("act.scale = dynamic\n").act_scale.fixed);
  EXPECT_EQ(to_text(find_recipe("fp8-tensorwise")).find("scale"), std::string::npos) << "dynamic is not written";
  for (const char* bad : {"static:p0", "static:p100.01", "static:p99.99999", "static:p", "static:p9x", "static:max",
                          "fixed", "static:p.5", "static:p5."})
    EXPECT_THROW(parse(std::string("act.scale = ") + bad + "\n"), lowp::Error) << bad;
  EXPECT_THROW(parse("layer.0.act.scale = static\n"), lowp::Error);
}

// The scales are cached beside weights.calibrate's results: a second run reads the file (it
// is not rewritten) and gives the same bits; another calibration text is another entry.
TEST(StaticScales, CacheRoundTripAndMiss) {
  const LlamaModel m = make_model(gqa_config(), 23);
  const fs::path dir = fs::temp_directory_path() / ("lowp_static_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Recipe r = find_recipe("fp8-attn");
  r.attn_scale.fixed = true;
  const std::vector<int> calib = tokens_in(40, 0, 20, 6);
  const auto computed = static_scales(m, r, *calib_text(calib), 1);
  const auto written = static_scales(m, r, *calib_text(calib, dir.string()), 1);
  EXPECT_EQ(written, computed);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  struct stat before {};
  ASSERT_EQ(::stat(files[0].c_str(), &before), 0);
  EXPECT_EQ(static_scales(m, r, *calib_text(calib, dir.string()), 2), computed) << "from the cache";
  struct stat after {};
  ASSERT_EQ(::stat(files[0].c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "the entry was recomputed and rewritten, not read";
  const std::vector<int> other = tokens_in(40, 20, 40, 7);  // no token in common: other amaxes
  const auto changed = static_scales(m, r, *calib_text(other, dir.string()), 1);
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".lowpcal";
  EXPECT_EQ(n, 2u) << "another calibration text is another entry";
  EXPECT_NE(changed, computed);
  fs::remove_all(dir);
}

}  // namespace
