// The model sweep across MPI ranks: run it as `OMP_NUM_THREADS=1 mpirun -np 2 bench_mpi_sweep`.
// Each iteration runs the same sweep twice, on rank 0 alone (the others wait in the gather)
// and split across every rank, interleaved so both see the same machine; the time reported is
// the split run's, with the 1-rank time and the speedup as counters (rank 0 reports; the other
// ranks run the same fixed number of iterations silently, as the sweep is collective).
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "../eval/synthetic_llama.hpp"
#include "dist/comm.hpp"
#include "rank_main.hpp"
#include "lowp/accuracy/model_sweep.hpp"
#include "sweep/split.hpp"

namespace {

using namespace lowp::accuracy;

double seconds(const detail::SweepJob& job, int ranks) {
  dist::barrier();
  const auto t0 = std::chrono::steady_clock::now();
  const ModelSweep s = detail::run_split(job, ranks, {});
  benchmark::DoNotOptimize(s.ref_ppl);
  dist::barrier();  // the sweep ends when rank 0 has assembled it
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_mpi_sweep(benchmark::State& state) {
  // 4 layers, dim 256, vocab 512; 1024 tokens in 8 windows of 128; the reference and 3 recipes.
  static const LlamaModel model = lowp::bench::synthetic_llama(256, 768, 4, 8, 512, 128, 7);
  std::vector<int> tokens(1024);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>((i * 7919 + 13) % 512);
  const std::vector<Recipe> recipes = {find_recipe("bf16"), find_recipe("mxfp4"), find_recipe("kv4")};
  EvalOptions opt;
  opt.ctx = 128;
  opt.threads = 1;  // each rank one thread
  const detail::SweepJob job{model, tokens, recipes, opt, nullptr, false};
  double one = 0, all = 0;
  for (auto _ : state) {
    one += seconds(job, 1);
    const double t = seconds(job, dist::size());
    all += t;
    state.SetIterationTime(t);
  }
  state.counters["ranks"] = dist::size();
  state.counters["seconds_1rank"] = one / static_cast<double>(state.iterations());
  state.counters["seconds_Nranks"] = all / static_cast<double>(state.iterations());
  state.counters["speedup"] = one / all;
}
// A fixed iteration count: every rank must run the collective sweep equally often.
BENCHMARK(BM_mpi_sweep)->Iterations(2)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) { return lowp::bench::run_on_every_rank(argc, argv); }
