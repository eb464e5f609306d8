// Quantize / dequantize of an n x n float32 tensor in MXFP4, MXFP8 and NVFP4, beside a memcpy
// of the same float32 bytes. bytes_per_second counts the float32 side (n * n * 4 bytes) in
// every benchmark, so quantize / memcpy is the ratio of the two figures (target >= 0.3).
// Threads: OpenMP's default (all cores), as a caller of quantize() gets it. Times are the
// benchmark thread's CPU time (no UseRealTime, which would rename the benchmarks
// ".../real_time"): on a quiet machine that thread works or spin-waits at OpenMP barriers
// throughout, so its CPU time is the wall time; under load it is not.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "lowp/quant/quantize.hpp"

namespace {

std::vector<float> bench_data(std::size_t n) {
  std::vector<float> x(n);
  std::mt19937 gen(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float& v : x) v = d(gen);
  return x;
}

void set_bytes(benchmark::State& state, std::size_t n) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n * sizeof(float)));
}

void quantize_bench(benchmark::State& state, const char* spec_text) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const lowp::quant::QuantSpec spec = lowp::quant::parse_quant_spec(spec_text);
  const std::vector<float> x = bench_data(n * n);
  for (auto _ : state) {
    lowp::quant::QuantizedTensor q = lowp::quant::quantize(spec, x.data(), n, n);
    benchmark::DoNotOptimize(q.codes.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * n);
}

void dequantize_bench(benchmark::State& state, const char* spec_text) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const lowp::quant::QuantSpec spec = lowp::quant::parse_quant_spec(spec_text);
  const std::vector<float> x = bench_data(n * n);
  const lowp::quant::QuantizedTensor q = lowp::quant::quantize(spec, x.data(), n, n);
  std::vector<float> out(n * n);
  for (auto _ : state) {
    lowp::quant::dequantize(q, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * n);
}

// In place x <- dequantize(quantize(x)), what the emulated linear layers call per operand.
// The tensor is refreshed from a copy outside the timing every iteration would cost as much
// as the work, so it is faked repeatedly: after the first pass the values are already on the
// grid, which changes no code path (scales, casts and NaN checks run the same).
void fake_quant_bench(benchmark::State& state, const char* spec_text) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const lowp::quant::QuantSpec spec = lowp::quant::parse_quant_spec(spec_text);
  std::vector<float> x = bench_data(n * n);
  for (auto _ : state) {
    lowp::quant::fake_quant(spec, x.data(), n, n);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * n);
}

void BM_quantize_mxfp4(benchmark::State& s) { quantize_bench(s, "mxfp4"); }
void BM_dequantize_mxfp4(benchmark::State& s) { dequantize_bench(s, "mxfp4"); }
void BM_quantize_mxfp8(benchmark::State& s) { quantize_bench(s, "mxfp8"); }
void BM_dequantize_mxfp8(benchmark::State& s) { dequantize_bench(s, "mxfp8"); }
void BM_quantize_nvfp4(benchmark::State& s) { quantize_bench(s, "nvfp4"); }
void BM_dequantize_nvfp4(benchmark::State& s) { dequantize_bench(s, "nvfp4"); }
void BM_fake_quant_e4m3_tensor(benchmark::State& s) { fake_quant_bench(s, "e4m3"); }
void BM_fake_quant_e4m3_row(benchmark::State& s) { fake_quant_bench(s, "e4m3:row"); }
void BM_fake_quant_mxfp4(benchmark::State& s) { fake_quant_bench(s, "mxfp4"); }
void BM_fake_quant_nvfp4(benchmark::State& s) { fake_quant_bench(s, "nvfp4"); }

// The baseline: one copy of the same float32 bytes (source and destination both n * n floats).
void BM_memcpy_f32(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<float> x = bench_data(n * n);
  std::vector<float> y(n * n);
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), n * n * sizeof(float));
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * n);
}

}  // namespace

BENCHMARK(BM_memcpy_f32)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_quantize_mxfp4)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dequantize_mxfp4)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_quantize_mxfp8)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dequantize_mxfp8)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_quantize_nvfp4)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dequantize_nvfp4)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fake_quant_e4m3_tensor)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fake_quant_e4m3_row)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fake_quant_mxfp4)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fake_quant_nvfp4)->Arg(4096)->Unit(benchmark::kMillisecond);
