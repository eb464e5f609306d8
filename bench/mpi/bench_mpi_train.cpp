// bench_mpi_train: one data-parallel training step of the default `lowp train` config ("small",
// fp32, a global batch of 8 windows of 128 tokens in micro-batches of 4) under
// `OMP_NUM_THREADS=1 mpirun -np N bench_mpi_train`, each rank one thread:
//   BM_mpi_train_step_1rank   the baseline: rank 0 runs every micro-batch and the optimizer
//                             step alone, the other ranks wait at a barrier
//   BM_mpi_train_step_nrank   the micro-batches dealt to the N ranks, the gradients chain-summed
//                             in order (train/data_parallel.hpp), the optimizer step on every rank;
//                             counter speedup = the baseline's wall time / this one's, both in this
//                             process (ranks = N)
// Every rank runs the same fixed iteration counts (collectives need them in lockstep); rank 0
// alone reports.
#include <benchmark/benchmark.h>

#include <chrono>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "../train/train_setup.hpp"
#include "dist/comm.hpp"
#include "rank_main.hpp"
#include "train/data_parallel.hpp"

namespace {

using namespace lowp::accuracy;
constexpr std::size_t kBatch = 8, kMicro = 4, kCtx = 128;
constexpr int kIterations = 3;

struct Setup : lowp::bench::TrainSetup {
  Setup() : TrainSetup("fp32", kBatch, kCtx) { net->defer_amax(true); }

  // One step as the trainer runs it; `distributed` false: this rank alone, all micro-batches.
  void run(bool distributed) {
    const std::size_t n_micro = kBatch / kMicro;
    train::MicroBatches mb;
    mb.batch = kBatch;
    mb.micro = kMicro;
    mb.window = kCtx;
    mb.range = distributed ? dist::share(n_micro, dist::rank(), dist::size()) : dist::Range{0, n_micro};
    mb.keep_apart = distributed && dist::rank() > 0;
    mb.threads = 1;
    const train::LocalStep local =
        train::run_micro_batches(*net, tok, tgt, mb, ++step, [](const std::string&) { throw std::runtime_error("non-finite"); });
    std::size_t n = 0;
    for (const auto& p : net->params()) n += p.size;
    const std::vector<float> g = train::chain_sum(local.grads, n, distributed);
    train::chain_sum(local.sums, 3, distributed);
    net->commit_amax(train::max_over_ranks(net->take_pending_amax(), distributed));
    train::set_grad(*net, g);
    optimizer_step();
  }
};

// BM_mpi_train_step_1rank's wall time per step (rank 0), the mean over its repetitions.
double baseline_sum = 0;
int baseline_runs = 0;

void step_1rank(benchmark::State& state) {
  Setup s;
  if (dist::rank() == 0) s.run(false);
  dist::barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (dist::rank() == 0) s.run(false);
    dist::barrier();
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                     static_cast<double>(state.iterations());
  baseline_sum += sec;
  ++baseline_runs;
  state.counters["tokens_per_second"] = static_cast<double>(kBatch * kCtx) / sec;
}

void step_nrank(benchmark::State& state) {
  Setup s;
  s.run(true);
  dist::barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) s.run(true);
  dist::barrier();
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                     static_cast<double>(state.iterations());
  state.counters["tokens_per_second"] = static_cast<double>(kBatch * kCtx) / sec;
  state.counters["ranks"] = dist::size();
  if (baseline_runs > 0) state.counters["speedup"] = baseline_sum / baseline_runs / sec;
}

}  // namespace

BENCHMARK(step_1rank)->Name("BM_mpi_train_step_1rank")->Iterations(kIterations)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(step_nrank)->Name("BM_mpi_train_step_nrank")->Iterations(kIterations)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) { return lowp::bench::run_on_every_rank(argc, argv); }
