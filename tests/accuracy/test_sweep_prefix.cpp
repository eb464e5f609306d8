// Sensitivity's prefix reuse (sweep/prefix_cache.hpp): each (tensor, spec) recipe runs from
// its tensor's layer on, from the base recipe's residual stream. The oracle is the sweep with
// no reuse, every recipe evaluated whole on every window (the path run_sensitivity took before
// the reuse, kept as SensitivityPlan::job(..., false)): every field of every row, of every
// recipe's result and per-layer errors, and the CSV and JSON bytes must be the same, for an
// fp32 base and for quantized bases (KV cache, weights, activations, QuaRot's rotations), at
// 1 and 2 threads, with llama.cpp-style base logits, and split across ranks as under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "eval/windows.hpp"
#include "llama_test_util.hpp"
#include "lowp/accuracy/memory.hpp"
#include "lowp/accuracy/sensitivity.hpp"
#include "sweep/prefix_cache.hpp"
#include "sweep/sensitivity_plan.hpp"
#include "sweep/split.hpp"
#include "sweep_test_util.hpp"

namespace {

using namespace lowp::accuracy;
using lowp::test::expect_same;
using lowp::test::same_bits;
using lowp::test::split_sweep;

// Every field but the wall times, which are zeroed here for the writers' bytes.
void expect_same(Sensitivity a, Sensitivity b, const std::string& what) {
  EXPECT_EQ(a.base, b.base);
  expect_same(a.base_cmp, b.base_cmp, what + " base");
  EXPECT_TRUE(same_bits(a.sweep.ref_ppl, b.sweep.ref_ppl)) << what;
  ASSERT_EQ(a.sweep.results.size(), b.sweep.results.size()) << what;
  for (std::size_t i = 0; i < a.sweep.results.size(); ++i) {
    RecipeResult &x = a.sweep.results[i], &y = b.sweep.results[i];
    ASSERT_EQ(x.recipe, y.recipe) << what;
    EXPECT_EQ(x.error, y.error) << what << " " << x.recipe;
    expect_same(x.cmp, y.cmp, what + " " + x.recipe);
    ASSERT_EQ(x.tensor_errors.size(), y.tensor_errors.size()) << what << " " << x.recipe;
    for (std::size_t k = 0; k < x.tensor_errors.size(); ++k) {
      const TensorError &e = x.tensor_errors[k], &f = y.tensor_errors[k];
      EXPECT_TRUE(e.point == f.point && e.layer == f.layer && e.count == f.count && e.nonfinite == f.nonfinite &&
                  same_bits(e.signal, f.signal) && same_bits(e.noise, f.noise))
          << what << " " << x.recipe << " " << e.layer << ":" << e.point;
    }
    x.seconds = y.seconds = 0;
  }
  ASSERT_EQ(a.rows.size(), b.rows.size()) << what;
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    SensitivityRow &x = a.rows[i], &y = b.rows[i];
    const std::string w = what + " " + x.t.key() + " @ " + x.spec;
    EXPECT_EQ(x.t.key(), y.t.key());
    EXPECT_EQ(x.spec, y.spec);
    EXPECT_EQ(x.error, y.error) << w;
    expect_same(x.cmp, y.cmp, w);
    EXPECT_TRUE(same_bits(x.kld, y.kld) && same_bits(x.dlnppl, y.dlnppl) && same_bits(x.sqnr_db, y.sqnr_db) &&
                same_bits(x.bits_per_element, y.bits_per_element))
        << w;
    x.seconds = y.seconds = 0;
  }
  a.sweep.ref_seconds = b.sweep.ref_seconds = 0;
  for (auto* write : {&write_sensitivity_csv, &write_sensitivity_json, &write_sensitivity_table}) {
    std::ostringstream x, y;
    write(x, a);
    write(y, b);
    EXPECT_EQ(x.str(), y.str()) << what;
  }
}


struct PrefixCase {
  LlamaModel model;
  std::vector<int> tokens = lowp::test::random_tokens(150, 40, 7);  // 10 windows of 16, the last one 6 tokens
  // int4:b64 does not divide down_proj's 96 columns nor P's 16: rows that fail, at preparation
  // (weights) and in the window (act.down, attn.p).
  std::vector<std::string> specs = {"e4m3", "int4:b64"};
  EvalOptions opt;
  PrefixCase() {
    LlamaConfig c = lowp::test::gqa_config();
    c.n_layers = 3;
    model = lowp::test::make_model(c, 5);
    opt.ctx = 16;
  }
  Sensitivity run(const Recipe* base, bool reuse, int ranks, const EvalRun* base_logits = nullptr) const {
    detail::SensitivityPlan plan = detail::plan_sensitivity(model, specs, base, false);
    ModelSweep sweep = split_sweep(plan.job(model, tokens, opt, base_logits, reuse), ranks);
    return detail::finish_sensitivity(std::move(plan), std::move(sweep));
  }
};

// One test per base recipe (fp32, a KV and weight-format base, QuaRot), each at 1 and 2 threads:
// 2 and 3 ranks of the prefix-reusing job and the API's run equal the whole runs.
class SensitivityPrefixBase : public ::testing::TestWithParam<const char*> {};

TEST_P(SensitivityPrefixBase, EqualsWholeRunsBitForBit) {
  PrefixCase c;
  const std::string name = GetParam();
  std::optional<Recipe> base;
  if (name == "kv-w") base = parse_recipe("name = kv-w\nkv = int8\nweights.wq = e4m3\nlayer.1.act.gate = int8\n");
  if (name == "quarot-w4a4kv4") base = find_recipe(name);
  for (const int threads : {1, 2}) {
    c.opt.threads = threads;
    const std::string what = name + ", " + std::to_string(threads) + " threads";
    const Recipe* b = base ? &*base : nullptr;
    const Sensitivity whole = c.run(b, false, 1);
    ASSERT_EQ(whole.rows.size(), (3u * 19 + 2) * 2);
    std::size_t failed = 0;
    for (const auto& r : whole.rows) failed += !r.error.empty();
    EXPECT_GT(failed, 0u) << what;  // the failing rows are compared too
    EXPECT_LT(failed, whole.rows.size() / 2) << what;
    for (const int ranks : {2, 3})
      expect_same(whole, c.run(b, true, ranks), what + ", " + std::to_string(ranks) + " ranks");
    expect_same(whole, run_sensitivity(c.model, c.tokens, c.specs, c.opt, {}, nullptr, b), what + ", API");
  }
}

INSTANTIATE_TEST_SUITE_P(SensitivityPrefix, SensitivityPrefixBase, ::testing::Values("fp32", "kv-w", "quarot-w4a4kv4"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(SensitivityPrefix, BaseLogitsAndScoreAll) {
  PrefixCase c;
  c.opt.score_all = true;
  c.specs = {"int4"};
  const EvalRun logits = evaluate(c.model, c.tokens, find_recipe("fp16"), c.opt);
  const Recipe kv = find_recipe("kv4");
  for (const Recipe* base : {static_cast<const Recipe*>(nullptr), &kv}) {
    const Sensitivity whole = c.run(base, false, 1, &logits);
    for (const int ranks : {1, 4}) expect_same(whole, c.run(base, true, ranks, &logits), "base logits");
  }
}

// A cache above --max-memory is not built: the recipes run whole, with the same results.
TEST(SensitivityPrefix, OverTheMemoryBudgetRunsWhole) {
  PrefixCase c;
  c.specs = {"e4m3"};
  const Sensitivity whole = c.run(nullptr, false, 1);
  // Room for each recipe's evaluation (recipe 19, layer 1's first tensor, needs as much as
  // any: one weight copy), none for the cache.
  const detail::SensitivityPlan plan = detail::plan_sensitivity(c.model, c.specs, nullptr, false);
  const detail::Windows win = detail::windows_for(c.model, c.tokens, c.opt);
  const double need = detail::evaluation_bytes(c.model, plan.recipes[19], win.n, win.ctx, c.opt);
  set_max_memory(static_cast<std::uint64_t>(need) + 1);
  const Sensitivity capped = c.run(nullptr, true, 1);
  // The cache itself: filled within the budget, empty above it. Recipe 19 resumes at layer 1.
  const detail::SweepJob job = plan.job(c.model, c.tokens, c.opt, nullptr, true);
  ASSERT_EQ(plan.resume.at(19), 1u);
  const auto prefix_of = [&] {
    detail::PrefixCache cache(job, 0, job.units());
    cache.fill(job);
    return cache.find(job, 19, 3);
  };
  EXPECT_FALSE(prefix_of().has_value());
  set_max_memory(0);
  const auto p = prefix_of();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->layer, 1u);
  EXPECT_EQ(p->x.size(), 16u * 64);
  expect_same(whole, capped, "over the budget");
}

// The stacked run (WindowEvaluator::run_stacked, forward_stacked) against each recipe run on its
// own from the same prefix: scored log-probabilities, kept logits and errors bit for bit, with the
// second half scored or every position. The recipes quantize different tensors of layer 1 of
// 3 (a weight, an activation, the KV cache). Mutant checked: the head's gather ignoring
// first_logit (rows taken from 0) moves the scored logits and fails.
TEST(SensitivityPrefix, StackedRunEqualsEachRunFromThePrefix) {
  PrefixCase c;
  for (const auto& [all, keep] : {std::pair{false, false}, {true, false}, {false, true}}) {
    c.opt.score_all = all;
    c.opt.keep_logits = keep;  // without: only the scored rows' logits are computed (first_logit)
    const std::vector<Recipe> recipes = {parse_recipe("name = a\nlayer.1.weights.wq = e4m3\n"),
                                         parse_recipe("name = b\nlayer.1.act.gate = int4\n"),
                                         parse_recipe("name = c\nlayer.1.kv = int8\n")};
    detail::WindowEvaluator base(c.model, c.tokens, find_recipe("fp32"), c.opt);
    for (const std::size_t w : {std::size_t{2}, std::size_t{9}}) {  // a whole window and the short last one
      std::vector<float> x1;
      EvalRun r0;
      base.run(w, r0, nullptr, [&](std::size_t l, const float* x) {
        if (l == 1) x1.assign(x, x + base.windows().length(w) * 64);
      });
      ASSERT_EQ(x1.size(), base.windows().length(w) * 64);
      detail::WindowPrefix prefix;
      prefix.layer = 1;
      prefix.x = x1;
      std::vector<std::unique_ptr<detail::WindowEvaluator>> evs;
      std::vector<detail::WindowEvaluator*> ptrs;
      for (const Recipe& r : recipes) {
        evs.push_back(std::make_unique<detail::WindowEvaluator>(c.model, c.tokens, r, c.opt));
        ptrs.push_back(evs.back().get());
      }
      std::vector<EvalRun> stacked(recipes.size());
      const auto errors = detail::WindowEvaluator::run_stacked(ptrs, w, stacked, prefix);
      for (std::size_t i = 0; i < recipes.size(); ++i) {
        EvalRun one;
        const auto e = evs[i]->run(w, one, &prefix);
        const std::string what = recipes[i].name + (all ? ", score-all" : "") + (keep ? ", logits" : "") + ", window " + std::to_string(w);
        ASSERT_EQ(one.logits.size(), stacked[i].logits.size()) << what;
        EXPECT_TRUE(std::equal(one.logits.begin(), one.logits.end(), stacked[i].logits.begin(),
                               [](float a, float b) { return same_bits(a, b); }))
            << what;
        EXPECT_EQ(one.targets, stacked[i].targets) << what;
        EXPECT_EQ(one.log_probs, stacked[i].log_probs) << what;
        ASSERT_EQ(e.size(), errors[i].size()) << what;
        if (i > 0) {  // a weight's error is its preparation's, not the window's
          ASSERT_FALSE(e.empty()) << what;
        }
        for (std::size_t k = 0; k < e.size(); ++k)
          EXPECT_TRUE(e[k].point == errors[i][k].point && e[k].layer == errors[i][k].layer &&
                      same_bits(e[k].signal, errors[i][k].signal) && same_bits(e[k].noise, errors[i][k].noise))
              << what << " " << e[k].point;
      }
    }
  }
}

}  // namespace
