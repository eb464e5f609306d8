// Linear-layer training steps (forward + backward, dX and dW) at M = 512 tokens, N = 4096
// outputs, K = 4096 inputs. items_per_second = 3 GEMMs x 2MNK operations per step.
// Each step re-quantizes the weight (invalidate_weight_cache), as training changes it.
// The plain names run one thread and rate its CPU time; the names stay exactly as listed.
// The /threads:2 runs use two OpenMP threads and rate the whole process's CPU time (a loaded
// machine disturbs it less than the wall time, which Google Benchmark prints beside it).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <random>
#include <vector>

#include "lowp/quant/linear.hpp"

namespace {

constexpr std::size_t kM = 512, kN = 4096, kK = 4096;

std::vector<float> normals(std::size_t n, float sigma, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

void linear_step(benchmark::State& state, const char* preset, int threads) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  lowp::quant::QuantLinear layer(lowp::quant::linear_preset(preset), kK, kN, true);
  layer.weight() = normals(kN * kK, 1.0f / 64.0f, 1);
  const std::vector<float> X = normals(kM * kK, 1.0f, 2), dY = normals(kM * kN, 1.0f, 3);
  std::vector<float> Y(kM * kN), dX(kM * kK);
  std::uint64_t seed = 0;
  for (auto _ : state) {
    layer.invalidate_weight_cache();
    layer.forward(X.data(), kM, Y.data(), ++seed);
    layer.backward(dY.data(), dX.data(), seed);
    benchmark::DoNotOptimize(Y.data());
    benchmark::DoNotOptimize(dX.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(3 * 2 * kM * kN * kK));
  omp_set_num_threads(saved);
}

}  // namespace

BENCHMARK_CAPTURE(linear_step, fp32, "fp32", 1)->Name("BM_linear_step_fp32")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(linear_step, switchback, "switchback-int8", 1)
    ->Name("BM_linear_step_switchback")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(linear_step, fp8_tensorwise, "fp8-tensorwise", 1)
    ->Name("BM_linear_step_fp8_tensorwise")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(linear_step, mxfp4, "mxfp4", 1)->Name("BM_linear_step_mxfp4")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(linear_step, fp32_2, "fp32", 2)
    ->Name("BM_linear_step_fp32/threads:2")
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK_CAPTURE(linear_step, switchback_2, "switchback-int8", 2)
    ->Name("BM_linear_step_switchback/threads:2")
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
