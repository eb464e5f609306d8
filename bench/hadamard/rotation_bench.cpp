// Non-power-of-two Kronecker transforms (H_m (x) H_2^k), block-diagonal and randomized
// Hadamard rotations, next to the power-of-two FWHT of similar length. Each runs in place,
// single-threaded, on a batch of rows totalling about 2 MiB (L2/L3-resident), transformed
// repeatedly with the orthonormal scale so the data stay bounded. bytes_per_second counts
// 4 bytes per element, so per-element times compare directly.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <memory>
#include <new>
#include <random>
#include <string>

#include "lowp/hadamard/fwht.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/hadamard/transform.hpp"

namespace {

namespace hd = lowp::hadamard;

constexpr std::size_t kBatchBytes = std::size_t{2} << 20;

struct AlignedDelete {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
};

struct Batch {
  std::size_t n, rows;
  std::unique_ptr<float[], AlignedDelete> p;
  explicit Batch(std::size_t len)
      : n(len),
        rows(std::max<std::size_t>(1, kBatchBytes / (len * sizeof(float)))),
        p(new (std::align_val_t{64}) float[rows * len]) {
    std::mt19937 g(1);
    std::normal_distribution<float> d;
    for (std::size_t i = 0; i < rows * n; ++i) p[i] = d(g);
  }
  float* data() { return p.get(); }
  void count(benchmark::State& state) const {
    state.SetBytesProcessed(
        static_cast<std::int64_t>(state.iterations() * rows * n * sizeof(float)));
    state.counters["rows"] = static_cast<double>(rows);
    // Seconds per element (shown as e.g. "120ps"): the figure the 2x target compares.
    state.counters["time_per_element"] =
        benchmark::Counter(static_cast<double>(state.iterations() * rows * n),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  }
};

void pow2(benchmark::State& state, std::size_t n) {
  omp_set_num_threads(1);
  Batch b(n);
  const float s = hd::orthonormal_scale(n);
  for (auto _ : state) {
    hd::fwht_rows(b.data(), b.rows, n, n, s);
    benchmark::ClobberMemory();
  }
  b.count(state);
}

void nonpow2(benchmark::State& state, std::size_t n) {
  omp_set_num_threads(1);
  Batch b(n);
  const float s = hd::orthonormal_scale(n);
  for (auto _ : state) {
    hd::hadamard_transform_rows(b.data(), b.rows, n, n, s);
    benchmark::ClobberMemory();
  }
  b.count(state);
}

void rotation(benchmark::State& state, hd::Rotation r) {
  omp_set_num_threads(1);
  Batch b(r.size);
  for (auto _ : state) {
    r.apply(b.data(), b.rows, r.size);
    benchmark::ClobberMemory();
  }
  b.count(state);
}

int register_all() {
  for (std::size_t n : {4096u, 8192u, 16384u})
    benchmark::RegisterBenchmark(("BM_hadamard_pow2/" + std::to_string(n)).c_str(), pow2, n);
  // 172x64 = 11008 and 28x512 = 14336 (Llama-2/3 MLP) against 8192 / 16384; 108x128 = 13824,
  // 40x128 = 5120 and 76x64 = 4864 for the other model sizes.
  for (auto [m, k] : {std::pair{172, 64}, {28, 512}, {108, 128}, {40, 128}, {76, 64}})
    benchmark::RegisterBenchmark(
        ("BM_hadamard_nonpow2/" + std::to_string(m) + "x" + std::to_string(k)).c_str(), nonpow2,
        std::size_t(m) * k);
  for (std::size_t b : {32u, 128u})
    benchmark::RegisterBenchmark(("BM_hadamard_blockdiag/" + std::to_string(b)).c_str(), rotation,
                                 hd::Rotation{hd::RotationKind::block_diagonal, 4096, b, 0});
  benchmark::RegisterBenchmark("BM_hadamard_randomized/4096", rotation,
                               hd::Rotation{hd::RotationKind::randomized, 4096, 0, 42});
  benchmark::RegisterBenchmark("BM_hadamard_randomized/11008", rotation,
                               hd::Rotation{hd::RotationKind::randomized, 11008, 0, 42});
  return 0;
}

const int kRegistered = register_all();

}  // namespace
