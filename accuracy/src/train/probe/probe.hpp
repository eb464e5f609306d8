// `lowp probe` (private): gradient fidelity of training recipes along one shared float32
// trajectory. At each stop the fp32 weights theta are copied into each recipe's model; on B held
// batches the fp32 gradient g is compared with D draws of the recipe's gradient (its
// stochastic rounding and random signs seeded per draw), per parameter tensor and for the whole
// model, and each quantized GEMM (fwd Y, dgrad dX, wgrad dW) is compared, on the inputs the
// recipe's pass gave it, with the float32 GEMM of those inputs (probe_stats.hpp: the figures).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "recipe/train_recipe.hpp"
#include "train/probe/probe_gemm.hpp"
#include "train/probe/probe_stats.hpp"

namespace lowp::accuracy::train::probe {

// One line of probe.csv. gemm: "grad" (the recipe's gradient of `tensor`; tensor "model" with
// layer -1: every parameter), or "fwd" / "dgrad" / "wgrad" (the GEMM of linear `tensor` of
// `layer`, classifier: layer -1; tensor "model": all the linears' GEMMs of that kind).
struct Row {
  std::string recipe;
  int step = 0, layer = -1;
  std::string tensor, gemm;
  Interval rel_mse{}, bias2{};
  double variance = 0, cosine = 0, proj = 0, noise_ratio = 0, loss_delta = 0;
  double saturated = 0, flushed = 0, scale_log2_sd = 0;  // NaN where there is no such figure
};

// One held batch: `batch` windows of `ctx` tokens and their next tokens, row-major.
struct Batch {
  std::vector<int> tokens, targets;
};

struct PointOptions {
  int step = 0;
  int draws = 4;
  int threads = 0;
  std::uint64_t seed = 1;
  std::size_t batch = 0, ctx = 0;  // windows per batch, tokens per window
  // A recipe whose passes do not read their seed (TrainLlama::uses_seed false) gives every
  // draw the same bits: run draw 0, and draw 1 of the first batch as a check, and count draw
  // 0's figures for the others (the same sums, bit for bit). false: run every draw.
  bool reuse_seed_free = true;
};

// The seed of draw `draw` of batch `batch` at step `step`: the recipe's forward and backward
// passes take it as their step seed.
std::uint64_t draw_seed(std::uint64_t seed, int step, std::size_t batch, int draw);

// The fp32 pass of each batch at theta: its loss and its gradient (params() order, concatenated),
// shared by every recipe probed at that stop.
struct Reference {
  std::vector<double> loss;
  std::vector<std::vector<float>> grad;
};
Reference fp32_reference(const LlamaModel& theta, const std::vector<Batch>& batches, const PointOptions& o);

// The rows of one (recipe, step) on `batches` at weights `theta`, in order: the model, each
// parameter tensor (checkpoint order), then per GEMM kind the model and each linear. `ref`:
// fp32_reference() of the same theta and batches.
std::vector<Row> probe_point(const LlamaModel& theta, const lowp::train::TrainRecipe& recipe,
                             const std::vector<Batch>& batches, const PointOptions& o, const Reference& ref);
// The same with its own fp32_reference().
std::vector<Row> probe_point(const LlamaModel& theta, const lowp::train::TrainRecipe& recipe,
                             const std::vector<Batch>& batches, const PointOptions& o);

struct Options {
  std::string corpus;
  std::string init;  // a checkpoint (or "shakespeare"): its weights, shape and tokenizer
  LlamaConfig config;
  bool tied = true;
  std::vector<std::string> recipes;  // built-in names or files
  std::vector<int> at = {0, 100, 300};
  int batches = 8, draws = 4;
  int batch = 16;
  double lr = 1e-3;
  std::uint64_t seed = 1;
  int threads = 0;
  std::string out;
};

// Trains fp32 (DIR/fp32: the trajectory's log and checkpoints) and probes at each stop; under
// mpirun the (recipe, stop) jobs are dealt to the ranks and rank 0 returns every row (the
// others nothing). `progress` gets one line per finished job. Throws lowp::Error.
std::vector<Row> run_probe(const Options& o, const std::function<void(const std::string&)>& progress);

// DIR/probe.csv, DIR/probe.json and DIR/probe.svg, each written atomically.
void write_probe(const std::string& dir, const std::vector<Row>& rows, const Options& o);

}  // namespace lowp::accuracy::train::probe
