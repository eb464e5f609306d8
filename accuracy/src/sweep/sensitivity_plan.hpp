// run_sensitivity in its parts (private to lowp_accuracy; the tests run the sweep between
// them with and without the prefix reuse, and split across ranks).
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/sensitivity.hpp"
#include "sweep/split.hpp"

namespace lowp::accuracy::detail {

struct SensitivityPlan {
  Recipe base;                      // what every tensor is added to
  std::vector<Recipe> recipes;      // one per row, then the base when it is not the identity
  std::vector<std::size_t> resume;  // per recipe: the layer it departs from the base at (0: run whole)
  Sensitivity out;                  // base, specs and rows, their results not yet filled
  // The sweep's job; reuse_prefix: the recipes run from their layer on (SweepJob::resume).
  SweepJob job(const LlamaModel& model, std::span<const int> tokens, const EvalOptions& opt,
               const EvalRun* base_logits, bool reuse_prefix) const;
};

SensitivityPlan plan_sensitivity(const LlamaModel& model, std::span<const std::string> specs, const Recipe* base,
                                 bool weights_only);
// The rows' results from the sweep of plan.job(...).
Sensitivity finish_sensitivity(SensitivityPlan plan, ModelSweep sweep);

}  // namespace lowp::accuracy::detail
