// `lowp sweep`: the tensor-level sweep (no --model), or a model sweep over recipes.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/recipe_option.hpp"
#include "dist/comm.hpp"
#include "file/atomic_file.hpp"
#include "lowp/accuracy/base_logits.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/model_sweep.hpp"
#include "lowp/accuracy/report.hpp"
#include "lowp/accuracy/sensitivity.hpp"
#include "lowp/accuracy/tensor_sweep.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::cli {
namespace {

struct SweepArgs {
  // Model sweep.
  std::string model, text, tokens, bos = "auto", max_memory;
  std::vector<std::string> recipes;
  std::vector<std::string> sensitivity;  // --sensitivity: per-tensor sensitivity to these specs
  std::optional<int> ctx;
  bool score_all = false, layers = false;
  std::string base_logits, save_base_logits;  // llama.cpp's --kl-divergence-base files
  // Tensor sweep.
  std::size_t rows = 256, cols = 4096;
  std::uint64_t seed = 1;
  std::vector<std::string> specs, distributions, rotations;
  // Both.
  std::string csv, json, plot;
  int threads = 0;
  bool tensors = false;  // --tensors, or any tensor-sweep option given
  CalibArgs calib;       // model sweep: recipes with weights.calibrate
};

// Writes a file through `write`, atomically (a temporary beside it, then a rename): an
// interrupted sweep never leaves a half-written CSV/JSON/SVG where a script expects a whole one.
void write_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path.empty()) return;
  std::ostringstream text;
  write(text);
  accuracy::detail::write_file_atomic(path, std::move(text).str());
}

// A one-line progress bar redrawn in place, only when stderr is the terminal (rank 0's under mpirun).
class ProgressBar {
 public:
  explicit ProgressBar(Io& io)
      : err_(io.err), on_(&io.err == &std::cerr && isatty(STDERR_FILENO) && accuracy::dist::rank() == 0) {}
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
  opt.threads = a.threads;
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
  if (accuracy::dist::rank() != 0) return exit_ok;  // rank 0 prints and writes
  bar.update("", 1.0);
  accuracy::write_tensor_sweep_table(io.out, rows, opt);
  write_file(a.csv, [&](std::ostream& f) { accuracy::write_tensor_sweep_csv(f, rows); });
  write_file(a.json, [&](std::ostream& f) { accuracy::write_tensor_sweep_json(f, rows, opt); });
  write_file(a.plot, [&](std::ostream& f) { accuracy::write_tensor_sweep_svg(f, rows, opt); });
  return exit_ok;
}

// llama.cpp evaluates each chunk of a base-logits file with its first token replaced by BOS
// when the vocabulary adds one, which shows as the file's first token being BOS: do the same.
void bos_per_window(std::vector<int>& tokens, int ctx, const std::string& model, int vocab) {
  int bos = -1;
  try {
    bos = accuracy::tokenizer_for_model(model, vocab).bos();
  } catch (const Error&) {
    return;  // no tokenizer: the tokens are fed as stored
  }
  if (bos < 0 || tokens.empty() || tokens[0] != bos) return;
  for (std::size_t i = 0; i < tokens.size(); i += static_cast<std::size_t>(ctx)) tokens[i] = bos;
}

bool zero_seconds() {  // a test hook (docs/sweep.md): runs compared byte for byte
  const char* zero = std::getenv("LOWP_TEST_ZERO_SECONDS");
  return zero && *zero && std::string(zero) != "0";
}

// --sensitivity: each tensor alone quantized to each spec (sensitivity.hpp).
int run_sensitivity(Io& io, const SweepArgs& a, const accuracy::LlamaModel& model, const std::vector<int>& tokens,
                    const accuracy::EvalOptions& opt, const accuracy::EvalRun* base, ProgressBar& bar) {
  accuracy::Sensitivity s = accuracy::run_sensitivity(
      model, tokens, a.sensitivity, opt, [&bar](std::string_view what, double f) { bar.update(what, f); }, base);
  if (accuracy::dist::rank() != 0) return exit_ok;
  s.sweep.model = a.model;
  if (base) s.sweep.reference = "llama.cpp base logits";
  if (zero_seconds())
    for (auto& r : s.rows) r.seconds = 0;
  bar.update("", 1.0);
  accuracy::write_sensitivity_table(io.out, s);
  write_file(a.csv, [&](std::ostream& f) { accuracy::write_sensitivity_csv(f, s); });
  write_file(a.json, [&](std::ostream& f) { accuracy::write_sensitivity_json(f, s); });
  write_file(a.plot, [&](std::ostream& f) { accuracy::write_sensitivity_svg(f, s); });
  std::size_t failed = 0;
  std::string first;
  for (const auto& r : s.rows)
    if (!r.error.empty() && failed++ == 0) first = r.t.key() + " @ " + r.spec + ": " + r.error;
  if (failed)
    throw Failure{exit_bad_data, std::to_string(failed) + " of " + std::to_string(s.rows.size()) +
                                     " (tensor, spec) runs failed (" + first + ")"};
  return exit_ok;
}

int run_model(Io& io, const SweepArgs& a) {
  const bool base = !a.base_logits.empty();
  if (base && !a.save_base_logits.empty())
    throw Failure{exit_usage, "--base-logits and --save-base-logits exclude each other"};
  if (base && (!a.text.empty() || !a.tokens.empty() || a.bos != "auto"))
    throw Failure{exit_usage, "--base-logits brings its own tokens: drop --text / --tokens / --bos"};
  if ((base || !a.save_base_logits.empty()) && a.score_all)
    throw Failure{exit_usage, "base logits score the second half of each window, as llama.cpp: drop --score-all"};
  if (!base && a.text.empty() == a.tokens.empty())
    throw Failure{exit_usage, "--model needs exactly one of --text and --tokens (or --base-logits)"};
  const bool sens = !a.sensitivity.empty();
  if (sens && !a.recipes.empty()) throw Failure{exit_usage, "--sensitivity and --recipes exclude each other"};
  // Unknown recipe names and specs are usage errors, found before any evaluation.
  std::vector<accuracy::Recipe> recipes;
  try {
    for (const auto& spec : a.sensitivity) quant::parse_quant_spec(spec);
  } catch (const Error& e) {
    throw Failure{exit_usage, e.what()};
  }
  if (!sens)
    for (const auto& name : a.recipes.empty() ? accuracy::default_sweep_recipes() : a.recipes)
      recipes.push_back(recipe_option(name, "sweep", io.err));
  apply_max_memory(a.max_memory);
  const std::string path = accuracy::resolve_model_path(a.model);
  const accuracy::LlamaModel model = accuracy::load_model(path, accuracy::WeightStorage::mapped);
  accuracy::BaseLogits reference;
  std::vector<int> tokens;
  std::optional<int> ctx = a.ctx;
  if (base) {
    reference = accuracy::read_base_logits(a.base_logits);
    if (reference.run.vocab != static_cast<std::size_t>(model.config.vocab_size))
      throw Failure{exit_bad_data, quote_input(a.base_logits) + " has n_vocab " + std::to_string(reference.run.vocab) +
                                       ", the model's vocabulary is " + std::to_string(model.config.vocab_size)};
    if (ctx && *ctx != reference.ctx)
      throw Failure{exit_usage, "--ctx " + std::to_string(*ctx) + " differs from the base logits' n_ctx " +
                                    std::to_string(reference.ctx)};
    ctx = reference.ctx;
    tokens = reference.tokens;
    bos_per_window(tokens, *ctx, path, model.config.vocab_size);
  }
  std::ostream null_stream(nullptr);  // under mpirun, warnings once: rank 0's
  check_ctx_option(ctx, model.config.seq_len, accuracy::dist::rank() == 0 ? io.err : null_stream);
  int window_bos = -1;
  if (!base) {
    auto read = read_eval_tokens(a.tokens, a.text, path, model.config.vocab_size, a.bos);
    tokens = std::move(read.ids);
    window_bos = read.window_bos;
  }

  accuracy::EvalOptions opt;
  opt.ctx = ctx.value_or(0);
  opt.bos = window_bos;
  opt.score_all = a.score_all;
  opt.threads = a.threads;
  opt.calib = calibration_text(a.calib, path, model.config.vocab_size, a.bos, io.err);
  for (const auto& r : recipes) require_calibration(r, opt.calib.get());
  if (opt.calib && accuracy::dist::rank() == 0)
    warn_if_overlap(opt.calib->tokens, tokens, io.err);
  ProgressBar bar(io);
  if (sens) {
    if (!a.save_base_logits.empty()) throw Failure{exit_usage, "--save-base-logits belongs to a recipe sweep"};
    return run_sensitivity(io, a, model, tokens, opt, base ? &reference.run : nullptr, bar);
  }
  accuracy::ModelSweep sweep = accuracy::run_model_sweep(
      model, tokens, recipes, opt, [&bar](std::string_view what, double f) { bar.update(what, f); },
      base ? &reference.run : nullptr, !a.save_base_logits.empty());
  if (accuracy::dist::rank() != 0) return exit_ok;  // rank 0 prints and writes
  sweep.model = a.model;
  if (zero_seconds()) {
    sweep.ref_seconds = 0;
    for (auto& r : sweep.results) r.seconds = 0;
  }
  if (base) sweep.reference = "llama.cpp base logits";
  bar.update("", 1.0);
  if (!a.save_base_logits.empty()) accuracy::write_base_logits(a.save_base_logits, sweep.ctx, tokens, sweep.reference_run);

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

int run_sweep(Io& io, SweepArgs a) {
  if (!a.tensors && a.model.empty()) {  // the default job: lowp's own model on held-out Shakespeare
    a.model = accuracy::resolve_model_path("shakespeare");
    if (a.text.empty() && a.tokens.empty() && a.base_logits.empty())
      a.text = (std::filesystem::path(a.model).parent_path() / "heldout.txt").string();
  }
  if (!a.model.empty()) {
    if (!a.specs.empty() || !a.distributions.empty() || !a.rotations.empty())
      throw Failure{exit_usage, "--specs, --distributions and --rotations belong to the tensor sweep (no --model)"};
    return run_model(io, a);
  }
  if (!a.text.empty() || !a.tokens.empty() || !a.recipes.empty() || !a.sensitivity.empty() || a.ctx || a.layers || a.score_all ||
      !a.base_logits.empty() || !a.save_base_logits.empty())
    throw Failure{exit_usage, "--text, --tokens, --recipes, --sensitivity, --ctx, --layers, --score-all, --base-logits and "
                              "--save-base-logits belong to the model sweep, not --tensors"};
  if (a.bos != "auto") throw Failure{exit_usage, "--bos belongs to the model sweep with --text"};
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
  app->add_option("--bos", a->bos, "Model sweep with --text: BOS on, off, or auto (the tokenizer's add_bos_token)")->capture_default_str();
  app->add_option("--recipes", a->recipes, "Model sweep: recipe names or files, comma-separated (default: `lowp recipes` sweep list)")
      ->delimiter(',');
  app->add_option("--sensitivity", a->sensitivity,
                  "Model sweep: instead of recipes, each tensor alone quantized to each of these specs "
                  "(comma-separated): KLD and delta ln PPL per (tensor, spec)")
      ->delimiter(',');
  add_number_option<int>(app, "--ctx", a->ctx, INT_MIN, INT_MAX,
                         "Model sweep: window length in [2, 1048576] (default: the model's seq_len, or the token count; "
                         "past seq_len with a warning)");
  app->add_flag("--score-all", a->score_all, "Model sweep: score every position, not the second half of each window");
  app->add_flag("--layers", a->layers, "Model sweep: also print the per-layer SQNR of every quantized tensor");
  add_calib_options(app, a->calib);
  app->add_option("--base-logits", a->base_logits,
                  "Model sweep: llama.cpp's --kl-divergence-base file as the reference (its tokens and n_ctx)");
  app->add_option("--save-base-logits", a->save_base_logits,
                  "Model sweep: write the fp32 reference as a file llama.cpp's --kl-divergence reads");
  app->add_option("--specs", a->specs, "Tensor sweep: quantization specs, comma-separated (default: every format)")
      ->delimiter(',');
  app->add_option("--distributions", a->distributions, "Tensor sweep: gaussian,laplace,student_t3,llm_activations")
      ->delimiter(',');
  app->add_option("--rotations", a->rotations, "Tensor sweep: none,hadamard,block32")->delimiter(',');
  const std::size_t max_values = accuracy::max_tensor_sweep_values;
  add_number_option<std::size_t>(app, "--rows", a->rows, 1, max_values, "Tensor sweep: rows of each tensor (default 256)");
  add_number_option<std::size_t>(app, "--cols", a->cols, 1, max_values,
                                 "Tensor sweep: columns of each tensor, the rotated, blocked dimension (default 4096)");
  add_number_option<std::uint64_t>(app, "--seed", a->seed, 0, UINT64_MAX,
                                   "Tensor sweep: seed of the data and the randomized Hadamard (default 1)");
  app->add_option("--csv", a->csv, "Also write the results as CSV to this file");
  app->add_option("--json", a->json, "Also write the results as JSON to this file");
  app->add_option("--plot", a->plot, "Also write an SVG chart to this file");
  add_number_option<int>(app, "--threads", a->threads, 0, max_threads, "Threads (default 0: all); results do not depend on it");
  app->add_flag("--tensors", a->tensors, "Run the tensor sweep (implied by --specs, --distributions, --rotations, --rows, --cols, --seed)");
  add_max_memory_option(app, a->max_memory);
  app->footer(
      "Without arguments: the model sweep of lowp's own model (--model shakespeare) on held-out\n"
      "Shakespeare text (the last 10% of the corpus it was trained on).\n"
      "--tensors: every format x scaling granularity x rotation (none, randomized Hadamard,\n"
      "block Hadamard 32) on Gaussian, Laplace, Student-t (nu = 3) and LLM-like activations;\n"
      "prints SQNR (dB), MSE, max error and bits per element.\n"
      "With --model: the fp32 reference once, then each recipe on the same tokens; the table is\n"
      "sorted by mean KL divergence (llama.cpp's --kl-divergence statistics). A recipe producing\n"
      "NaN shows its nonfinite count. CSV columns and JSON keys: docs/sweep.md.\n"
      "--base-logits FILE replaces the fp32 reference by llama.cpp's log-probabilities (from\n"
      "llama-perplexity --kl-divergence-base FILE): the file's tokens in windows of its n_ctx, each\n"
      "window starting with BOS when the file's first token is the model's BOS, as llama.cpp does.\n"
      "--save-base-logits FILE writes lowp's fp32 reference in that format (complete windows only).\n"
      "Exit status: 0 success; 1 bad data (model, tokens, a recipe that failed: the results of\n"
      "the others are still written); 2 usage error.");
  return {app, [a, app](Io& io) {
            for (const char* o : {"--specs", "--distributions", "--rotations", "--rows", "--cols", "--seed"})
              if (app->count(o) > 0) a->tensors = true;
            return run_sweep(io, *a);
          }};
}

}  // namespace lowp::cli
