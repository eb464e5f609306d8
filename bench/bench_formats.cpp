// Bulk format casts: float32 -> codes, codes -> float32 and fake-quant, against a memcpy of
// the same float32 bytes. Names are read by scripts:
//   BM_cast_<format>_<nearest|stochastic>_<cache|stream>, BM_decode_<format>_<cache|stream>,
//   BM_fakequant_<format>_<nearest|stochastic>_<cache|stream>, BM_memcpy_<cache|stream>,
// with a _scalar (reference kernel) and _avx2 suffix for the forced-ISA variants.
// cache = 16 KiB of float32 input, stream = 64 MiB; one thread; items are float32 elements and
// bytes count 4 per element whatever the format's width.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"

namespace {

constexpr std::size_t kCache = 16 * 1024 / 4;
constexpr std::size_t kStream = 64 * 1024 * 1024 / 4;

// Normally distributed inputs (sigma 4: most values in range of every benchmarked format,
// some overflow e2m1), built once per size.
const std::vector<float>& input(std::size_t n) {
  static std::map<std::size_t, std::vector<float>> cache;
  auto& v = cache[n];
  if (v.empty()) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 4.0f);
    v.resize(n);
    for (auto& x : v) x = nd(rng);
  }
  return v;
}

void set_counters(benchmark::State& st, std::size_t n) {
  const auto items = static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n);
  st.SetItemsProcessed(items);
  st.SetBytesProcessed(items * 4);
}

void bm_cast(benchmark::State& st, lowp::Format f, lowp::Round r, std::size_t n, std::optional<lowp::Isa> isa) {
  const auto& in = input(n);
  std::vector<std::uint8_t> out(lowp::encoded_bytes(f, n), 0);
  lowp::BulkOptions o;
  o.cast.round = r;
  o.seed = 42;
  o.isa = isa;
  for (auto _ : st) {
    lowp::encode_f32(f, in, out, o);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(st, n);
}

void bm_decode(benchmark::State& st, lowp::Format f, std::size_t n, std::optional<lowp::Isa> isa) {
  std::vector<std::uint8_t> codes(lowp::encoded_bytes(f, n));
  lowp::encode_f32(f, input(n), codes);
  std::vector<float> out(n, 0.0f);
  for (auto _ : st) {
    lowp::decode_f32(f, codes, out, isa);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(st, n);
}

// In place, as the API works; after the first pass the values are representable, which the
// branch-free SIMD kernels do not notice.
void bm_fakequant(benchmark::State& st, lowp::Format f, lowp::Round r, std::size_t n, std::optional<lowp::Isa> isa) {
  std::vector<float> x = input(n);
  lowp::BulkOptions o;
  o.cast.round = r;
  o.seed = 42;
  o.isa = isa;
  for (auto _ : st) {
    lowp::fake_quant_f32(f, x, o);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  set_counters(st, n);
}

void bm_memcpy(benchmark::State& st, std::size_t n) {
  const auto& in = input(n);
  std::vector<float> out(n, 0.0f);
  for (auto _ : st) {
    std::memcpy(out.data(), in.data(), n * sizeof(float));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(st, n);
}

const bool registered = [] {
  const std::pair<const char*, std::size_t> sizes[] = {{"cache", kCache}, {"stream", kStream}};
  const std::pair<const char*, lowp::Round> modes[] = {{"nearest", lowp::Round::nearest_even},
                                                       {"stochastic", lowp::Round::stochastic}};
  // Default dispatch (best ISA), then the forced variants that differ from it.
  std::vector<std::pair<std::string, std::optional<lowp::Isa>>> isas{{"", std::nullopt}};
  if (lowp::best_isa() == lowp::Isa::avx512) isas.push_back({"_avx2", lowp::Isa::avx2});
  if (lowp::best_isa() != lowp::Isa::scalar) isas.push_back({"_scalar", lowp::Isa::scalar});
  for (auto [sz, n] : sizes)
    benchmark::RegisterBenchmark((std::string("BM_memcpy_") + sz).c_str(), bm_memcpy, n);
  for (const auto& [suffix, isa] : isas)
    for (const char* name : {"e4m3", "e5m2", "e2m1", "bf16"}) {
      const lowp::Format f = lowp::parse_format(name);
      for (auto [sz, n] : sizes) {
        for (auto [mode, r] : modes) {
          benchmark::RegisterBenchmark(("BM_cast_" + std::string(name) + "_" + mode + "_" + sz + suffix).c_str(),
                                       bm_cast, f, r, n, isa);
          benchmark::RegisterBenchmark(("BM_fakequant_" + std::string(name) + "_" + mode + "_" + sz + suffix).c_str(),
                                       bm_fakequant, f, r, n, isa);
        }
        benchmark::RegisterBenchmark(("BM_decode_" + std::string(name) + "_" + sz + suffix).c_str(), bm_decode, f, n, isa);
      }
    }
  return true;
}();

}  // namespace
