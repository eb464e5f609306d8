// `lowp sweep`: the tensor-level sweep (no --model), or a model sweep over recipes.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/model_sweep.hpp"
#include "lowp/accuracy/report.hpp"
#include "lowp/accuracy/tensor_sweep.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::cli {
namespace {

struct SweepArgs {
  // Model sweep.
  std::string model, text, tokens;
  std::vector<std::string> recipes;
  int ctx = 0;
  bool score_all = false, layers = false;
  // Tensor sweep.
  std::size_t rows = 256, cols = 4096;
  std::uint64_t seed = 1;
  std::vector<std::string> specs, distributions, rotations;
  // Both.
  std::string csv, json, plot;
  int threads = 0;
};

// Writes a file through `write`; a file that cannot be written is a one-line failure.
void write_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path.empty()) return;
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Failure{exit_bad_data, "cannot open " + quote_input(path) + " for writing"};
  write(f);
  f.flush();
  if (!f) throw Failure{exit_bad_data, "cannot write " + quote_input(path)};
}

// A one-line progress bar redrawn in place, only when stderr is the terminal.
class ProgressBar {
 public:
  explicit ProgressBar(Io& io) : err_(io.err), on_(&io.err == &std::cerr && isatty(STDERR_FILENO)) {}
  ~ProgressBar() {
    if (on_ && drawn_) err_ << "\r\033[K" << std::flush;
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void update(std::string_view what, double fraction) {
    if (!on_) return;
    constexpr int width = 30;
    const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width);
    err_ << "\r\033[K[" << std::string(filled, '#') << std::string(width - filled, '.') << "] "
         << static_cast<int>(fraction * 100) << "% " << what << std::flush;
    drawn_ = true;
  }

 private:
  std::ostream& err_;
  bool on_;
  bool drawn_ = false;
};

int run_tensor(Io& io, const SweepArgs& a) {
  accuracy::TensorSweepOptions opt;
  opt.rows = a.rows;
  opt.cols = a.cols;
  opt.seed = a.seed;
  opt.specs = a.specs;
  try {
    for (const auto& d : a.distributions) opt.distributions.push_back(accuracy::parse_distribution(d));
    for (const auto& r : a.rotations) opt.rotations.push_back(accuracy::parse_sweep_rotation(r));
    for (const auto& s : a.specs) quant::parse_quant_spec(s);
  } catch (const Error& e) {
    throw Failure{exit_usage, e.what()};
  }
  ProgressBar bar(io);
  opt.progress = [&bar](std::size_t done, std::size_t total) {
    bar.update("tensor passes", static_cast<double>(done) / static_cast<double>(total));
  };
  std::vector<accuracy::TensorSweepRow> rows;
  try {
    rows = accuracy::run_tensor_sweep(opt);
  } catch (const Error& e) {  // a shape the specs or rotations cannot take: a usage error
    throw Failure{exit_usage, e.what()};
  }
  bar.update("", 1.0);
  accuracy::write_tensor_sweep_table(io.out, rows, opt);
  write_file(a.csv, [&](std::ostream& f) { accuracy::write_tensor_sweep_csv(f, rows); });
  write_file(a.json, [&](std::ostream& f) { accuracy::write_tensor_sweep_json(f, rows, opt); });
  write_file(a.plot, [&](std::ostream& f) { accuracy::write_tensor_sweep_svg(f, rows, opt); });
  return exit_ok;
}

int run_model(Io& io, const SweepArgs& a) {
  if (a.text.empty() == a.tokens.empty()) throw Failure{exit_usage, "--model needs exactly one of --text and --tokens"};
  // Unknown recipe names are usage errors, found before any evaluation.
  std::vector<accuracy::Recipe> recipes;
  try {
    for (const auto& name : a.recipes.empty() ? accuracy::default_sweep_recipes() : a.recipes)
      recipes.push_back(accuracy::find_recipe(name));
  } catch (const Error& e) {
    throw Failure{exit_usage, e.what()};
  }
  const accuracy::LlamaModel model = accuracy::load_model(a.model, accuracy::WeightStorage::mapped);
  check_ctx_option(a.ctx, model.config.seq_len);
  const std::vector<int> tokens = read_eval_tokens(a.tokens, a.text, a.model, model.config.vocab_size);

  accuracy::EvalOptions opt;
  opt.ctx = a.ctx;
  opt.score_all = a.score_all;
  opt.threads = a.threads;
  ProgressBar bar(io);
  accuracy::ModelSweep sweep = accuracy::run_model_sweep(
      model, tokens, recipes, opt, [&bar](std::string_view what, double f) { bar.update(what, f); });
  sweep.model = a.model;
  bar.update("", 1.0);

  accuracy::write_model_sweep_table(io.out, sweep);
  if (a.layers) accuracy::write_model_sweep_layers(io.out, sweep);
  write_file(a.csv, [&](std::ostream& f) { accuracy::write_model_sweep_csv(f, sweep); });
  write_file(a.json, [&](std::ostream& f) { accuracy::write_model_sweep_json(f, sweep); });
  write_file(a.plot, [&](std::ostream& f) { accuracy::write_model_sweep_svg(f, sweep); });

  // Results are written; a recipe that could not run still makes the exit status 1.
  std::size_t failed = 0;
  std::string first;
  for (const auto& r : sweep.results)
    if (!r.error.empty() && failed++ == 0) first = r.recipe + ": " + r.error;
  if (failed)
    throw Failure{exit_bad_data, std::to_string(failed) + " of " + std::to_string(sweep.results.size()) +
                                     " recipes failed (" + first + ")"};
  return exit_ok;
}

int run_sweep(Io& io, const SweepArgs& a) {
  if (a.threads < 0) throw Failure{exit_usage, "--threads must be >= 0, not " + std::to_string(a.threads)};
  if (!a.model.empty()) {
    if (!a.specs.empty() || !a.distributions.empty() || !a.rotations.empty())
      throw Failure{exit_usage, "--specs, --distributions and --rotations belong to the tensor sweep (no --model)"};
    return run_model(io, a);
  }
  if (!a.text.empty() || !a.tokens.empty() || !a.recipes.empty() || a.ctx != 0 || a.layers || a.score_all ||
      a.threads != 0)
    throw Failure{exit_usage, "--text, --tokens, --recipes, --ctx, --layers, --score-all and --threads need --model"};
  return run_tensor(io, a);
}

}  // namespace

Command add_sweep_command(CLI::App& parent) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* app = parent.add_subcommand(
      "sweep", "Accuracy sweep: formats x scaling x rotation on built-in data, or recipes on a model (--model)");
  app->add_option("--model", a->model, "Llama checkpoint (llama2.c .bin, GGUF, safetensors): run a model sweep");
  app->add_option("--text", a->text, "Model sweep: text file, tokenized with the model's tokenizer");
  app->add_option("--tokens", a->tokens, "Model sweep: token ids, one per line");
  app->add_option("--recipes", a->recipes, "Model sweep: recipe names or files, comma-separated (default: `lowp recipes` sweep list)")
      ->delimiter(',');
  app->add_option("--ctx", a->ctx, "Model sweep: window length (default: the model's, or the token count)");
  app->add_flag("--score-all", a->score_all, "Model sweep: score every position, not the second half of each window");
  app->add_flag("--layers", a->layers, "Model sweep: also print the per-layer SQNR of every quantized tensor");
  app->add_option("--specs", a->specs, "Tensor sweep: quantization specs, comma-separated (default: every format)")
      ->delimiter(',');
  app->add_option("--distributions", a->distributions, "Tensor sweep: gaussian,laplace,student_t3,llm_activations")
      ->delimiter(',');
  app->add_option("--rotations", a->rotations, "Tensor sweep: none,hadamard,block32")->delimiter(',');
  app->add_option("--rows", a->rows, "Tensor sweep: rows of each tensor")->capture_default_str();
  app->add_option("--cols", a->cols, "Tensor sweep: columns of each tensor (the rotated, blocked dimension)")
      ->capture_default_str();
  app->add_option("--seed", a->seed, "Tensor sweep: seed of the data and the randomized Hadamard")->capture_default_str();
  app->add_option("--csv", a->csv, "Also write the results as CSV to this file");
  app->add_option("--json", a->json, "Also write the results as JSON to this file");
  app->add_option("--plot", a->plot, "Also write an SVG chart to this file");
  app->add_option("--threads", a->threads, "Model sweep: threads (default 0: all)");
  app->footer(
      "Without --model: every format x scaling granularity x rotation (none, randomized Hadamard,\n"
      "block Hadamard 32) on Gaussian, Laplace, Student-t (nu = 3) and LLM-like activations;\n"
      "prints SQNR (dB), MSE, max error and bits per element.\n"
      "With --model: the fp32 reference once, then each recipe on the same tokens; the table is\n"
      "sorted by mean KL divergence (llama.cpp's --kl-divergence statistics). A recipe producing\n"
      "NaN shows its nonfinite count. CSV columns and JSON keys: docs/sweep.md.\n"
      "Exit status: 0 success; 1 bad data (model, tokens, a recipe that failed: the results of\n"
      "the others are still written); 2 usage error.");
  return {app, [a](Io& io) { return run_sweep(io, *a); }};
}

}  // namespace lowp::cli
