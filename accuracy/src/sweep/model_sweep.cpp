// run_model_sweep: the reference once, each recipe against it, split across the MPI ranks.
#include "lowp/accuracy/model_sweep.hpp"

#include "dist/comm.hpp"
#include "sweep/split.hpp"

namespace lowp::accuracy {

ModelSweep run_model_sweep(const LlamaModel& model, std::span<const int> tokens, std::span<const Recipe> recipes,
                           const EvalOptions& opt, const SweepProgress& progress, const EvalRun* base,
                           bool keep_reference) {
  const detail::SweepJob job{model, tokens, recipes, opt, base, keep_reference};
  return detail::run_split(job, dist::size(), progress);
}

}  // namespace lowp::accuracy
