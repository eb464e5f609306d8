// bench_train's BM_probe: the probe's passes at one stop (train/probe/probe.hpp: per held batch
// one fp32 forward + backward, shared by the recipes, and per recipe D forwards + backwards with
// the gradient and GEMM measures) against the same number of plain training steps (zero grads,
// forward, backward, the recipe's optimizer) of fp32 and of each recipe, on the default "small"
// config, batches of 8 windows of 128 tokens.
//   BM_probe   counter x_steps = the probe's CPU time / those training steps' CPU time, both in
//              this process (the trajectory's fp32 steps, plain training steps, are left out of
//              both: with them the ratio only comes closer to 1). The probe runs only draw 0 (and
//              one check draw) of a recipe whose passes do not read their seed (bf16,
//              fp8-tensorwise, mxfp8 and nvfp4 here: probe.hpp's reuse_seed_free); counter
//              x_steps_every_draw = the same with every draw run, the probe's own cost per pass.
#include <benchmark/benchmark.h>

#include <ctime>
#include <string>
#include <vector>

#include "train/probe/probe.hpp"
#include "train_setup.hpp"

namespace {

using namespace lowp::accuracy;
constexpr std::size_t kBatch = 8, kCtx = 128;
constexpr int kBatches = 2, kDraws = 4;
const std::vector<std::string> kRecipes = {"bf16", "fp8-tensorwise", "mxfp8", "nvfp4"};

double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

void probe_vs_steps(benchmark::State& state) {
  std::vector<std::unique_ptr<lowp::bench::TrainSetup>> setups;
  setups.push_back(std::make_unique<lowp::bench::TrainSetup>("fp32", kBatch, kCtx));
  for (const std::string& r : kRecipes) setups.push_back(std::make_unique<lowp::bench::TrainSetup>(r, kBatch, kCtx));
  const LlamaModel theta = setups[0]->net->to_model();
  std::vector<train::probe::Batch> batches(kBatches, {setups[0]->tok, setups[0]->tgt});
  train::probe::PointOptions po;
  po.draws = kDraws, po.batch = kBatch, po.ctx = kCtx;
  std::vector<lowp::train::TrainRecipe> recipes;
  for (const std::string& r : kRecipes) recipes.push_back(lowp::train::find_train_recipe(r));
  const auto step = [](lowp::bench::TrainSetup& s) {
    s.net->zero_grad();
    s.net->forward(s.tok, s.tgt, kBatch, kCtx, 0, ++s.step);
    s.net->backward(0, s.step);
    s.optimizer_step();
  };
  train::probe::PointOptions every = po;
  every.reuse_seed_free = false;
  double probe_cpu = 0, every_cpu = 0, steps_cpu = 0;
  for (auto _ : state) {
    for (const auto* o : {&po, &every}) {
      const double t0 = cpu_now();
      const train::probe::Reference ref = train::probe::fp32_reference(theta, batches, *o);
      for (const auto& r : recipes) benchmark::DoNotOptimize(train::probe::probe_point(theta, r, batches, *o, ref));
      (o == &po ? probe_cpu : every_cpu) += cpu_now() - t0;
    }
    const double t0 = cpu_now();
    for (int b = 0; b < kBatches; ++b) step(*setups[0]);
    for (std::size_t i = 1; i < setups.size(); ++i)
      for (int n = 0; n < kBatches * kDraws; ++n) step(*setups[i]);
    steps_cpu += cpu_now() - t0;
  }
  state.counters["x_steps"] = probe_cpu / steps_cpu;
  state.counters["x_steps_every_draw"] = every_cpu / steps_cpu;
}

}  // namespace

BENCHMARK(probe_vs_steps)->Name("BM_probe")->Unit(benchmark::kMillisecond)->UseRealTime();
