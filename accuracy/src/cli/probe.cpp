// `lowp probe`: gradient fidelity of training recipes along one fp32 trajectory
// (train/probe/probe.hpp).
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

#include "cli/command.hpp"
#include "cli/model_shape.hpp"
#include "dist/comm.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/numerics/error.hpp"
#include "train/probe/probe.hpp"
#include "train/trainer.hpp"

namespace lowp::cli {
namespace {

struct ProbeArgs {
  accuracy::train::probe::Options o;
  ShapeArgs shape;
  std::string init, model, recipes, at;
};

int run_probe(Io& io, ProbeArgs a) {
  using namespace accuracy::train;
  probe::Options& o = a.o;
  if (o.corpus.empty()) throw Failure{exit_usage, "--corpus is required"};
  if (o.out.empty()) throw Failure{exit_usage, "--out is required"};
  if (a.recipes.empty()) throw Failure{exit_usage, "--recipes is required"};
  if (!a.init.empty() && !a.model.empty()) throw Failure{exit_usage, "give one of --init and --model"};
  if (o.threads < 0) throw Failure{exit_usage, "--threads must be >= 0, not " + std::to_string(o.threads)};
  if (o.batch < 1) throw Failure{exit_usage, "--batch must be positive, not " + std::to_string(o.batch)};
  if (!(o.lr > 0)) throw Failure{exit_usage, "--lr must be a positive number"};
  o.init = !a.init.empty() ? a.init : !a.model.empty() ? accuracy::resolve_model_path(a.model) : "";
  o.config = resolve_shape(a.shape, o.init);
  std::stringstream ss(a.recipes);
  for (std::string r; std::getline(ss, r, ',');)
    if (!r.empty()) o.recipes.push_back(r);
  o.at.clear();
  std::stringstream st(a.at);
  for (std::string s; std::getline(st, s, ',');) {
    try {
      std::size_t used = 0;
      o.at.push_back(std::stoi(s, &used));
      if (used != s.size()) throw std::invalid_argument(s);
    } catch (const std::logic_error&) {
      throw Failure{exit_usage, "--at: '" + s + "' is not a step number"};
    }
  }
  if (o.recipes.empty()) throw Failure{exit_usage, "--recipes: give at least one recipe"};
  if (o.batches < 1) throw Failure{exit_usage, "--batches must be at least 1, not " + std::to_string(o.batches)};
  if (o.draws < 2) throw Failure{exit_usage, "--draws must be at least 2 (the variance needs two), not " + std::to_string(o.draws)};
  for (std::size_t i = 0; i < o.at.size(); ++i)
    if (o.at[i] < 0 || (i && o.at[i] <= o.at[i - 1])) throw Failure{exit_usage, "--at: steps must be increasing and >= 0"};
  if (o.at.empty()) throw Failure{exit_usage, "--at: give at least one step"};
  const std::vector<probe::Row> rows = probe::run_probe(o, [&](const std::string& line) {
    io.err << line << "\n";
    io.err.flush();
  });
  if (accuracy::dist::rank() != 0) return exit_ok;
  probe::write_probe(o.out, rows, o);
  io.out << "recipe          step  rel_mse     bias2       variance    cosine   noise_ratio\n";
  char buf[200];
  for (const probe::Row& r : rows) {
    if (r.tensor != "model" || r.gemm != "grad") continue;
    std::snprintf(buf, sizeof buf, "%-15s %4d  %.3e  %+.3e  %.3e  %.5f  %.3g%s\n", r.recipe.c_str(), r.step, r.rel_mse.mean,
                  r.bias2.mean, r.variance, r.cosine, r.noise_ratio, r.noise_ratio < 1.7320508075688772 ? " (< sqrt 3: stalls)" : "");
    io.out << buf;
  }
  io.out << "wrote " << o.out << "/probe.csv, probe.json and probe.svg (the fp32 trajectory in " << o.out << "/fp32)\n";
  return exit_ok;
}

}  // namespace

Command add_probe_command(CLI::App& parent) {
  auto a = std::make_shared<ProbeArgs>();
  a->at = "0,100,300";
  CLI::App* app = parent.add_subcommand("probe", "Gradient fidelity of training recipes along one fp32 trajectory: "
                                                 "per GEMM and tensor the error, bias and variance against float32");
  app->add_option("--init", a->init, "Start from MODEL (llama2.c .bin, GGUF, Hugging Face folder); the corpus goes through its tokenizer");
  app->add_option("--model", a->model, "A built-in model (shakespeare), as --init");
  app->add_option("--corpus", a->o.corpus, "Text file: the trajectory trains on its first 90%, the held batches come from the last 10%");
  app->add_option("--recipes", a->recipes, "Comma-separated training recipes (built-in names or files)");
  app->add_option("--at", a->at, "Steps of the fp32 trajectory to probe at (increasing)")->capture_default_str();
  app->add_option("--batches", a->o.batches, "Held batches per stop (the intervals are over them)")->capture_default_str();
  app->add_option("--draws", a->o.draws, "Draws of each recipe's gradient per batch (>= 2)")->capture_default_str();
  app->add_option("--batch", a->o.batch, "Windows per batch")->capture_default_str();
  add_shape_options(app, a->shape);  // as lowp train's: a probe of a comparison's model
  app->add_option("--lr", a->o.lr, "Peak learning rate of the fp32 trajectory")->capture_default_str();
  app->add_option("--seed", a->o.seed, "Seed of the initial weights, the batches and the draws")->capture_default_str();
  app->add_option("--out", a->o.out, "Output directory: probe.csv, probe.json, probe.svg, fp32/ (the trajectory)");
  app->add_option("--threads", a->o.threads, "Threads (default 0: all); results do not depend on it");
  app->footer(
      "Per (recipe, step, layer, tensor, gemm): rel_mse, bias2 (unbiased), variance, cosine, proj,\n"
      "noise_ratio = |g| / sqrt(E|g^ - g|^2) (below sqrt 3 quantized training stalls), loss_delta,\n"
      "the operands' saturated / flushed shares and the block scales' log2 spread; 95% intervals over\n"
      "the batches. docs/training.md, \"Reading the probe\". Under mpirun the (recipe, step) jobs are\n"
      "dealt to the ranks; the files are the same bytes as one process's.");
  return {app, [a](Io& io) { return run_probe(io, *a); }};
}

}  // namespace lowp::cli
