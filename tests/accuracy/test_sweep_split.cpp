// The model sweep split into (window, run) units as `mpirun -np N lowp sweep` splits it: every
// rank's share run here in one process, packed and unpacked as between ranks, and assembled.
// The oracle is the sweep over whole runs: compare(evaluate(fp32), evaluate(recipe)) on all
// the tokens at once; the split sweep must equal it bit for bit for any N.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dist/comm.hpp"
#include "llama_test_util.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/accuracy/model_sweep.hpp"
#include "sweep/split.hpp"
#include "sweep_test_util.hpp"

namespace {

using namespace lowp;
using namespace lowp::accuracy;

using test::expect_same;
using test::same_bits;
using test::split_sweep;

void expect_same(const ModelSweep& a, const ModelSweep& b, const std::string& what) {
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.scored, b.scored);
  EXPECT_EQ(a.ctx, b.ctx);
  EXPECT_TRUE(same_bits(a.ref_ppl, b.ref_ppl) && same_bits(a.ref_ppl_se, b.ref_ppl_se)) << what;
  EXPECT_EQ(a.reference_run.targets, b.reference_run.targets) << what;
  EXPECT_TRUE(a.reference_run.log_probs == b.reference_run.log_probs) << what;
  ASSERT_EQ(a.results.size(), b.results.size());
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    const RecipeResult &x = a.results[i], &y = b.results[i];
    ASSERT_EQ(x.recipe, y.recipe) << what;
    EXPECT_EQ(x.error, y.error) << what;
    expect_same(x.cmp, y.cmp, what + " " + x.recipe);
    ASSERT_EQ(x.tensor_errors.size(), y.tensor_errors.size()) << what << " " << x.recipe;
    for (std::size_t k = 0; k < x.tensor_errors.size(); ++k) {
      const TensorError &e = x.tensor_errors[k], &f = y.tensor_errors[k];
      EXPECT_EQ(e.point, f.point);
      EXPECT_EQ(e.layer, f.layer);
      EXPECT_EQ(e.count, f.count);
      EXPECT_TRUE(same_bits(e.signal, f.signal) && same_bits(e.noise, f.noise)) << what << " " << x.recipe << " " << e.point;
    }
  }
}

struct SplitCase {
  LlamaModel model = test::small_model(3);
  std::vector<int> tokens = test::random_tokens(150, 40, 7);  // 10 windows of 16, the last one 6 tokens
  std::vector<Recipe> recipes = {find_recipe("bf16"), find_recipe("fp8-attn"), find_recipe("kv4"),
                                 find_recipe("mxfp4"), find_recipe("quarot-w4a4kv4")};
  EvalOptions opt;
  SplitCase() {
    opt.ctx = 16;
    opt.threads = 1;
  }
};


TEST(SweepSplit, EqualsWholeRunsBitForBit) {
  const SplitCase c;
  const ModelSweep one = run_model_sweep(c.model, c.tokens, c.recipes, c.opt);
  // The oracle: whole runs, compared at once.
  const EvalRun ref = evaluate(c.model, c.tokens, find_recipe("fp32"), c.opt);
  const Comparison self = compare(ref, ref);
  EXPECT_TRUE(same_bits(one.ref_ppl, self.ppl));
  EXPECT_EQ(one.scored, ref.scored());
  EXPECT_EQ(one.reference_run.log_probs, ref.log_probs);
  for (const auto& r : one.results) {
    const EvalRun run = evaluate(c.model, c.tokens, find_recipe(r.recipe), c.opt);
    expect_same(r.cmp, compare(ref, run), r.recipe);
    // Per-layer errors: the same points, sums equal up to the order of additions.
    ASSERT_EQ(r.tensor_errors.size(), run.tensor_errors.size()) << r.recipe;
    for (std::size_t k = 0; k < run.tensor_errors.size(); ++k) {
      EXPECT_EQ(r.tensor_errors[k].point, run.tensor_errors[k].point);
      EXPECT_NEAR(r.tensor_errors[k].noise, run.tensor_errors[k].noise, 1e-9 * run.tensor_errors[k].noise);
    }
  }
  const detail::SweepJob job{c.model, c.tokens, c.recipes, c.opt};
  EXPECT_EQ(job.units(), 10u * 6);
  for (int ranks : {1, 2, 3, 4, 7, 60}) expect_same(one, split_sweep(job, ranks), std::to_string(ranks) + " ranks");
}

TEST(SweepSplit, BaseLogitsAndScoreAll) {
  SplitCase c;
  c.opt.score_all = true;
  const EvalRun base = evaluate(c.model, c.tokens, find_recipe("fp16"), c.opt);
  const ModelSweep one = run_model_sweep(c.model, c.tokens, c.recipes, c.opt, {}, &base);
  for (const auto& r : one.results)
    expect_same(r.cmp, compare(base, evaluate(c.model, c.tokens, find_recipe(r.recipe), c.opt)), r.recipe);
  const detail::SweepJob job{c.model, c.tokens, c.recipes, c.opt, &base};
  EXPECT_EQ(job.units(), 10u * 5);
  for (int ranks : {2, 3, 5}) expect_same(one, split_sweep(job, ranks), std::to_string(ranks) + " ranks, base");
}

TEST(SweepSplit, RecipeFailureIsTheFirstFailingWindows) {
  SplitCase c;
  // 8 x 8 tiles fit P (16 x 16) of the full windows, not the last window's (6 x 6).
  c.recipes = {find_recipe("bf16"), parse_recipe("name = bad\nattn.p = e4m3:t8:none\n")};
  const ModelSweep one = run_model_sweep(c.model, c.tokens, c.recipes, c.opt);
  ASSERT_EQ(one.results.size(), 2u);
  EXPECT_NE(one.results[1].error.find("6x6"), std::string::npos) << one.results[1].error;
  const detail::SweepJob job{c.model, c.tokens, c.recipes, c.opt};
  for (int ranks : {2, 3}) expect_same(one, split_sweep(job, ranks), std::to_string(ranks) + " ranks, failure");
}

TEST(SweepSplit, MalformedBytesAreErrors) {
  const SplitCase c;
  const detail::SweepJob job{c.model, c.tokens, c.recipes, c.opt};
  auto bytes = detail::pack(detail::run_units(job, 0, 3, {}));
  EXPECT_EQ(detail::unpack(bytes).size(), 3u);
  for (std::size_t cut : {std::size_t{0}, std::size_t{5}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(detail::unpack(std::span(bytes).first(cut)), Error) << cut;
  bytes.push_back(0);
  EXPECT_THROW(detail::unpack(bytes), Error);
}

}  // namespace
