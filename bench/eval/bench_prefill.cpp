// BM_eval_prefill_fp32: evaluate() with the fp32 recipe on one thread over one window of 512
// tokens of a synthetic model of a 110M-parameter Llama's shape (dim 768, 12 layers, 12 heads,
// hidden 2048, vocab 32000, random weights), every position scored.
// Counters: model_gflops_per_s = model FLOPs per second of the process's CPU time, with model
// FLOPs = 2 T (linear and classifier weights) + 2 T^2 dim per layer (causal QK^T and PV, the
// useful half of each T x T product); gemm_gflops_per_s = gemm_f32 on 2048 x 2048 x 2048, one
// thread, measured in this process the same way; mfu = their ratio (target >= 0.5).
#include <benchmark/benchmark.h>
#include <time.h>

#include <cmath>
#include <random>
#include <vector>

#include "lowp/accuracy/eval.hpp"
#include "synthetic_llama.hpp"
#include "lowp/quant/gemm.hpp"

namespace {

using namespace lowp::accuracy;

constexpr int kT = 512;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

const LlamaModel& model_110m() {
  static const LlamaModel m = lowp::bench::synthetic_llama(768, 2048, 12, 12, 32000, kT, 110);
  return m;
}

double model_flops(const LlamaConfig& c, double T) {
  const double dim = c.dim, kv = c.kv_dim(), hid = c.hidden_dim, vocab = c.vocab_size;
  const double per_layer = dim * (dim + 2 * kv) + dim * dim + 3 * dim * hid;
  return 2 * T * (c.n_layers * per_layer + dim * vocab) + c.n_layers * 2 * T * T * dim;
}

// gemm_f32's rate on 2048^3, one thread, best of three (model FLOPs per CPU second).
double gemm_rate() {
  static const double rate = [] {
    const std::size_t n = 2048;
    std::mt19937 gen(1);
    std::normal_distribution<float> nd;
    std::vector<float> A(n * n), B(n * n), C(n * n);
    for (float& x : A) x = nd(gen);
    for (float& x : B) x = nd(gen);
    lowp::quant::gemm_f32(A.data(), B.data(), C.data(), n, n, n, false, 1);  // warm-up
    double best = 0;
    for (int i = 0; i < 3; ++i) {
      const double t0 = cpu_seconds();
      lowp::quant::gemm_f32(A.data(), B.data(), C.data(), n, n, n, false, 1);
      best = std::max(best, 2.0 * n * n * n / (cpu_seconds() - t0));
    }
    return best;
  }();
  return rate;
}

void BM_eval_prefill_fp32(benchmark::State& state) {
  const LlamaModel& m = model_110m();
  std::mt19937 gen(16);
  std::vector<int> tokens(kT);
  for (int& x : tokens) x = static_cast<int>(gen() % 32000u);
  const Recipe r = find_recipe("fp32");
  EvalOptions opt;
  opt.ctx = kT;
  opt.score_all = true;
  opt.threads = 1;
  const double gemm = gemm_rate();
  benchmark::DoNotOptimize(evaluate(m, tokens, r, opt).nll_sum);  // warm-up
  const double t0 = cpu_seconds();
  for (auto _ : state) benchmark::DoNotOptimize(evaluate(m, tokens, r, opt).nll_sum);
  const double cpu = cpu_seconds() - t0;
  const double rate = model_flops(m.config, kT) * static_cast<double>(state.iterations()) / cpu;
  state.counters["model_gflops_per_s"] = rate * 1e-9;
  state.counters["gemm_gflops_per_s"] = gemm * 1e-9;
  state.counters["mfu"] = rate / gemm;
}
BENCHMARK(BM_eval_prefill_fp32)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
