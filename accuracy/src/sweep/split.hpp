// The model sweep split into units of work (private to lowp_accuracy), for `mpirun -np N lowp
// sweep`. A unit is one window of one run: run 0 is the fp32 reference (when no base is given),
// then the recipes in order. Units are numbered window-major (window w: the reference, then
// every recipe) and each rank takes a contiguous share, so a rank evaluates a few whole windows.
// Every unit's values depend only on its window and run; rank 0 appends them in window order,
// which is what one process does too, so the result is the same bit for bit for any N.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/model_sweep.hpp"

namespace lowp::accuracy::detail {

struct SweepUnit {
  std::uint64_t window = 0, run = 0;
  PositionStats stats;              // against the reference's window (the reference: itself)
  std::vector<TensorError> errors;  // the window's quantization points (window 0: the weights' first)
  double seconds = 0;               // wall time (a rank's preparation of the recipe included)
  std::string error;                // the lowp::Error the recipe threw on this window
  EvalRun reference;                // the reference's window: targets, log_probs (keep_reference only)
};

struct SweepJob {
  const LlamaModel& model;
  std::span<const int> tokens;
  std::span<const Recipe> recipes;
  const EvalOptions& opt;
  const EvalRun* base = nullptr;  // llama.cpp's reference instead of the fp32 run
  bool keep_reference = true;     // ModelSweep::reference_run wanted
  // Prefix reuse (sensitivity, prefix_cache.hpp): recipe i computes what prefix_base computes
  // before layer resume[i] (0: run whole; n_layers: only the final norm and classifier differ).
  // Empty: every recipe runs whole.
  const Recipe* prefix_base = nullptr;
  std::span<const std::size_t> resume = {};
  // Sensitivity's recipes also compute the base's ops after layer resume[i]: over an identity
  // base, recipes resuming at one layer run the layers after it side by side (forward_stacked).
  bool only_resume_layer = false;
  std::size_t windows() const;
  std::size_t runs() const { return recipes.size() + (base ? 0 : 1); }
  std::size_t units() const { return windows() * runs(); }
};

// Evaluates units [begin, end). Throws what the reference throws; a recipe's lowp::Error is
// recorded in its units. LOWP_TEST_FAIL_RANK=r (a test hook, docs/sweep.md): rank r throws here.
std::vector<SweepUnit> run_units(const SweepJob& job, std::size_t begin, std::size_t end,
                                 const SweepProgress& progress);
// Every unit of the job, in any order, into the sweep run_model_sweep returns.
ModelSweep assemble(const SweepJob& job, std::vector<SweepUnit> units);

std::vector<std::uint8_t> pack(const std::vector<SweepUnit>& units);
std::vector<SweepUnit> unpack(std::span<const std::uint8_t> bytes);  // throws lowp::Error if malformed

// run_model_sweep over the first `ranks` ranks of the job (the others take no units; all must
// call it). Rank 0 returns the sweep; the other ranks its settings with no results.
ModelSweep run_split(const SweepJob& job, int ranks, const SweepProgress& progress);

}  // namespace lowp::accuracy::detail
