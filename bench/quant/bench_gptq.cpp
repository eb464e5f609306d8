// GPTQ on one 4096 x 4096 linear with 512 calibration rows (issue 22's figure: seconds per
// layer, target <= 5 s on one core), beside round-to-nearest of the same weight in the same
// process, and the two parts of GPTQ's set-up on their own (H = 2 X^T X / n; the upper
// Cholesky factor of H^-1). Run with OMP_NUM_THREADS=1 for the one-core figure. Counters:
// err_vs_rtn = ||X (W - Q)^T||^2 / ||X (W - RTN)^T||^2 (float32 GEMMs, outside the timing).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "../../quant/src/calibrate/gptq_factor.hpp"
#include "lowp/quant/calibrate.hpp"
#include "lowp/quant/gemm.hpp"

namespace {

constexpr std::size_t kN = 4096, kK = 4096, kRows = 512;

struct Data {
  std::vector<float> w, x;
};

// Normal weights; inputs with a common factor and every 37th column 20x larger.
const Data& data() {
  static const Data d = [] {
    Data r{std::vector<float>(kN * kK), std::vector<float>(kRows * kK)};
    std::mt19937 gen(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (float& v : r.w) v = nd(gen);
    for (std::size_t i = 0; i < kRows; ++i) {
      const float common = nd(gen);
      for (std::size_t j = 0; j < kK; ++j) r.x[i * kK + j] = (nd(gen) + 0.7f * common) * (j % 37 == 5 ? 20.0f : 1.0f);
    }
    return r;
  }();
  return d;
}

double layer_error(const std::vector<float>& q) {
  const Data& d = data();
  std::vector<float> diff(kN * kK), y(kRows * kN);
  for (std::size_t i = 0; i < diff.size(); ++i) diff[i] = d.w[i] - q[i];
  lowp::quant::gemm_f32(d.x.data(), diff.data(), y.data(), kRows, kN, kK);
  double s = 0;
  for (float v : y) s += static_cast<double>(v) * v;
  return s;
}

std::vector<float> deq(const lowp::quant::QuantizedTensor& q) {
  std::vector<float> out(q.rows * q.cols);
  lowp::quant::dequantize(q, out.data());
  return out;
}

void BM_rtn_4096(benchmark::State& state, const char* spec_text) {
  const lowp::quant::QuantSpec spec = lowp::quant::parse_quant_spec(spec_text);
  const Data& d = data();
  for (auto _ : state) {
    lowp::quant::QuantizedTensor q = lowp::quant::quantize(spec, d.w.data(), kN, kK);
    benchmark::DoNotOptimize(q.codes.data());
  }
}

void BM_gptq_4096(benchmark::State& state, const char* spec_text, bool act_order) {
  const lowp::quant::QuantSpec spec = lowp::quant::parse_quant_spec(spec_text);
  const Data& d = data();
  lowp::quant::GptqOptions opt;
  opt.act_order = act_order;
  lowp::quant::QuantizedTensor q;
  for (auto _ : state) {
    q = lowp::quant::gptq(spec, d.w.data(), kN, kK, d.x.data(), kRows, opt);
    benchmark::DoNotOptimize(q.codes.data());
  }
  const double rtn = layer_error(deq(lowp::quant::quantize(spec, d.w.data(), kN, kK)));
  state.counters["err_vs_rtn"] = layer_error(deq(q)) / rtn;
}

void BM_gptq_hessian_4096(benchmark::State& state) {
  const Data& d = data();
  for (auto _ : state) benchmark::DoNotOptimize(lowp::quant::gptq_hessian(d.x.data(), kRows, kK).data());
}

void BM_gptq_factor_4096(benchmark::State& state) {
  const Data& d = data();
  std::vector<float> h = lowp::quant::gptq_hessian(d.x.data(), kRows, kK);
  double mean = 0;
  for (std::size_t j = 0; j < kK; ++j) mean += h[j * kK + j];
  for (std::size_t j = 0; j < kK; ++j) h[j * kK + j] += static_cast<float>(0.01 * mean / kK);
  for (auto _ : state) benchmark::DoNotOptimize(lowp::quant::calib::inverse_upper_cholesky(h, kK).data());
}

}  // namespace

BENCHMARK_CAPTURE(BM_rtn_4096, nvfp4, "nvfp4")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rtn_4096, mxfp4, "mxfp4")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rtn_4096, int4_g32, "int4:b32")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gptq_hessian_4096)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_gptq_factor_4096)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_gptq_4096, nvfp4, "nvfp4", false)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_gptq_4096, mxfp4, "mxfp4", false)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_gptq_4096, int4_g32, "int4:b32", false)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_gptq_4096, nvfp4_act_order, "nvfp4", true)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
