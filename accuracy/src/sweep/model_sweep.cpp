// run_model_sweep: the reference once, each recipe against it.
#include "lowp/accuracy/model_sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 0: a mean KLD; 1: NaN (no finite position); 2: the recipe failed.
int rank(const RecipeResult& r) {
  if (!r.error.empty()) return 2;
  return std::isnan(r.cmp.kld_mean) ? 1 : 0;
}

}  // namespace

ModelSweep run_model_sweep(const LlamaModel& model, std::span<const int> tokens, std::span<const Recipe> recipes,
                           const EvalOptions& opt, const SweepProgress& progress, const EvalRun* base) {
  const double steps = static_cast<double>(recipes.size() + 1);
  // The evaluator's per-window progress, folded into the whole sweep's fraction.
  const auto eval_options = [&](std::string_view what, std::size_t step) {
    EvalOptions o = opt;
    if (progress)
      o.progress = [&progress, what, step, steps](std::size_t done, std::size_t total) {
        const double within = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
        progress(what, (static_cast<double>(step) + within) / steps);
      };
    return o;
  };

  ModelSweep sweep;
  sweep.tokens = tokens.size();
  sweep.ctx = opt.ctx > 0 ? opt.ctx : static_cast<int>(std::min<std::size_t>(model.config.seq_len, tokens.size()));
  sweep.score_all = opt.score_all;
  auto t0 = std::chrono::steady_clock::now();
  EvalRun own;  // the fp32 run, when no base is given (a base's rows are not copied)
  if (!base) own = evaluate(model, tokens, find_recipe("fp32"), eval_options("fp32 reference", 0));
  const EvalRun& ref = base ? *base : own;
  if (base) sweep.reference = "base logits";
  sweep.ref_seconds = base ? 0.0 : seconds_since(t0);
  sweep.scored = ref.scored();
  const Comparison self = compare(ref, ref);
  sweep.ref_ppl = self.ppl;
  sweep.ref_ppl_se = self.ppl_se;
  sweep.ref_nonfinite = self.nonfinite;

  for (std::size_t i = 0; i < recipes.size(); ++i) {
    RecipeResult r;
    r.recipe = recipes[i].name;
    r.note = recipes[i].note;
    t0 = std::chrono::steady_clock::now();
    try {
      EvalRun run = evaluate(model, tokens, recipes[i], eval_options(recipes[i].name, i + 1));
      r.seconds = seconds_since(t0);
      r.cmp = compare(ref, run);
      r.tensor_errors = std::move(run.tensor_errors);
    } catch (const Error& e) {
      r.seconds = seconds_since(t0);
      r.error = e.what();
    }
    sweep.results.push_back(std::move(r));
  }
  if (progress) progress("done", 1.0);
  if (!base) sweep.reference_run = std::move(own);

  // Stable by run order (std::stable_sort's libstdc++ 12 buffer is deprecated for clang 19).
  std::vector<std::size_t> order(sweep.results.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    const RecipeResult &a = sweep.results[i], &b = sweep.results[j];
    const int ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    if (ra == 0 && a.cmp.kld_mean != b.cmp.kld_mean) return a.cmp.kld_mean < b.cmp.kld_mean;
    return i < j;
  });
  std::vector<RecipeResult> sorted;
  for (const std::size_t i : order) sorted.push_back(std::move(sweep.results[i]));
  sweep.results = std::move(sorted);
  return sweep;
}

}  // namespace lowp::accuracy
