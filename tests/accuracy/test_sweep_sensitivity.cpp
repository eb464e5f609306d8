// Per-tensor sensitivity and the mixed-precision search on a synthetic model with planted
// tensors: layer 1's down_proj weight has a few large outlier entries and layer 1's FFN input
// has outlier channels (RMSNorm gain x 100, undone in gate/up's columns), so per-tensor int4
// crushes them; layer 0's o_proj is scaled to near zero, so that layer's attention weights
// (wq, wk, wv, wo: all of its attention output goes through wo) hardly matter.
// Oracles: the planted ranking, an exhaustive search over a small knapsack, and a bit count
// of the storage written here from the format widths and the scale counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "llama_test_util.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/search.hpp"
#include "lowp/accuracy/sensitivity.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using lowp::test::expect_error;

LlamaModel planted_model() {
  LlamaConfig c = lowp::test::gqa_config();
  c.n_layers = 3;
  LlamaModel m = lowp::test::make_model(c, 7);
  const std::size_t dim = 64, hid = 96;
  // Layer 1: outlier weights in down_proj (one in 256 entries x 40).
  auto& down = m.layers[1].w_down;
  for (std::size_t i = 0; i < down.size(); i += 256) down[i] *= 40.0f;
  // Layer 1: outlier channels 5 and 17 in the FFN input (the gain x 100, gate/up columns / 100).
  for (const std::size_t ch : {std::size_t{5}, std::size_t{17}}) {
    m.layers[1].ffn_norm[ch] *= 100.0f;
    for (std::size_t r = 0; r < hid; ++r) {
      m.layers[1].w_gate[r * dim + ch] /= 100.0f;
      m.layers[1].w_up[r * dim + ch] /= 100.0f;
    }
  }
  // Layer 0: a near-zero o_proj.
  for (float& w : m.layers[0].wo) w *= 1e-3f;
  return m;
}

const SensitivityRow& row(const Sensitivity& s, int layer, const std::string& tensor, const std::string& spec) {
  for (const auto& r : s.rows)
    if (r.t.layer == layer && r.t.tensor == tensor && r.spec == spec) return r;
  throw std::runtime_error("no row " + tensor);
}

// The weight spec a recipe puts on a tensor, as text.
std::string quant_text(const Recipe& r, const SensitivityTensor& t) {
  for (std::size_t k = 0; k < linear_kind_count; ++k)
    if (t.tensor == "weights." + std::string(linear_kind_name(static_cast<LinearKind>(k)))) {
      const LayerSpecs specs = r.specs_at(t.layer);
      return specs.weights[k] ? lowp::quant::describe(*specs.weights[k]) : "-";
    }
  return "?";
}

// Storage bits counted here: element bits from the format's width, one float32 scale per
// tensor (per-tensor amax) or per block of 32 along each row.
std::uint64_t count_bits(const std::string& spec, std::size_t rows, std::size_t cols) {
  const std::uint64_t n = static_cast<std::uint64_t>(rows) * cols;
  const std::uint64_t elem = spec.starts_with("int4") ? 4 : 8;
  const std::uint64_t scales = spec.ends_with(":b32") ? rows * ((cols + 31) / 32) : 1;
  return n * elem + 32 * scales;
}

TEST(Sensitivity, PerLayerRecipeKeysQuantizeOneLayerOnly) {
  const LlamaModel m = lowp::test::small_model(3);
  const Recipe r = parse_recipe("name = one\nlayer.1.weights.wq = int4\nlayer.0.kv = e4m3\nweights.classifier = int8\n");
  EXPECT_EQ(parse_recipe(to_text(r)).layer.size(), 2u);
  EXPECT_EQ(to_text(parse_recipe(to_text(r))), to_text(r));
  const auto tokens = lowp::test::random_tokens(24, m.config.vocab_size, 5);
  const EvalRun run = evaluate(m, tokens, r);
  std::vector<std::string> seen;
  for (const auto& e : run.tensor_errors) seen.push_back(std::to_string(e.layer) + ":" + e.point);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"-1:classifier", "0:kv.k", "0:kv.v", "1:wq"}));
  expect_error([] { parse_recipe("name = x\nlayer.1.weights.classifier = int4\n"); }, {"classifier is in no layer"});
  expect_error([] { parse_recipe("name = x\nlayer.a.kv = int4\n"); }, {"layer.<N>.<key>"});
  expect_error([&] { evaluate(m, tokens, parse_recipe("name = x\nlayer.2.kv = int4\n")); }, {"layer.2", "2 layers"});
}

TEST(Sensitivity, RanksThePlantedTensors) {
  const LlamaModel m = planted_model();
  const auto tokens = lowp::test::random_tokens(40, m.config.vocab_size, 11);
  EvalOptions opt;
  opt.ctx = 40;
  opt.score_all = true;
  const std::vector<std::string> specs = {"int4"};
  const Sensitivity s = run_sensitivity(m, tokens, specs, opt);
  ASSERT_EQ(s.rows.size(), sensitivity_tensors(m.config).size());
  EXPECT_EQ(s.rows.size(), 3u * 19 + 2);
  double top_w = -1, top_a = -1;
  std::string top_w_key, top_a_key;
  std::vector<std::pair<double, std::string>> weights;
  for (const auto& r : s.rows) {
    ASSERT_TRUE(r.error.empty()) << r.t.key() << ": " << r.error;
    EXPECT_GE(r.kld, 0) << r.t.key();
    if (r.t.kind == "weight" && r.kld > top_w) top_w = r.kld, top_w_key = r.t.key();
    if (r.t.kind == "weight") weights.emplace_back(r.kld, r.t.key());
    if (r.t.kind == "act" && r.kld > top_a) top_a = r.kld, top_a_key = r.t.key();
  }
  EXPECT_EQ(top_w_key, "layer.1.weights.down");
  EXPECT_TRUE(top_a_key == "layer.1.act.gate" || top_a_key == "layer.1.act.up") << top_a_key;
  std::sort(weights.begin(), weights.end());
  std::vector<std::string> least;
  for (std::size_t i = 0; i < 4; ++i) least.push_back(weights[i].second);
  std::sort(least.begin(), least.end());
  EXPECT_EQ(least, (std::vector<std::string>{"layer.0.weights.wk", "layer.0.weights.wo", "layer.0.weights.wq",
                                              "layer.0.weights.wv"}));
  EXPECT_LT(weights[3].first * 100, weights[4].first);  // by far
  // Each row is the run of that tensor alone: the same as evaluating its recipe directly.
  const Recipe one = with_tensor(parse_recipe("name = fp32\n"), sensitivity_tensors(m.config)[6], "int4", "down0");
  const Comparison c = compare(evaluate(m, tokens, parse_recipe("name = fp32\n"), opt), evaluate(m, tokens, one, opt));
  EXPECT_EQ(c.kld_mean, row(s, 0, "weights.down", "int4").kld);
  expect_error([&] { run_sensitivity(m, tokens, std::vector<std::string>{"int4", "nope"}, opt); }, {"nope"});
}

TEST(Search, SolverMatchesExhaustiveSearch) {
  // 6 tensors x 3 options with unrelated costs and values: every budget against all 729 choices.
  std::vector<SearchTensor> ts;
  std::uint32_t x = 12345;
  const auto next = [&] { return x = x * 1103515245u + 12345u, (x >> 8) % 1000; };
  for (int i = 0; i < 6; ++i) {
    SearchTensor t;
    t.t.layer = i;
    t.t.tensor = "weights.wq";
    t.t.rows = 8 + i;
    t.t.cols = 16;
    for (int j = 0; j < 3; ++j) t.options.push_back({std::string(1, static_cast<char>('a' + j)), 400 + next() * 7, next() / 100.0});
    ts.push_back(t);
  }
  std::uint64_t weights = 0;
  for (const auto& t : ts) weights += t.t.rows * t.t.cols;
  for (double budget = 2.0; budget < 60; budget += 1.37) {
    double best = INFINITY;
    for (int code = 0; code < 729; ++code) {
      std::uint64_t bits = 0;
      double v = 0;
      for (int i = 0, c = code; i < 6; ++i, c /= 3) bits += ts[i].options[c % 3].bits, v += ts[i].options[c % 3].kld;
      // The budget's stated tolerance: one float32 word per tensor (search.hpp).
      if (static_cast<double>(bits) <= budget * static_cast<double>(weights) + 32 * 6) best = std::min(best, v);
    }
    if (!std::isfinite(best)) {
      expect_error([&] { solve_search(ts, budget, 0); }, {"below the cheapest"});
      continue;
    }
    const SearchPlan p = solve_search(ts, budget, 0.5);
    EXPECT_TRUE(p.exact);
    EXPECT_NEAR(p.predicted, 0.5 + best, 1e-12) << budget;
    EXPECT_LE(static_cast<double>(p.bits), budget * static_cast<double>(weights) + 32 * 6);
  }
}

// nvfp4 costs 4.5 bits per weight plus its float32 tensor scale: a menu of it meets --budget
// 4.5 within the stated tolerance of 32 bits per tensor, and 33 bits more per tensor do not.
TEST(Search, BudgetToleranceIsOneFloat32WordPerTensor) {
  std::vector<SearchTensor> ts;
  for (const std::size_t rows : {64, 172}) {
    SearchTensor t;
    t.t.layer = 0;
    t.t.tensor = rows == 64 ? "weights.wq" : "weights.up";
    t.t.rows = rows;
    t.t.cols = 64;
    // 4.5 x rows x 64 element-and-block-scale bits + one float32 tensor scale.
    t.options.push_back({"nvfp4", weight_bits(lowp::quant::parse_quant_spec("nvfp4"), rows, 64), 1.0});
    EXPECT_EQ(t.options[0].bits, 9 * rows * 32 + 32);
    ts.push_back(t);
  }
  const SearchPlan p = solve_search(ts, 4.5, 0);
  EXPECT_GT(p.bits_per_weight(), 4.5);
  EXPECT_EQ(p.bits, 9u * (64 + 172) * 32 + 64);
  for (auto& t : ts) t.options[0].bits += 33;
  expect_error([&] { solve_search(ts, 4.5, 0); }, {"below the cheapest menu choice"});
}

TEST(Search, KeepsTheSensitiveTensorHighAndMeetsTheBudget) {
  const LlamaModel m = planted_model();
  const auto tokens = lowp::test::random_tokens(40, m.config.vocab_size, 11);
  EvalOptions opt;
  opt.ctx = 40;
  opt.score_all = true;
  const std::vector<std::string> menu = {"int4", "int4:b32", "int8"};
  const Sensitivity s = run_sensitivity(m, tokens, menu, opt, {}, nullptr, nullptr, true);
  const auto tensors = search_options(s);
  ASSERT_EQ(tensors.size(), 3u * 7 + 1);
  std::uint64_t weights = 0;
  for (const auto& t : tensors) weights += t.t.rows * t.t.cols;
  for (const double budget : {4.3, 4.6, 5.5, 7.0, 7.9}) {
    const SearchPlan p = solve_search(tensors, budget, 0);
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      const std::string& spec = t.options[p.choice[i]].spec;
      bits += count_bits(spec, t.t.rows, t.t.cols);
      if (t.t.key() == "layer.1.weights.down") {  // int4:b32 isolates its outliers in their blocks too
        EXPECT_NE(spec, "int4") << budget;
      }
      if (budget <= 7.0 && t.t.layer == 0 && t.t.tensor != "weights.gate" && t.t.tensor != "weights.up" &&
          t.t.tensor != "weights.down") {
        EXPECT_TRUE(spec.starts_with("int4")) << t.t.key() << " " << spec << " " << budget;
      }
    }
    EXPECT_EQ(bits, p.bits) << budget;
    EXPECT_EQ(weights, p.weights);
    EXPECT_LE(static_cast<double>(bits), budget * static_cast<double>(weights) + 32.0 * tensors.size()) << budget;
    // The recipe it writes quantizes exactly those tensors with those specs.
    const Recipe r = search_recipe(tensors, p, parse_recipe("name = fp32\n"), "searched");
    const Recipe back = parse_recipe(to_text(r));
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      const std::string spec = quant_text(back, t.t);
      EXPECT_EQ(spec, lowp::quant::describe(lowp::quant::parse_quant_spec(t.options[p.choice[i]].spec))) << t.t.key();
    }
  }
  // The menu without the block spec: the sensitive tensor gets int8 at every budget.
  std::vector<SearchTensor> two = tensors;
  for (auto& t : two) std::erase_if(t.options, [](const SearchOption& o) { return o.spec == "int4:b32"; });
  for (const double budget : {4.3, 4.6, 5.5, 7.0, 7.9}) {
    const SearchPlan p = solve_search(two, budget, 0);
    for (std::size_t i = 0; i < two.size(); ++i)
      if (two[i].t.key() == "layer.1.weights.down") {
        EXPECT_EQ(two[i].options[p.choice[i]].spec, "int8") << budget;
      }
  }
  expect_error([&] { solve_search(tensors, 3.9, 0); }, {"below the cheapest menu choice", "bits per weight"});
}

TEST(Search, ActivationsStayQuantizedUnderEveryChoice) {
  const LlamaModel m = planted_model();
  const auto tokens = lowp::test::random_tokens(24, m.config.vocab_size, 3);
  EvalOptions opt;
  opt.ctx = 24;
  const Recipe base = parse_recipe("name = acts\nact = e4m3:row\n");
  const std::vector<std::string> menu = {"int4", "int8"};
  const Sensitivity s = run_sensitivity(m, tokens, menu, opt, {}, nullptr, &base, true);
  EXPECT_EQ(s.base, "acts");
  EXPECT_GT(s.base_cmp.kld_mean, 0);
  const Comparison alone = compare(evaluate(m, tokens, parse_recipe("name = fp32\n"), opt), evaluate(m, tokens, base, opt));
  EXPECT_EQ(s.base_cmp.kld_mean, alone.kld_mean);
  for (const auto& r : s.rows) EXPECT_EQ(r.kld, r.cmp.kld_mean - s.base_cmp.kld_mean) << r.t.key();
  const auto tensors = search_options(s);
  const SearchPlan p = solve_search(tensors, 6, s.base_cmp.kld_mean);
  const Recipe r = search_recipe(tensors, p, base, "searched");
  for (int l = 0; l < m.config.n_layers; ++l)
    for (std::size_t k = 0; k < 7; ++k) {
      ASSERT_TRUE(r.specs_at(l).act[k]);
      EXPECT_EQ(lowp::quant::describe(*r.specs_at(l).act[k]), "float8_e4m3fn:row:amax:nearest:sat");
    }
}

}  // namespace
