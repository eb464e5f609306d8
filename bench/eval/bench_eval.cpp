// bench_eval: teacher-forced evaluation throughput on a synthetic model of stories15M's shape
// (dim 288, 6 layers, 6 heads, hidden 768, vocab 32000, ctx 256, random weights).
//   BM_eval_fp32_batched         evaluate() with the fp32 recipe: batched prefill, all threads
//   BM_eval_fp32_token_by_token  the llama2.c approach: one position at a time, matrix-vector
//                                products, one thread (tests/accuracy/llama_reference.hpp)
//   BM_eval_<recipe>             evaluate() under an FP8 / MX recipe
//   BM_eval_fp32_batched_1thread evaluate() on one thread (the batching gain alone)
//   BM_eval_prefill_fp32         (bench_prefill.cpp) one 512-token window of a 110M-shape model, mfu
//   BM_eval_recipe/<name>        (bench_eval_recipe.cpp) a default recipe's evaluation over fp32's
// Counter tokens_per_s: tokens fed per second of wall time (a window of 256 per iteration);
// the CPU column is the whole process's CPU time (all threads), a figure load disturbs less.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "../../tests/accuracy/llama_reference.hpp"
#include "lowp/accuracy/eval.hpp"
#include "synthetic_llama.hpp"

namespace {

using namespace lowp::accuracy;

constexpr int kCtx = 256;

const LlamaModel& model() {
  static const LlamaModel m = lowp::bench::synthetic_llama(288, 768, 6, 6, 32000, kCtx, 15);
  return m;
}

std::vector<int> tokens() {
  std::mt19937 gen(16);
  std::vector<int> t(kCtx);
  for (int& x : t) x = static_cast<int>(gen() % 32000u);
  return t;
}

void report(benchmark::State& state) {
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kCtx, benchmark::Counter::kIsRate);
}

void eval_recipe(benchmark::State& state, const std::string& name, int threads = 0) {
  const LlamaModel& m = model();
  const auto t = tokens();
  const Recipe r = find_recipe(name);
  EvalOptions opt;
  opt.ctx = kCtx;
  opt.threads = threads;
  for (auto _ : state) {
    EvalRun run = evaluate(m, t, r, opt);
    benchmark::DoNotOptimize(run.nll_sum);
  }
  report(state);
}

void BM_eval_fp32_batched(benchmark::State& state) { eval_recipe(state, "fp32"); }
BENCHMARK(BM_eval_fp32_batched)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_eval_fp32_batched_1thread(benchmark::State& state) { eval_recipe(state, "fp32", 1); }
BENCHMARK(BM_eval_fp32_batched_1thread)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

void BM_eval_fp32_token_by_token(benchmark::State& state) {
  const LlamaModel& m = model();
  const auto t = tokens();
  for (auto _ : state) {
    lowp::test::ReferenceLlama ref(m);
    auto logits = ref.run(t);
    benchmark::DoNotOptimize(logits.data());
  }
  report(state);
}
BENCHMARK(BM_eval_fp32_token_by_token)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

// The FP8 / MX recipes (target: each within 1.5x the fp32 batched time).
BENCHMARK_CAPTURE(eval_recipe, fp8_tensorwise, std::string("fp8-tensorwise"))->Name("BM_eval_fp8-tensorwise")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, fp8_rowwise, std::string("fp8-rowwise"))->Name("BM_eval_fp8-rowwise")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, fp8_block128, std::string("fp8-block128"))->Name("BM_eval_fp8-block128")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, mxfp8, std::string("mxfp8"))->Name("BM_eval_mxfp8")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, mxfp6, std::string("mxfp6"))->Name("BM_eval_mxfp6")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, mxfp4, std::string("mxfp4"))->Name("BM_eval_mxfp4")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, nvfp4, std::string("nvfp4"))->Name("BM_eval_nvfp4")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, fp8_attn, std::string("fp8-attn"))->Name("BM_eval_fp8-attn")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, fp8_attn_hadamard, std::string("fp8-attn-hadamard"))->Name("BM_eval_fp8-attn-hadamard")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(eval_recipe, mxfp4_attn_hadamard, std::string("mxfp4-attn-hadamard"))->Name("BM_eval_mxfp4-attn-hadamard")->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace
