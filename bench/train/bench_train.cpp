// bench_train: one optimizer step (zero grads, forward, backward, the recipe's optimizer) of a
// `lowp train` config on a batch of 8 windows of 128 tokens, per recipe: the default "small" (dim
// 128, 4 layers, 4 heads, 2 KV heads, hidden 384, byte vocabulary 258, tied classifier) and, for
// the names ending in _medium, "medium" (dim 256, hidden 768, head_dim 64; the rest the same).
//   BM_train_step_<recipe>[_medium]   counters: tokens_per_second (wall), tokens_per_cpu_second,
//                            cpu_ms_per_step (all threads' CPU time);
//                            x_fp32 = this step's CPU time / the fp32 step's of the same config,
//                            an untimed fp32 step beside each timed one (after, then before, in
//                            turn), in this process
//   BM_train_step_fp32[_medium]  also mfu = model FLOPs per CPU second (6 x parameters x tokens +
//                            attention) / the float32 GEMM rate per CPU second measured in the
//                            same turns (gemm_f32 on the step's largest linear shape: 1024 x
//                            hidden x dim);
//                            mfu_wall the same on wall time (both at the process's threads;
//                            OMP_WAIT_POLICY=active spins idle threads: CPU time, not wall, grows)
//   BM_train_attention[_medium]  one layer's attention forward and backward (model/attention.cpp)
//                            on the step's shapes; mfu as above with the attention's share of the
//                            model FLOPs (12 T^2 dim per sequence, the full T x T products)
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lowp/quant/gemm.hpp"
#include "lowp/quant/linear.hpp"
#include "model/attention.hpp"
#include "train_setup.hpp"

namespace {

using namespace lowp::accuracy;
constexpr std::size_t kBatch = 8, kCtx = 128;

// One step as the trainer runs it: zero the gradients, forward, backward, the optimizer.
struct Setup : lowp::bench::TrainSetup {
  Setup(const std::string& name, const std::string& config) : TrainSetup(name, kBatch, kCtx, config) {}
  void run() {
    net->zero_grad();
    net->forward(tok, tgt, kBatch, kCtx, 0, ++step);
    net->backward(0, step);
    optimizer_step();
  }
};

// Process CPU seconds (all threads): on a shared machine the ratios below are taken in CPU
// time, which other processes disturb far less than wall time.
double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// Seconds of wall and CPU time a function takes per call, over `reps` calls after a warm-up.
struct Times {
  double wall, cpu;
};
Times seconds_per(const std::function<void()>& f, int reps) {
  f();
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_now();
  for (int i = 0; i < reps; ++i) f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps,
          (cpu_now() - c0) / reps};
}

// The fp32 step of a config, kept for the whole process: the baseline of every x_fp32.
Setup& fp32_setup(const std::string& config) {
  static std::map<std::string, std::unique_ptr<Setup>> s;
  auto& p = s[config];
  if (!p) {
    p = std::make_unique<Setup>("fp32", config);
    p->run();  // warm up
  }
  return *p;
}

double model_flops_per_step(const LlamaConfig& c) {
  const double dim = c.dim, kv = c.kv_dim(), hid = c.hidden_dim, L = c.n_layers, V = c.vocab_size;
  const double params = L * (2 * dim * dim + 2 * dim * kv + 3 * dim * hid) + V * dim;  // linears + classifier
  const double tokens = static_cast<double>(kBatch * kCtx), T = kCtx;
  const double attention = 12.0 * T * T * dim * L * kBatch;  // QK^T and PV: 4 T^2 dim forward, twice that backward
  return 6.0 * params * tokens + attention;
}

void train_step(benchmark::State& state, const std::string& recipe, const std::string& config) {
  Setup s(recipe, config);
  Setup& base = fp32_setup(config);
  s.run();
  // Each timed step has an untimed fp32 step of the same config beside it (after it, then
  // before the next, in turn, so that neither order is favoured): on a shared machine the two
  // see the same load, so their ratio holds when either alone would drift.
  // The fp32 step's mfu takes the GEMM reference rate in the same turns (5 GEMMs a step).
  const bool fp32 = recipe == "fp32";
  const std::size_t M = kBatch * kCtx, N = static_cast<std::size_t>(s.c.hidden_dim), K = static_cast<std::size_t>(s.c.dim);
  std::vector<float> ga(fp32 ? M * K : 0, 0.5f), gb(fp32 ? N * K : 0, 0.25f), gc(fp32 ? M * N : 0);
  const auto gemm = [&] { lowp::quant::gemm_f32(ga.data(), gb.data(), gc.data(), M, N, K); };
  if (fp32) gemm();  // warm up
  double wall = 0, cpu = 0, base_cpu = 0;
  Times g{0, 0};
  bool base_first = false;
  const auto run_base = [&] {
    state.PauseTiming();
    const double b0 = cpu_now();
    base.run();
    base_cpu += cpu_now() - b0;
    if (fp32) {
      const Times t = seconds_per(gemm, 5);
      g.wall += t.wall;
      g.cpu += t.cpu;
    }
    state.ResumeTiming();
  };
  for (auto _ : state) {
    if (base_first) run_base();
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    s.run();
    cpu += cpu_now() - c0;
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!base_first) run_base();
    base_first = !base_first;
  }
  const double n = static_cast<double>(state.iterations());
  wall /= n;
  cpu /= n;
  state.counters["tokens_per_second"] = static_cast<double>(kBatch * kCtx) / wall;
  state.counters["tokens_per_cpu_second"] = static_cast<double>(kBatch * kCtx) / cpu;
  // Google Benchmark's own CPU time is the benchmark thread's alone: this is every thread's.
  state.counters["cpu_ms_per_step"] = cpu * 1e3;
  state.counters["x_fp32"] = cpu / (base_cpu / n);  // CPU time of this step / CPU time of the fp32 step
  if (fp32) {
    const double gemm_flops = 2.0 * M * N * K;
    g.wall /= n;
    g.cpu /= n;
    state.counters["gemm_gflops_per_cpu_s"] = gemm_flops / g.cpu * 1e-9;
    state.counters["mfu"] = model_flops_per_step(s.c) / cpu / (gemm_flops / g.cpu);
    state.counters["mfu_wall"] = model_flops_per_step(s.c) / wall / (gemm_flops / g.wall);
  }
}

// The float32 GEMM rate per CPU second on the config's largest linear shape (as train_step's mfu).
double gemm_rate(const LlamaConfig& c) {
  const std::size_t M = kBatch * kCtx, N = static_cast<std::size_t>(c.hidden_dim), K = static_cast<std::size_t>(c.dim);
  std::vector<float> a(M * K, 0.5f), b(N * K, 0.25f), out(M * N);
  const double g = seconds_per([&] { lowp::quant::gemm_f32(a.data(), b.data(), out.data(), M, N, K); }, 50).cpu;
  return 2.0 * M * N * K / g;
}

void train_attention(benchmark::State& state, const std::string& config) {
  const LlamaConfig c = lowp::accuracy::train::named_config(config);
  const lowp::accuracy::detail::AttentionShape sh{kBatch, kCtx, static_cast<std::size_t>(c.n_heads),
                                                  static_cast<std::size_t>(c.n_kv_heads),
                                                  static_cast<std::size_t>(c.head_dim())};
  const std::size_t R = kBatch * kCtx, qd = sh.heads * sh.head_dim, kvd = sh.kv_heads * sh.head_dim;
  std::vector<float> q(R * qd), k(R * kvd), v(R * kvd), out(R * qd), dout(R * qd), dq(R * qd), dk(R * kvd), dv(R * kvd);
  std::vector<float> p(kBatch * sh.heads * kCtx * kCtx);
  std::uint32_t x = 1;
  const auto fill = [&](std::vector<float>& a) {
    for (float& e : a) e = static_cast<float>((x = x * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
  };
  fill(q), fill(k), fill(v), fill(dout);
  const auto run = [&] {
    lowp::accuracy::detail::attention_forward(sh, q.data(), k.data(), v.data(), out.data(), p.data(), 0);
    lowp::accuracy::detail::attention_backward(sh, q.data(), k.data(), v.data(), p.data(), dout.data(), dq.data(),
                                               dk.data(), dv.data(), 0);
  };
  const double rate = gemm_rate(c);
  run();
  const double c0 = cpu_now();
  for (auto _ : state) run();
  const double cpu = (cpu_now() - c0) / static_cast<double>(state.iterations());
  const double flops = 12.0 * kCtx * kCtx * static_cast<double>(c.dim) * kBatch;
  state.counters["mfu"] = flops / cpu / rate;
}

}  // namespace

#define LOWP_TRAIN_STEP(id, recipe)                                                                    \
  BENCHMARK_CAPTURE(train_step, id, std::string(recipe), std::string("small"))                         \
      ->Name("BM_train_step_" #id)                                                                     \
      ->Unit(benchmark::kMillisecond)                                                                  \
      ->UseRealTime();                                                                                 \
  BENCHMARK_CAPTURE(train_step, id##_medium, std::string(recipe), std::string("medium"))               \
      ->Name("BM_train_step_" #id "_medium")                                                           \
      ->Unit(benchmark::kMillisecond)                                                                  \
      ->UseRealTime()

LOWP_TRAIN_STEP(fp32, "fp32");
LOWP_TRAIN_STEP(bf16, "bf16");
LOWP_TRAIN_STEP(fp8_tensorwise, "fp8-tensorwise");
LOWP_TRAIN_STEP(fp8_block128, "fp8-block128");
LOWP_TRAIN_STEP(mxfp8, "mxfp8");
LOWP_TRAIN_STEP(nvfp4, "nvfp4");
LOWP_TRAIN_STEP(quartet, "quartet-fp4");
LOWP_TRAIN_STEP(switchback, "switchback-int8");
BENCHMARK_CAPTURE(train_attention, small, std::string("small"))->Name("BM_train_attention")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(train_attention, medium, std::string("medium"))->Name("BM_train_attention_medium")->Unit(benchmark::kMillisecond)->UseRealTime();
