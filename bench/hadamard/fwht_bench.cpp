// FWHT throughput next to memcpy of the same bytes, in cache and streaming from memory.
// bytes_per_second counts 4n bytes per float32 vector transformed or copied (2n per bf16
// vector). Single thread unless the name says otherwise.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <random>

#include "lowp/hadamard/fwht.hpp"
#include "lowp/numerics/cpu.hpp"

namespace {

namespace hd = lowp::hadamard;

constexpr std::size_t kCacheBytes = std::size_t{128} << 10;
constexpr std::size_t kStreamBytes = std::size_t{256} << 20;

struct PageDelete {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{4096}); }
};

struct Buffer {
  std::unique_ptr<float[], PageDelete> p;
  std::size_t floats;
  explicit Buffer(std::size_t bytes)
      : p(new (std::align_val_t{4096}) float[bytes / sizeof(float)]), floats(bytes / sizeof(float)) {
    std::mt19937 g(1);
    std::normal_distribution<float> d;
    for (std::size_t i = 0; i < floats; ++i) p[i] = d(g);  // also faults every page in
  }
  float* data() { return p.get(); }
};

// Allocated once, on first use, and reused by every benchmark of the family.
Buffer& stream_src() { static Buffer b(kStreamBytes); return b; }
Buffer& stream_dst() { static Buffer b(kStreamBytes); return b; }
Buffer& cache_buf(std::size_t bytes) {  // bytes >= 128 KiB only for n = 2^16, 2^20
  static Buffer small(kCacheBytes), mid(std::size_t{4} << 20);
  return bytes <= kCacheBytes ? small : mid;
}
Buffer& cache_dst(std::size_t bytes) {
  static Buffer small(kCacheBytes), mid(std::size_t{4} << 20);
  return bytes <= kCacheBytes ? small : mid;
}

// In cache: a batch of vectors totalling 128 KiB, or one vector when that is larger.
struct CacheShape {
  std::size_t n, rows, bytes;
  explicit CacheShape(const benchmark::State& s)
      : n(std::size_t{1} << s.range(0)),
        rows(n * sizeof(float) >= kCacheBytes ? 1 : kCacheBytes / (n * sizeof(float))),
        bytes(rows * n * sizeof(float)) {}
};

void BM_fwht_f32_cache(benchmark::State& state) {
  omp_set_num_threads(1);
  const CacheShape c(state);
  float* x = cache_buf(c.bytes).data();
  const float s = hd::orthonormal_scale(c.n);  // keeps the data bounded over repeats
  for (auto _ : state) {
    hd::fwht_rows(x, c.rows, c.n, c.n, s);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
}

// In L1: 16 KiB of vectors (n <= 2^12), half the smallest L1d these kernels run on, so that
// neither the transform's passes nor memcpy leave L1: the ratio to memcpy where only the
// arithmetic and the load/store ports can bound it (the `cache` figures above add L2 traffic).
constexpr std::size_t kL1Bytes = std::size_t{16} << 10;

void BM_fwht_f32_l1(benchmark::State& state) {
  omp_set_num_threads(1);
  const std::size_t n = std::size_t{1} << state.range(0), rows = kL1Bytes / (n * sizeof(float));
  float* x = cache_buf(kL1Bytes).data();
  const float s = hd::orthonormal_scale(n);
  for (auto _ : state) {
    hd::fwht_rows(x, rows, n, n, s);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kL1Bytes));
}

void BM_memcpy_l1(benchmark::State& state) {
  float* src = cache_buf(kL1Bytes).data();
  float* dst = cache_dst(kL1Bytes).data();
  for (auto _ : state) {
    std::memcpy(dst, src, kL1Bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kL1Bytes));
}

void BM_fwht_f32_scalar_cache(benchmark::State& state) {
  const CacheShape c(state);
  float* x = cache_buf(c.bytes).data();
  const float s = hd::orthonormal_scale(c.n);
  for (auto _ : state) {
    for (std::size_t r = 0; r < c.rows; ++r) hd::reference::fwht(x + r * c.n, c.n, s);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
}

void BM_memcpy_cache(benchmark::State& state) {
  const CacheShape c(state);
  float* src = cache_buf(c.bytes).data();
  float* dst = cache_dst(c.bytes).data();
  for (auto _ : state) {
    std::memcpy(dst, src, c.bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
}

// The arithmetic floor of BM_fwht_f32_cache: an FWHT with the reference's bits rounds log2(n)
// additions per element (one per stage) plus the scale's multiply, so the same bytes take
// rows x n x (log2 n + 1) floating-point operations. Here they run as independent vector
// adds and multiplies on registers (half each, the two kinds of pipes), no memory and no lane
// shuffles: the fastest this CPU can do them. fwht / floor shows how much of the FP rate the
// transform reaches; memcpy / floor is the best ratio to memcpy any such FWHT can have here.
typedef float Vec16 __attribute__((vector_size(64)));
typedef float Vec8 __attribute__((vector_size(32)));
typedef float Vec4 __attribute__((vector_size(16)));
template <class V, int W>
struct FloorOps {
  static constexpr int kChains = 7;  // per kind: latency 3 x 2 pipes needs 6; 7 + 7 + 2 constants = 16 registers
  __attribute__((always_inline)) static inline float run(std::size_t vector_ops) {  // in the target function
    V a[kChains], m[kChains], d = V{} + 0x1p-20f, one = V{} + 1.0f;
    for (int k = 0; k < kChains; ++k) a[k] = V{} + static_cast<float>(k), m[k] = V{} + (1.0f + static_cast<float>(k) * 0x1p-10f);
    asm("" : "+m"(d), "+m"(one));  // unknown to the optimiser: a + d and m * one stay
    const V dd = d, oo = one;
    for (std::size_t i = 0; i < vector_ops; i += 2 * kChains)
      for (int k = 0; k < kChains; ++k) a[k] += dd, m[k] *= oo;
    float sink = 0;
    for (int k = 0; k < kChains; ++k) sink += a[k][0] + m[k][0];
    return sink;
  }
};
__attribute__((target("avx512f"))) float floor_avx512(std::size_t ops) { return FloorOps<Vec16, 16>::run(ops); }
__attribute__((target("avx2"))) float floor_avx2(std::size_t ops) { return FloorOps<Vec8, 8>::run(ops); }
float floor_sse(std::size_t ops) { return FloorOps<Vec4, 4>::run(ops); }

// The floor above with the in-register stages' lane shuffles beside the floating-point
// operations: a transform whose registers hold L consecutive elements moves each register
// through log2(L) lane permutations (the partners at distances 1 .. L/2), of the kinds lowp's
// kernels use (AVX-512: two in-lane permutes and two 128-bit-lane shuffles; AVX2: two and one;
// SSE: two; checked in the disassembly). On x86 they issue to some of the same vector pipes as the adds and multiplies,
// so this is the fastest any FWHT with the reference's bits and register-wide vectors can go
// here, still with no loads or stores: fwht / this floor is how much of it the transform
// reaches. kFp chains of each FP kind, kSh of shuffles (AVX2 and SSE: 16 registers in all).
template <class V, int kFp, int kSh, class Shuffles>
__attribute__((always_inline)) inline float shuffle_floor(std::size_t fp_ops, std::size_t shuffles) {
  V a[kFp], m[kFp], s[kSh], d = V{} + 0x1p-20f, one = V{} + 1.0f;
  for (int k = 0; k < kFp; ++k) a[k] = V{} + static_cast<float>(k), m[k] = V{} + (1.0f + static_cast<float>(k) * 0x1p-10f);
  for (int k = 0; k < kSh; ++k)
    for (std::size_t i = 0; i < sizeof(V) / sizeof(float); ++i) s[k][i] = static_cast<float>(k) + 0.5f * static_cast<float>(i);
  asm("" : "+m"(d), "+m"(one), "+m"(s));  // unknown to the optimiser: no shuffle of a known vector folds away
  const V dd = d, oo = one;
  // Each round: kFp adds and kFp multiplies; the shuffle rounds (kSh chains through all
  // Shuffles::kinds permutations) spread evenly among them.
  const std::size_t rounds = fp_ops / (2 * kFp), sh_rounds = shuffles / (kSh * Shuffles::kinds);
  std::size_t debt = 0;
  for (std::size_t i = 0; i < rounds; ++i) {
    for (int k = 0; k < kFp; ++k) a[k] += dd, m[k] *= oo;
    for (debt += sh_rounds; debt >= rounds; debt -= rounds)
      for (int k = 0; k < kSh; ++k) Shuffles::run(s[k]);
  }
  float sink = 0;
  for (int k = 0; k < kFp; ++k) sink += a[k][0] + m[k][0];
  for (int k = 0; k < kSh; ++k) sink += s[k][1];
  return sink;
}
// The partner permutations of the in-register stages, lane i taking lane i ^ 2^st, as GCC's
// generic vector shuffles (it emits the kernels' kinds for them: see the note above).
template <class V, class I, int kLanes>
struct Partners {
  static constexpr std::size_t kinds = std::countr_zero(static_cast<unsigned>(kLanes));
  __attribute__((always_inline)) static inline void run(V& x) {  // by reference: no vector in the ABI
    for (std::size_t st = 0; st < kinds; ++st) {
      I m;
      for (int i = 0; i < kLanes; ++i) m[i] = i ^ (1 << st);
      x = __builtin_shuffle(x, m);
    }
  }
};
typedef int Idx16 __attribute__((vector_size(64)));
typedef int Idx8 __attribute__((vector_size(32)));
typedef int Idx4 __attribute__((vector_size(16)));
__attribute__((target("avx512f"))) float shuffle_floor_avx512(std::size_t ops, std::size_t sh) {
  return shuffle_floor<Vec16, 7, 7, Partners<Vec16, Idx16, 16>>(ops, sh);
}
__attribute__((target("avx2"))) float shuffle_floor_avx2(std::size_t ops, std::size_t sh) {
  return shuffle_floor<Vec8, 5, 4, Partners<Vec8, Idx8, 8>>(ops, sh);
}
float shuffle_floor_sse(std::size_t ops, std::size_t sh) { return shuffle_floor<Vec4, 5, 4, Partners<Vec4, Idx4, 4>>(ops, sh); }

void BM_fp_floor_cache(benchmark::State& state) {
  const CacheShape c(state);
  // The vector width lowp's own FWHT kernels run at (its dispatch, LOWP_ISA honoured; scalar:
  // SSE's 4 lanes, the baseline every x86-64 has).
  const lowp::Isa isa = lowp::best_isa();
  const bool avx512 = isa == lowp::Isa::avx512, avx2 = isa == lowp::Isa::avx2;
  const std::size_t lanes = avx512 ? 16 : avx2 ? 8 : 4;
  const std::size_t ops = c.rows * c.n / lanes * static_cast<std::size_t>(state.range(0) + 1);
  for (auto _ : state) benchmark::DoNotOptimize(avx512 ? floor_avx512(ops) : avx2 ? floor_avx2(ops) : floor_sse(ops));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
  state.counters["vector_ops"] = static_cast<double>(ops);
}

void BM_fp_shuffle_floor_cache(benchmark::State& state) {
  const CacheShape c(state);
  const lowp::Isa isa = lowp::best_isa();  // as BM_fp_floor_cache
  const bool avx512 = isa == lowp::Isa::avx512, avx2 = isa == lowp::Isa::avx2;
  const std::size_t lanes = avx512 ? 16 : avx2 ? 8 : 4, registers = c.rows * c.n / lanes;
  const std::size_t ops = registers * static_cast<std::size_t>(state.range(0) + 1),
                    shuffles = registers * static_cast<std::size_t>(std::countr_zero(lanes));
  for (auto _ : state)
    benchmark::DoNotOptimize(avx512 ? shuffle_floor_avx512(ops, shuffles)
                             : avx2 ? shuffle_floor_avx2(ops, shuffles)
                                    : shuffle_floor_sse(ops, shuffles));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.bytes));
  state.counters["vector_ops"] = static_cast<double>(ops);
  state.counters["shuffles"] = static_cast<double>(shuffles);
}

// Streaming: every row of a 256 MiB matrix transformed once per pass.
// bytes_per_second is per CPU second of the benchmark thread, like every figure here;
// wall_bytes_per_second divides by elapsed time instead, which shows what a second thread adds.
void fwht_stream(benchmark::State& state, int threads) {
  omp_set_num_threads(threads);
  const std::size_t n = std::size_t{1} << state.range(0);
  const std::size_t rows = kStreamBytes / (n * sizeof(float));
  float* x = stream_src().data();
  const float s = hd::orthonormal_scale(n);
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    hd::fwht_rows(x, rows, n, n, s);
    benchmark::ClobberMemory();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double bytes = static_cast<double>(state.iterations()) * kStreamBytes;
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["wall_bytes_per_second"] = bytes / wall;
  omp_set_num_threads(omp_get_num_procs());
}
void BM_fwht_f32_stream(benchmark::State& state) { fwht_stream(state, 1); }
void BM_fwht_rows_1thread(benchmark::State& state) { fwht_stream(state, 1); }
void BM_fwht_rows_2threads(benchmark::State& state) { fwht_stream(state, 2); }

void BM_memcpy_stream(benchmark::State& state) {
  float* src = stream_src().data();
  float* dst = stream_dst().data();
  for (auto _ : state) {
    std::memcpy(dst, src, kStreamBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kStreamBytes));
}

// bfloat16 storage: the same 256 MiB holds twice as many elements.
void BM_fwht_bf16_stream(benchmark::State& state) {
  omp_set_num_threads(1);
  const std::size_t n = std::size_t{1} << state.range(0);
  auto* x = reinterpret_cast<std::uint16_t*>(stream_dst().data());
  const std::size_t rows = kStreamBytes / (n * sizeof(std::uint16_t));
  for (std::size_t i = 0; i < rows * n; ++i) x[i] = static_cast<std::uint16_t>(0x3f80 | (i & 0x7f));
  const float s = hd::orthonormal_scale(n);
  for (auto _ : state) {
    hd::fwht_rows_bf16(x, rows, n, n, s);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kStreamBytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows * n));
  omp_set_num_threads(omp_get_num_procs());
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int k : {7, 10, 12, 14, 16, 20}) b->Arg(k);
}

BENCHMARK(BM_fwht_f32_cache)->Apply(Sizes);
BENCHMARK(BM_memcpy_cache)->Apply(Sizes);
BENCHMARK(BM_fp_floor_cache)->Arg(10)->Arg(12)->Arg(14);
BENCHMARK(BM_fp_shuffle_floor_cache)->Arg(10)->Arg(12)->Arg(14);
BENCHMARK(BM_fwht_f32_scalar_cache)->Apply(Sizes);
BENCHMARK(BM_fwht_f32_l1)->Arg(10)->Arg(12);
BENCHMARK(BM_memcpy_l1);
BENCHMARK(BM_fwht_f32_stream)->Apply(Sizes);
BENCHMARK(BM_memcpy_stream)->Apply(Sizes);
BENCHMARK(BM_fwht_bf16_stream)->Arg(12);
BENCHMARK(BM_fwht_rows_1thread)->Arg(12);
BENCHMARK(BM_fwht_rows_2threads)->Arg(12);

}  // namespace
