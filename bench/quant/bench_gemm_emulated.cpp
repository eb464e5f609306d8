// gemm_emulated on a DeepSeek-V3 fp8-block128-like GEMM: E4M3 values times a float scale per
// row, accumulated in 13 mantissa bits toward zero and promoted to float32 every 128
// products. The exact 128-bit step (the definition), the scalar fast step, the AVX2 tiles and
// the best path (what gemm_emulated runs), beside gemm_f32 on the same shape; main.cpp prints
// each one's ratio to BM_gemm_f32. items_per_second = 2 M N K operations per second.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../quant/src/gemm/gemm_emulated_kernels.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/quant/gemm.hpp"

namespace {

using lowp::quant::detail::EmuPath;

// rows x cols E4M3 values (normal and subnormal, both signs) times a per-row scale.
std::vector<float> e4m3_rows(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<float> v(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const float scale = 0.013f * static_cast<float>(1 + g() % 97);
    for (std::size_t c = 0; c < cols; ++c) {
      const int e = -6 + static_cast<int>(g() % 15);  // 2^-6 .. 2^8
      const auto m = static_cast<float>(g() % 8);
      const float x = e == -6 && g() % 4 == 0 ? std::ldexp(m, -9) : std::ldexp(1.0f + m / 8, e);
      v[r * cols + c] = ((g() & 1) ? -x : x) * scale;
    }
  }
  return v;
}

void run_emulated(benchmark::State& st, EmuPath path) {
  const auto M = static_cast<std::size_t>(st.range(0)), N = static_cast<std::size_t>(st.range(1)),
             K = static_cast<std::size_t>(st.range(2));
  const int threads = static_cast<int>(st.range(3));
  if ((path == EmuPath::avx2 && !lowp::isa_available(lowp::Isa::avx2)) ||
      (path == EmuPath::avx512 && !lowp::isa_available(lowp::Isa::avx512))) {
    st.SkipWithError("instruction set not available on this CPU");
    return;
  }
  const auto A = e4m3_rows(M, K, 1), B = e4m3_rows(N, K, 2);
  std::vector<float> C(M * N);
  const lowp::quant::Accumulation acc{13, 8, lowp::Round::toward_zero, 128, 0};
  for (auto _ : st) {
    lowp::quant::detail::gemm_emulated_path(path, A.data(), B.data(), C.data(), M, N, K, acc, threads);
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(2 * M * N * K) * st.iterations());
}

void BM_gemm_emulated_exact(benchmark::State& st) { run_emulated(st, EmuPath::exact); }
void BM_gemm_emulated_scalar(benchmark::State& st) { run_emulated(st, EmuPath::scalar); }
void BM_gemm_emulated_avx2(benchmark::State& st) { run_emulated(st, EmuPath::avx2); }
void BM_gemm_emulated(benchmark::State& st) {
  st.SetLabel(std::string(lowp::isa_name(lowp::best_isa())));
  run_emulated(st, EmuPath::fast);
}

// The float32 GEMM on the same operands: the baseline of the ratios.
void BM_gemm_f32_emushape(benchmark::State& st) {
  const auto M = static_cast<std::size_t>(st.range(0)), N = static_cast<std::size_t>(st.range(1)),
             K = static_cast<std::size_t>(st.range(2));
  const auto A = e4m3_rows(M, K, 1), B = e4m3_rows(N, K, 2);
  std::vector<float> C(M * N);
  for (auto _ : st) {
    lowp::quant::gemm_f32(A.data(), B.data(), C.data(), M, N, K, false, static_cast<int>(st.range(3)));
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(2 * M * N * K) * st.iterations());
}

void emulated_shapes(benchmark::internal::Benchmark* b) {
  b->Args({256, 384, 128, 1})->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_gemm_f32_emushape)->Apply(emulated_shapes);
BENCHMARK(BM_gemm_emulated_exact)->Apply(emulated_shapes);
BENCHMARK(BM_gemm_emulated_scalar)->Apply(emulated_shapes);
BENCHMARK(BM_gemm_emulated_avx2)->Apply(emulated_shapes);
BENCHMARK(BM_gemm_emulated)->Apply(emulated_shapes);
