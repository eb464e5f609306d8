// The logs of a `lowp train` run (private): DIR/log.csv, one row a step (losses, learning rate,
// gradient norm, throughput, each layer's RMS(g^2/v), the communicated gradient's SQNR), and
// DIR/quant.csv, per evaluated step what the recipe's quantization does to each operand.
#pragma once
#include <fstream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "train/train_model.hpp"
#include "train/trainer.hpp"

namespace lowp::accuracy::train {

// A number as the logs and train.cfg write it: %.9g, NaN as an empty field.
std::string log_number(double v);

class TrainLog {
 public:
  // Rewrites both files with their headers and, when resumed (`done` steps), their rows up to
  // that step; `comm_column`: log.csv has the grad_comm_sqnr_db column. Returns the kept rows'
  // (step, val loss) of the evaluated steps.
  std::vector<std::pair<int, double>> open(const std::string& dir, int n_layers, bool comm_column, int done);

  // quant.csv's rows of `step`: per linear (`layout`, take_stats order), GEMM and quantized
  // operand (operands left in float32 have no row). `total`: the step's sums, the operand
  // statistics from index 3 (5 values per operand).
  void operands(int step, std::span<const TrainLinearStats> layout, std::span<const double> total);

  // log.csv's row of a step; `rms`: each layer's RMS(g^2/v).
  void row(const StepInfo& s, std::span<const double> rms, bool comm_column);

 private:
  std::ofstream log_, quant_;
};

}  // namespace lowp::accuracy::train
