// The two `lowp sweep` jobs, timed once each (targets: within 60 s on 2 cores).
//
// BM_tensor_sweep_default: `lowp sweep` without a model, the default job: 4 distributions of
// 256 x 4096 values x 34 specs x 3 rotations.
//
// BM_sweep_shared_model: `lowp sweep --model` on the shared stories260K checkpoint with the
// default recipe list (16 recipes, plus the fp32 reference), over 4096 tokens on 2 threads.
//
// The model has no tokenizer, so the 4096 ids are the 256 ids of
// ../shared/data/stories260K_ref/seqA_tokens.txt (a sample of the model itself, BOS first)
// repeated 16 times, evaluated in windows of 256: every window is that real sequence, so the
// statistics are those of seqA while the work is that of 4096 tokens.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/model_sweep.hpp"
#include "lowp/accuracy/tensor_sweep.hpp"
#include "lowp/accuracy/tokenizer.hpp"

namespace {

// ../shared beside the project root, found from this file's path (bench/eval/ in the project).
const std::string kShared = (std::filesystem::path(__FILE__).parent_path() / "../../../shared").lexically_normal().string();

void BM_tensor_sweep_default(benchmark::State& state) {
  const lowp::accuracy::TensorSweepOptions opt;  // the defaults of `lowp sweep`
  std::size_t passes = 0;
  for (auto _ : state) {
    const auto rows = lowp::accuracy::run_tensor_sweep(opt);
    passes = rows.size();
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["passes"] = static_cast<double>(passes);
  state.counters["values_per_pass"] = static_cast<double>(opt.rows * opt.cols);
}
BENCHMARK(BM_tensor_sweep_default)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

void BM_sweep_shared_model(benchmark::State& state) {
  const std::string model_path = kShared + "/models/stories260K.bin";
  const std::string tokens_path = kShared + "/data/stories260K_ref/seqA_tokens.txt";
  if (!std::filesystem::exists(model_path) || !std::filesystem::exists(tokens_path)) {
    state.SkipWithError("../shared/models/stories260K.bin or seqA_tokens.txt is absent: sweep benchmark skipped");
    for (auto _ : state) {
    }
    return;
  }
  using namespace lowp::accuracy;
  const LlamaModel model = load_model(model_path);
  const std::vector<int> seq = read_token_file(tokens_path, model.config.vocab_size);
  std::vector<int> tokens;
  while (tokens.size() < 4096) tokens.insert(tokens.end(), seq.begin(), seq.end());
  tokens.resize(4096);
  std::vector<Recipe> recipes;
  for (const auto& name : default_sweep_recipes()) recipes.push_back(find_recipe(name));
  EvalOptions opt;
  opt.ctx = static_cast<int>(seq.size());
  opt.threads = static_cast<int>(state.range(0));

  std::size_t failed = 0;
  for (auto _ : state) {
    const ModelSweep s = run_model_sweep(model, tokens, recipes, opt);
    failed = 0;
    for (const auto& r : s.results) failed += !r.error.empty();
    benchmark::DoNotOptimize(s.results.data());
  }
  state.counters["tokens"] = static_cast<double>(tokens.size());
  state.counters["recipes"] = static_cast<double>(recipes.size());
  state.counters["failed_recipes"] = static_cast<double>(failed);
  state.counters["tokens_per_second"] =
      benchmark::Counter(static_cast<double>(tokens.size() * (recipes.size() + 1)), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_sweep_shared_model)->Arg(2)->ArgName("threads")->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
