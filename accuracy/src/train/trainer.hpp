// The training loop behind `lowp train` (private): the training recipe's model and optimizer
// (optim/optimizer.hpp) stepped over the corpus' batches (train/corpus.hpp), data parallel across
// ranks (train/data_parallel.hpp), logged (train/train_log.hpp) and checkpointed
// (train/checkpoint_dir.hpp, train/run_config.hpp) into DIR.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "recipe/train_recipe.hpp"
#include "train/corpus.hpp"
#include "train/train_model.hpp"

namespace lowp::accuracy::train {

struct TrainOptions {
  std::string corpus;            // a text file: each byte one token (with `init`: the model's tokenizer)
  // A checkpoint lowp evaluates (llama2.c .bin, GGUF of any weight type, HF folder) to start
  // from: its shape, architecture and weights (dequantized to float32) replace `config` but
  // config.seq_len (the window) and `tied`; the exports keep its architecture and seq_len.
  std::string init;
  std::string recipe = "fp32";   // a training recipe: built-in name or file (recipe/train_recipe.hpp)
  std::string out;               // DIR
  int steps = 0;
  std::uint64_t seed = 1;
  int threads = 0;               // 0: all
  LlamaConfig config;            // vocab_size 258 (bytes, <s>, </s>); seq_len = the window
  int batch = 16;
  double lr = 1e-3;
  int warmup = -1;               // -1: min(100, steps / 10)
  double min_lr_ratio = 0.1;     // the cosine ends at lr * this
  double grad_clip = 1.0;        // global L2 norm; 0: off
  int eval_every = 100;          // also always at the last step
  int save_every = 0;            // 0: at the end only
  int val_windows = 64;          // held-out windows per evaluation (evenly spread)
  bool tied = true;
  // Data parallel (train/data_parallel.hpp): the step's gradient is the sum of micro-batches
  // of `micro_batch` windows (0: the whole batch), in order; under mpirun they are dealt to the
  // ranks and the log and checkpoints stay bitwise those of one process.
  int micro_batch = 0;
  std::string grad_comm = "fp32";  // each rank's gradient as communicated: fp32 bf16 e4m3 e5m2 mxfp8
  bool data_parallel = true;       // false: this rank trains alone (--recipes split across ranks)
  // `lowp probe` (train/probe): at each step of `snapshot_steps` (0: before the first step),
  // after that step's update, `snapshot` gets the weights, the run's tokens and the size of their
  // training split; the run itself goes on unchanged.
  std::vector<int> snapshot_steps;
  std::function<void(int step, const LlamaModel& weights, std::span<const int> data, std::size_t n_train)> snapshot;
};

struct StepInfo {
  int step = 0, steps = 0;
  double train_loss = 0, val_loss = 0, lr = 0, grad_norm = 0, tokens_per_second = 0;
  double grad_comm_sqnr_db = 0;  // 10 log10(sum g^2 / sum (g - q)^2) of the communicated gradients
  bool evaluated = false;
  double elapsed_seconds = 0;
};

struct TrainResult {
  double final_val_loss = 0;
  std::vector<std::string> notes;  // exports that were not written, and why (one line each)
  double grad_comm_sqnr_db = 0;  // mean over the steps (--grad-comm other than fp32)
  std::vector<std::pair<int, double>> val_curve;  // (step, val loss) of this run (resumed: from log.csv)
};

// Trains from scratch (options.out must not hold a previous run's state) or, with `resume`,
// continues DIR's run to options.steps; DIR/train.cfg then supplies everything else but
// steps and threads. Throws lowp::Error with one line (empty or too short corpus, unknown
// recipe, non-finite loss: the step and the first non-finite tensor, last checkpoint kept).
TrainResult run_training(TrainOptions options, bool resume, const std::function<void(const StepInfo&)>& progress);

// The trainable model of recipe `r` holding `start`'s weights: ScalifyLlama for `model = scalify`,
// else TrainLlama with the recipe's linears and classifier.
std::unique_ptr<TrainModel> make_train_model(const lowp::train::TrainRecipe& r, const LlamaModel& start);

// The named configs of --config (dim, layers, heads, ...), "tiny", "small", "medium".
LlamaConfig named_config(const std::string& name);

}  // namespace lowp::accuracy::train
