// `lowp train --recipes a,b,c`: the recipes trained from the same initial weights and batches
// into DIR/<recipe>/, then DIR/summary.csv and DIR/loss.svg (private).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "train/trainer.hpp"

namespace lowp::accuracy::train {

struct RecipeRun {
  std::string recipe;
  TrainResult result;
};

// fp32 is added first when missing. `progress` gets each recipe's steps. Under mpirun the
// recipes are split across the ranks; rank 0 returns every run and writes the files, the
// other ranks return nothing.
std::vector<RecipeRun> compare_recipes(const TrainOptions& base, std::vector<std::string> recipes,
                                       const std::function<void(const std::string&, const StepInfo&)>& progress);

// summary.csv (recipe,final_val_loss,gap_pct, and with `comm_column` grad_comm_sqnr_db, the
// mean SQNR of --grad-comm's quantized gradients) and loss.svg (validation curves) in `dir`.
void write_comparison(const std::string& dir, const std::vector<RecipeRun>& runs, bool comm_column = false);

}  // namespace lowp::accuracy::train
