// GEMM throughput: our int8 GEMM and float32 GEMM (lowp::quant::gemm_f32, also from bf16
// weights widened inside the GEMM) beside oneDNN's s8 x s8 -> s32 and f32 matmuls as the
// field's references. items_per_second = 2 M N K operations per
// second (of the benchmark thread's CPU time, which the OpenMP master spends in the GEMM);
// wall_ops_per_second uses the wall clock.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/half.hpp"
#include "lowp/quant/gemm.hpp"
#include "lowp/quant/gemm_int8.hpp"

#if LOWP_HAVE_ONEDNN
#include <omp.h>

#include <dnnl.hpp>
#endif

namespace {

struct Shape {
  std::size_t M, N, K;
  int threads;
};

Shape shape_of(const benchmark::State& st) {
  return {static_cast<std::size_t>(st.range(0)), static_cast<std::size_t>(st.range(1)),
          static_cast<std::size_t>(st.range(2)), static_cast<int>(st.range(3))};
}

std::vector<std::int8_t> random_int8(std::size_t n, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(g() >> 24);
  return v;
}

std::vector<float> random_f32(std::size_t n, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Runs `gemm` in the benchmark loop and reports 2MNK operations per second.
template <class F>
void run(benchmark::State& st, const Shape& s, F&& gemm) {
  const double ops =
      2.0 * static_cast<double>(s.M) * static_cast<double>(s.N) * static_cast<double>(s.K);
  gemm();  // warm-up: first-touch of buffers, thread pool start, JIT
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    gemm();
    benchmark::ClobberMemory();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st.SetItemsProcessed(static_cast<std::int64_t>(ops) * st.iterations());
  st.counters["wall_ops_per_second"] = ops * static_cast<double>(st.iterations()) / wall;
}

void BM_gemm_int8(benchmark::State& st) {
  const Shape s = shape_of(st);
  const auto A = random_int8(s.M * s.K, 1), B = random_int8(s.N * s.K, 2);
  std::vector<std::int32_t> C(s.M * s.N);
  const lowp::quant::Int8GemmOptions opt{std::nullopt, s.threads};
  st.SetLabel(std::string(lowp::quant::int8_kernel_name(lowp::quant::best_int8_kernel())));
  run(st, s, [&] { lowp::quant::gemm_s8s8_s32(A.data(), B.data(), C.data(), s.M, s.N, s.K, opt); });
}

void BM_gemm_f32(benchmark::State& st) {
  const Shape s = shape_of(st);
  const auto A = random_f32(s.M * s.K, 1), B = random_f32(s.N * s.K, 2);
  std::vector<float> C(s.M * s.N);
  st.SetLabel(std::string(lowp::isa_name(lowp::best_isa())));
  run(st, s, [&] {
    lowp::quant::gemm_f32(A.data(), B.data(), C.data(), s.M, s.N, s.K, false, s.threads);
  });
}

// B stored as bfloat16 and widened a panel at a time inside the GEMM (memory-mapped weights).
void BM_gemm_f32_bf16_weights(benchmark::State& st) {
  const Shape s = shape_of(st);
  const auto A = random_f32(s.M * s.K, 1), Bf = random_f32(s.N * s.K, 2);
  std::vector<std::uint16_t> B(Bf.size());
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = lowp::f32_to_bf16(Bf[i]);
  std::vector<float> C(s.M * s.N);
  const lowp::quant::StoredMatrix b{lowp::quant::StoredType::bf16, B.data(), s.N, s.K};
  run(st, s, [&] { lowp::quant::gemm_f32(A.data(), b, C.data(), s.M, false, s.threads); });
}

#if LOWP_HAVE_ONEDNN
// dnnl::matmul with A (M x K, row-major) and B given as K x N in the "ba" layout, i.e. our
// N x K row-major B, so oneDNN packs B on every call as our kernel does.
void BM_gemm_onednn_s8s8(benchmark::State& st) {
  const Shape s = shape_of(st);
  auto A = random_int8(s.M * s.K, 1), B = random_int8(s.N * s.K, 2);
  std::vector<std::int32_t> C(s.M * s.N);
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const auto d = [](std::size_t v) { return static_cast<dnnl::memory::dim>(v); };
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::desc a_md({d(s.M), d(s.K)}, dt::s8, tag::ab);
  const dnnl::memory::desc b_md({d(s.K), d(s.N)}, dt::s8, tag::ba);
  const dnnl::memory::desc c_md({d(s.M), d(s.N)}, dt::s32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), eng);
  const dnnl::matmul mm(pd);
  dnnl::memory a_mem(a_md, eng, A.data()), b_mem(b_md, eng, B.data()), c_mem(c_md, eng, C.data());
  st.SetLabel(pd.impl_info_str());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(s.threads);  // Debian's oneDNN runs on OpenMP
  run(st, s, [&] {
    mm.execute(strm, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    strm.wait();
  });
  omp_set_num_threads(saved);
}

// dnnl::matmul in float32, B in the same "ba" layout (our N x K row-major).
void BM_gemm_onednn_f32(benchmark::State& st) {
  const Shape s = shape_of(st);
  auto A = random_f32(s.M * s.K, 1), B = random_f32(s.N * s.K, 2);
  std::vector<float> C(s.M * s.N);
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const auto d = [](std::size_t v) { return static_cast<dnnl::memory::dim>(v); };
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::desc a_md({d(s.M), d(s.K)}, dt::f32, tag::ab);
  const dnnl::memory::desc b_md({d(s.K), d(s.N)}, dt::f32, tag::ba);
  const dnnl::memory::desc c_md({d(s.M), d(s.N)}, dt::f32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), eng);
  const dnnl::matmul mm(pd);
  dnnl::memory a_mem(a_md, eng, A.data()), b_mem(b_md, eng, B.data()), c_mem(c_md, eng, C.data());
  st.SetLabel(pd.impl_info_str());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(s.threads);
  run(st, s, [&] {
    mm.execute(strm, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    strm.wait();
  });
  omp_set_num_threads(saved);
}
#endif

void gemm_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    b->Args({1024, 1024, 1024, threads});
    b->Args({2048, 2048, 2048, threads});
    b->Args({512, 4096, 4096, threads});
  }
  b->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_gemm_int8)->Apply(gemm_shapes);
BENCHMARK(BM_gemm_f32)->Apply(gemm_shapes);
BENCHMARK(BM_gemm_f32_bf16_weights)->Apply(gemm_shapes);
#if LOWP_HAVE_ONEDNN
BENCHMARK(BM_gemm_onednn_s8s8)->Apply(gemm_shapes);
BENCHMARK(BM_gemm_onednn_f32)->Apply(gemm_shapes);
#endif
