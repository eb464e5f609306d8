// `lowp train`: trains a byte-level Llama on a text corpus under a recipe (or several), or
// fine-tunes a checkpoint lowp evaluates (--init) on its own tokens.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/command.hpp"
#include "cli/model_shape.hpp"
#include "dist/comm.hpp"
#include "lowp/numerics/error.hpp"
#include "recipe/key_value.hpp"
#include "recipe/train_recipe.hpp"
#include "train/compare.hpp"
#include "train/trainer.hpp"

namespace lowp::cli {
namespace {

struct TrainArgs {
  accuracy::train::TrainOptions o;
  ShapeArgs shape;
  std::string recipes, resume;
  int seeds = 1;
};

std::string duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

// A progress bar redrawn in place on a terminal; plain lines (every 2% of the steps and at
// every evaluation) otherwise.
class Progress {
 public:
  Progress(Io& io) : io_(io), tty_(&io.err == &std::cerr && isatty(2)) {}
  void operator()(const std::string& label, const accuracy::train::StepInfo& s) {
    const double eta = s.elapsed_seconds / s.step * (s.steps - s.step);
    char buf[256];
    if (tty_) {
      const int w = 24, done = s.steps ? w * s.step / s.steps : w;
      std::snprintf(buf, sizeof buf, "\r%s[%s%s] step %d/%d loss %.4f tok/s %.0f ETA %s   ", label.c_str(),
                    std::string(static_cast<std::size_t>(done), '#').c_str(), std::string(static_cast<std::size_t>(w - done), '.').c_str(),
                    s.step, s.steps, s.train_loss, s.tokens_per_second, duration(eta).c_str());
      io_.err << buf;
      if (s.evaluated) {
        std::snprintf(buf, sizeof buf, "\n%sstep %d val_loss %.4f\n", label.c_str(), s.step, s.val_loss);
        io_.err << buf;
      }
      io_.err.flush();
      return;
    }
    if (!s.evaluated && s.step % std::max(1, s.steps / 50) != 0) return;
    std::snprintf(buf, sizeof buf, "%sstep %d/%d train_loss %.4f%s lr %.3g tok/s %.0f ETA %s\n", label.c_str(), s.step,
                  s.steps, s.train_loss, s.evaluated ? (" val_loss " + std::to_string(s.val_loss)).c_str() : "", s.lr,
                  s.tokens_per_second, duration(eta).c_str());
    io_.out << buf;
    io_.out.flush();
  }

 private:
  Io& io_;
  bool tty_;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) v.push_back(x);
  return v;
}

// The comparison's table on stdout: per recipe the (mean) final loss and the gap to fp32; with
// several seeds the standard error, the seed-paired 95% interval and whether the gap is larger
// than the noise.
void report_comparison(Io& io, const std::vector<accuracy::train::RecipeRun>& runs, const accuracy::train::TrainOptions& o) {
  using namespace accuracy::train;
  const std::vector<SeedStats> stats = comparison_stats(runs);
  const std::size_t k = runs.empty() ? 1 : runs[0].seeds.size();
  char buf[512];
  int w = 15;  // the recipe column: as wide as the longest name (a recipe file's name is any length)
  for (const RecipeRun& r : runs) w = std::max(w, static_cast<int>(std::min<std::size_t>(r.recipe.size(), 200)));
  const std::string pad(static_cast<std::size_t>(w - 15), ' ');
  if (k == 1) {
    io.out << "recipe          " << pad << "final_val_loss  gap_pct\n";
    for (std::size_t i = 0; i < runs.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%-*s %14.4f %8.2f\n", w, runs[i].recipe.c_str(), stats[i].mean, stats[i].gap_pct);
      io.out << buf;
    }
    io.out << "one seed: no noise estimate (--seeds K trains each recipe from K seeds)\n";
  } else {
    std::snprintf(buf, sizeof buf, "%zu seeds (%llu..%llu), the same for every recipe; gap to fp32 paired by seed, 95%% Student-t interval (t = %.3f, %zu dof)\n",
                  k, static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(o.seed + k - 1), t_quantile_975(static_cast<int>(k) - 1), k - 1);
    io.out << buf;
    io.out << "recipe          " << pad << "mean_val_loss       se  gap_pct  95% interval (%)     gap vs noise\n";
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const SeedStats& s = stats[i];
      std::snprintf(buf, sizeof buf, "%-*s %13.4f %8.4f %+8.2f  [%+7.2f, %+7.2f]   %s\n", w, runs[i].recipe.c_str(), s.mean, s.se, s.gap_pct, s.gap_pct_lo,
                    s.gap_pct_hi, runs[i].recipe == "fp32" ? "(reference)" : s.exceeds_noise ? "LARGER than the noise" : "within the noise");
      io.out << buf;
    }
  }
  if (o.grad_comm != "fp32")
    io.out << "gradients communicated in " << o.grad_comm << " (each run trained by one rank): SQNR per recipe in summary.csv\n";
  io.out << "wrote " << o.out << "/summary.csv" << (k > 1 ? ", " + o.out + "/seeds.csv" : std::string()) << " and " << o.out << "/loss.svg\n";
}

int run_train(Io& io, TrainArgs a) {
  using namespace accuracy::train;
  TrainOptions& o = a.o;
  const bool resume = !a.resume.empty();
  if (resume) {
    if (!a.recipes.empty()) throw Failure{exit_usage, "--resume continues one run; it does not take --recipes"};
    o.out = a.resume;
  } else {
    if (o.corpus.empty()) throw Failure{exit_usage, "--corpus is required"};
    if (o.out.empty()) throw Failure{exit_usage, "--out is required"};
    o.config = resolve_shape(a.shape, o.init);
  }
  if (o.threads < 0) throw Failure{exit_usage, "--threads must be >= 0, not " + std::to_string(o.threads)};
  if (a.seeds < 1) throw Failure{exit_usage, "--seeds must be at least 1, not " + std::to_string(a.seeds)};
  if (a.seeds > 1 && a.recipes.empty())
    throw Failure{exit_usage, "--seeds compares recipes over seeds: give --recipes (one recipe and fp32: --recipes NAME)"};
  const bool lead = accuracy::dist::rank() == 0;  // under mpirun rank 0 alone prints
  if (!resume)  // an unknown or malformed recipe is a usage error, found before anything runs
    for (const std::string& name : a.recipes.empty() ? std::vector<std::string>{o.recipe} : split(a.recipes)) {
      lowp::train::TrainRecipe r;
      try {
        r = lowp::train::find_train_recipe(name);
      } catch (const Error& e) {
        throw Failure{exit_usage, e.what()};
      }
      const std::string note = accuracy::detail::not_applying(
          r.eval_only_keys, r.name, "train", "training runs the attention in float32 and has no KV cache, QuaRot, weight calibration or GGUF blocks");
      if (lead && !note.empty()) io.err << "lowp train: note: " << note << "\n";
    }
  Progress progress(io);
  if (!a.recipes.empty()) {
    const auto runs = compare_recipes(o, split(a.recipes), a.seeds, [&](const std::string& label, const StepInfo& s) { progress(label, s); });
    if (!lead) return exit_ok;
    report_comparison(io, runs, o);
    return exit_ok;
  }
  const TrainResult r = run_training(o, resume, [&](const StepInfo& s) { progress("", s); });
  if (!lead) return exit_ok;
  for (const std::string& note : r.notes) io.out << "note: " << note << "\n";
  char buf[160];
  if (o.grad_comm != "fp32" && !resume) {
    std::snprintf(buf, sizeof buf, "gradients communicated in %s across %d rank(s): mean SQNR %.1f dB\n", o.grad_comm.c_str(),
                  accuracy::dist::size(), r.grad_comm_sqnr_db);
    io.out << buf;
  }
  std::snprintf(buf, sizeof buf, "final val_loss %.4f nats/token; checkpoints in %s\n", r.final_val_loss, o.out.c_str());
  io.out << buf;
  return exit_ok;
}

}  // namespace

Command add_train_command(CLI::App& parent) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* app = parent.add_subcommand("train", "Train a byte-level Llama on a text corpus under a training recipe, "
                                                 "or fine-tune a checkpoint (--init)");
  app->add_option("--corpus", a->o.corpus, "Text file; each byte is one token (with --init: the model's own tokens), "
                                           "the last 10% is held out");
  app->add_option("--init", a->o.init, "Fine-tune MODEL: a llama2.c .bin, GGUF (any weight type, dequantized to float32 "
                                       "master weights) or Hugging Face folder; its shape and architecture are kept "
                                       "(no --config/--dim/...), the corpus is tokenized with its tokenizer");
  app->add_option("--recipe", a->o.recipe, "Training recipe: a built-in name (`lowp recipes`, training section) or a training recipe file (docs/training.md)")->capture_default_str();
  app->add_option("--recipes", a->recipes, "Comma-separated training recipes (names or files) trained alike into DIR/<name>/ (fp32 always included), "
                                            "then DIR/summary.csv and DIR/loss.svg");
  app->add_option("--seeds", a->seeds, "With --recipes: train each recipe from K seeds (--seed, --seed+1, ...: initial weights and batch order), "
                  "the same for every recipe, into DIR/<name>/seed<S>/; summary.csv gains the standard error and the seed-paired "
                  "95% interval of the gap to fp32")->capture_default_str();
  app->add_option("--steps", a->o.steps, "Optimizer steps (with --resume: the total to reach)")->required();
  app->add_option("--seed", a->o.seed, "Seed of the initial weights and the batch order")->capture_default_str();
  app->add_option("--out", a->o.out, "Output directory DIR: log.csv, model.bin, model.gguf, model.safetensors + config.json, state.bin");
  app->add_option("--threads", a->o.threads, "Threads (default 0: all); results do not depend on it");
  add_shape_options(app, a->shape);
  app->add_option("--batch", a->o.batch, "Windows per step")->capture_default_str();
  app->add_option("--micro-batch", a->o.micro_batch, "Windows per micro-batch (default: --batch); the step's gradient is the "
                  "micro-batches' sum in order, and under mpirun the micro-batches are dealt to the ranks");
  app->add_option("--grad-comm", a->o.grad_comm, "How each rank's gradient is communicated: fp32 (exact), bf16, e4m3, e5m2, mxfp8 "
                  "(emulated low-precision all-reduce; log.csv gains grad_comm_sqnr_db)")->capture_default_str();
  app->add_option("--lr", a->o.lr, "Peak learning rate (warmup, then cosine to 10%)")->capture_default_str();
  app->add_option("--eval-every", a->o.eval_every, "Validation every N steps (and at the last)")->capture_default_str();
  app->add_option("--save-every", a->o.save_every, "Checkpoint every N steps (0: at the end only)")->capture_default_str();
  app->add_option("--resume", a->resume, "Continue the run in DIR to --steps (its train.cfg gives the other options)");
  app->footer(
      "Writes DIR/log.csv (step,train_loss,val_loss,lr,grad_norm,tokens_per_second, then RMS(g^2/v)\n"
      "per layer) and, atomically, model.bin (llama2.c), model.gguf, model.safetensors + config.json\n"
      "and state.bin (weights and optimizer state for --resume). Same seed: bitwise the same\n"
      "log (but tokens_per_second) and checkpoints at any --threads. With --init the exports keep\n"
      "the model's architecture (GQA, untied classifier, biases, head_dim, RoPE theta and scaling,\n"
      "context length); model.bin only where llama2.c's format holds it (a note says otherwise).\n"
      "Under `mpirun -np N` the micro-batches of each step are dealt to the ranks and summed in\n"
      "order: the same log and checkpoints as one process (docs/training.md); --recipes are\n"
      "dealt to the ranks instead.");
  return {app, [a](Io& io) { return run_train(io, *a); }};
}

}  // namespace lowp::cli
