// `lowp train --recipes a,b,c [--seeds K]`: the recipes trained alike from the same K seeds
// (seed s0..s0+K-1: initial weights and batch order) into DIR/<recipe>/ (K = 1) or
// DIR/<recipe>/seed<S>/ (K > 1), then DIR/summary.csv, DIR/loss.svg and, for K > 1,
// DIR/seeds.csv (private).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "train/trainer.hpp"

namespace lowp::accuracy::train {

struct SeedRun {
  std::uint64_t seed = 0;
  TrainResult result;
};

struct RecipeRun {
  std::string recipe;
  std::vector<SeedRun> seeds;  // the same seeds, in the same order, for every recipe
};

// A recipe's final validation losses over K seeds against fp32's, paired by seed: d_i =
// loss_i - fp32_i. With K = 1 every se / lo / hi is NaN and nothing exceeds the noise.
struct SeedStats {
  int k = 0;
  double mean = 0, se = 0;                  // mean loss, sample sd / sqrt(K)
  double gap = 0, gap_lo = 0, gap_hi = 0;   // mean d and its Student-t 95% interval (nats)
  double gap_pct = 0, gap_pct_lo = 0, gap_pct_hi = 0;  // the same in % of fp32's mean loss
  bool exceeds_noise = false;               // the interval excludes 0
};

// The 0.975 quantile of Student's t with `dof` >= 1 degrees of freedom (two-sided 95%).
double t_quantile_975(int dof);

// Throws lowp::Error when the sizes differ or are 0.
SeedStats seed_stats(const std::vector<double>& losses, const std::vector<double>& fp32_losses);

// fp32 is added first when missing; `seeds` >= 1. `progress` gets each run's steps, labelled
// with the recipe (and the seed when seeds > 1). Under mpirun the (recipe, seed) runs are split
// across the ranks; rank 0 returns every run and writes the files, the other ranks return
// nothing.
std::vector<RecipeRun> compare_recipes(const TrainOptions& base, std::vector<std::string> recipes, int seeds,
                                       const std::function<void(const std::string&, const StepInfo&)>& progress);

// The per-recipe statistics of `runs` against its fp32 entry, in order.
std::vector<SeedStats> comparison_stats(const std::vector<RecipeRun>& runs);

// In `dir`: summary.csv (recipe,final_val_loss,gap_pct, with `comm_column` grad_comm_sqnr_db,
// the mean SQNR of --grad-comm's quantized gradients; with K > 1 final_val_loss and gap_pct are
// means over the seeds and seeds,final_val_loss_se,gap,gap_lo,gap_hi,gap_pct_lo,gap_pct_hi,
// exceeds_noise follow), loss.svg (validation curves, the seeds' mean) and, with K > 1,
// seeds.csv (recipe,seed,final_val_loss).
void write_comparison(const std::string& dir, const std::vector<RecipeRun>& runs, bool comm_column = false);

}  // namespace lowp::accuracy::train
