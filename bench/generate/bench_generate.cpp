// BM_generate/<model>: lowp::accuracy::Decoder (the fp32 recipe, one thread) feeds a sequence
// from position 1 to the model's seq_len, one token per step as `lowp generate` does, each
// step timed on the thread's CPU clock. Models: ../shared's stories260K (tinyllamas, seq_len
// 512) and a 110M-parameter Llama's shape (dim 768, 12 layers, 12 heads, hidden 2048, vocab
// 32000, seq_len 1024, random weights: bench/eval/synthetic_llama.hpp).
// Counters (medians over the first and the last 16 positions of the same run):
//   tokens_per_s_first, tokens_per_s_last   steps per CPU second at positions 1..16 and at the end
//   last_over_first                         time per token at the end / at the start (target <= 1.5)
//   rerun_last_over_step_last               evaluate() of the whole seq_len prefix (what generation
//                                           did for every token before the cache) / the last step
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../eval/synthetic_llama.hpp"
#include "lowp/accuracy/decoder.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"

namespace {

using namespace lowp::accuracy;

constexpr std::size_t kEdge = 16;  // positions in each of the first and last windows

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run(benchmark::State& state, const LlamaModel& m) {
  const std::size_t n = static_cast<std::size_t>(m.config.seq_len);
  std::mt19937 gen(21);
  std::vector<int> tokens(n);
  for (int& t : tokens) t = static_cast<int>(gen() % static_cast<unsigned>(m.config.vocab_size));
  const Recipe fp32 = find_recipe("fp32");
  std::vector<double> step(n, 1e300);  // per position: the fastest of the iterations
  for (auto _ : state) {
    Decoder d(m, fp32, n, 1);
    for (std::size_t p = 0; p < n; ++p) {
      const double t0 = thread_seconds();
      benchmark::DoNotOptimize(d.step(tokens[p]).data());
      step[p] = std::min(step[p], thread_seconds() - t0);
    }
  }
  const double first = median({step.begin(), step.begin() + kEdge});
  const double last = median({step.end() - kEdge, step.end()});
  EvalOptions opt;
  opt.threads = 1;
  const double t0 = thread_seconds();
  benchmark::DoNotOptimize(evaluate(m, tokens, fp32, opt).nll_sum);
  const double rerun = thread_seconds() - t0;
  state.counters["tokens_per_s_first"] = 1.0 / first;
  state.counters["tokens_per_s_last"] = 1.0 / last;
  state.counters["last_over_first"] = last / first;
  state.counters["rerun_last_over_step_last"] = rerun / last;
}

void BM_generate_stories260K(benchmark::State& state) {
  const std::string path = std::string(LOWP_SHARED_DIR) + "/models/tinyllamas/stories260K.bin";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("../shared/models/tinyllamas/stories260K.bin is absent");
    return;
  }
  static const LlamaModel m = load_model(path);
  run(state, m);
}
BENCHMARK(BM_generate_stories260K)->Name("BM_generate/stories260K")->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_generate_110M(benchmark::State& state) {
  static const LlamaModel m = lowp::bench::synthetic_llama(768, 2048, 12, 12, 32000, 1024, 110);
  run(state, m);
}
BENCHMARK(BM_generate_110M)->Name("BM_generate/110M")->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
