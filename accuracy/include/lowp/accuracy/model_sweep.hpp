// The model sweep, `lowp sweep --model`: one float32 reference run, then each recipe on the
// same tokens, compared with it (metrics.hpp), sorted by mean KLD.
#pragma once
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/metrics.hpp"
#include "lowp/accuracy/model.hpp"
#include "lowp/accuracy/recipe.hpp"

namespace lowp::accuracy {

struct RecipeResult {
  std::string recipe, note;
  Comparison cmp;                        // meaningful when error is empty
  double seconds = 0;                    // wall time of the recipe's evaluation (summed over ranks)
  std::vector<TensorError> tensor_errors;  // per-layer SQNR attribution
  std::string error;                     // the lowp::Error the evaluation threw, if any
};

struct ModelSweep {
  std::string model;        // a label for reports (the caller sets it, e.g. the path)
  int ctx = 0;              // the window length used
  bool score_all = false;   // every position scored, not the second half of each window
  std::size_t tokens = 0;   // tokens fed
  std::size_t scored = 0;   // positions scored
  double ref_ppl = 0, ref_ppl_se = 0, ref_seconds = 0;
  std::size_t ref_nonfinite = 0;
  std::string reference = "fp32";  // what the KLDs are measured from (a label for reports)
  EvalRun reference_run;           // the fp32 run's scored log-probabilities (empty with a base)
  // Ascending mean KLD; a NaN mean (every position nonfinite) next, failed recipes last,
  // each group in the order given.
  std::vector<RecipeResult> results;
};

// Called with (what is running, fraction of the whole sweep done in [0, 1]).
using SweepProgress = std::function<void(std::string_view, double)>;

// Runs the float32 reference (the built-in "fp32" recipe) and then every recipe. A recipe
// whose evaluation throws lowp::Error is recorded with its message and the sweep goes on; an
// error of the reference (bad tokens, ctx) is thrown. A given `base` run (llama.cpp's
// log-probabilities, base_logits.hpp) is the reference instead: no fp32 run then.
// Under mpirun every rank calls it and takes a share of the (recipe, window) pairs; rank 0
// returns the same sweep, bit for bit, as one process (seconds aside: a recipe's are summed
// over ranks), the other ranks only its settings. reference_run is filled when keep_reference.
ModelSweep run_model_sweep(const LlamaModel& model, std::span<const int> tokens, std::span<const Recipe> recipes,
                           const EvalOptions& opt = {}, const SweepProgress& progress = {},
                           const EvalRun* base = nullptr, bool keep_reference = true);

}  // namespace lowp::accuracy
