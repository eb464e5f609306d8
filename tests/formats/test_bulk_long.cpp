// Exhaustive: the SIMD encode kernels (best ISA and AVX2) equal the scalar reference on every
// one of the 2^32 float32 bit patterns. Minutes of CPU (the scalar codec is the slow side),
// so this binary is labelled `long`; chunks of patterns run in parallel with OpenMP.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"

namespace lowp {
namespace {

struct Mismatch {
  std::uint64_t count = 0;
  std::uint32_t first_pattern = 0;
  std::uint32_t scalar = 0, simd = 0;
  Isa isa = Isa::scalar;
};

// Casts all 2^32 patterns with the scalar reference and each SIMD ISA; element i of the whole
// stream is pattern i (so stochastic rounding draws random_bits(key, pattern)).
Mismatch exhaustive(const Format& f, const CastOptions& cast) {
  std::vector<Isa> isas;
  if (isa_available(Isa::avx2)) isas.push_back(Isa::avx2);
  if (best_isa() != Isa::avx2 && best_isa() != Isa::scalar) isas.push_back(best_isa());
  Mismatch mm;
  if (isas.empty()) return mm;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  constexpr long kChunks = static_cast<long>((std::uint64_t{1} << 32) / kChunk);
  const std::size_t bytes = encoded_bytes(f, kChunk);
  const int sb = storage_bits(f);
#pragma omp parallel
  {
    std::vector<float> in(kChunk);
    std::vector<std::uint8_t> ref(bytes), got(bytes);
#pragma omp for schedule(dynamic)
    for (long c = 0; c < kChunks; ++c) {
      const auto base = static_cast<std::uint32_t>(static_cast<std::uint64_t>(c) * kChunk);
      for (std::size_t i = 0; i < kChunk; ++i) {
        const auto u = base + static_cast<std::uint32_t>(i);
        std::memcpy(&in[i], &u, 4);
      }
      BulkOptions o;
      o.cast = cast;
      o.seed = 0x5eed;
      o.offset = base;
      o.isa = Isa::scalar;
      encode_f32(f, in, ref, o);
      for (Isa isa : isas) {
        o.isa = isa;
        encode_f32(f, in, got, o);
        if (got == ref) continue;
        for (std::size_t i = 0; i < kChunk; ++i) {
          // 8-bit storage (every format here), else the packed layout of bulk.hpp
          const auto at = [&](const std::vector<std::uint8_t>& b) -> std::uint32_t {
            if (sb == 8) return b[i];
            if (sb == 4) return (b[i / 2] >> (4 * (i % 2))) & 0xf;
            return ((b[i / 4 * 3] | b[i / 4 * 3 + 1] << 8 | b[i / 4 * 3 + 2] << 16) >> (6 * (i % 4))) & 0x3f;
          };
          if (at(ref) == at(got)) continue;
#pragma omp critical
          {
            if (mm.count == 0 || base + i < mm.first_pattern)
              mm = {mm.count, base + static_cast<std::uint32_t>(i), at(ref), at(got), isa};
            ++mm.count;
          }
        }
      }
    }
  }
  return mm;
}

std::string describe(const Format& f, const CastOptions& o, const Mismatch& m) {
  char b[200];
  std::snprintf(b, sizeof b, "%s %s%s: %llu mismatches, first input 0x%08x: scalar 0x%02x, %s 0x%02x",
                format_name(f).c_str(), std::string(round_name(o.round)).c_str(), o.saturate ? " sat" : "",
                static_cast<unsigned long long>(m.count), m.first_pattern, m.scalar,
                std::string(isa_name(m.isa)).c_str(), m.simd);
  return b;
}

// Each case costs ~38 CPU-seconds (2^32 scalar casts; ~19 s on two cores), so CI runs the
// cases marked `ci` (8 cases, about two and a half minutes on two cores): nearest-even on one
// 8-bit preset of each kind of special-value and range rule (IEEE-like, fn, fnuz, P3109,
// unsigned fn, no-zero E8M0) and stochastic E4M3FN. LOWP_EXHAUSTIVE_ALL=1 runs all 29 cases
// (about nine minutes): the other presets, and E4M3FN/E5M2 under every mode and saturating.
// Every mode is also covered at every tie and boundary by the unit tests.
struct Case {
  const char* format;
  Round round;
  bool saturate;
  bool ci;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char* f : {"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e8m0fnu", "float8_ue4m3",
                        "binary8p1", "binary8p4"})
    v.push_back({f, Round::nearest_even, false, true});
  for (const char* f : {"float8_e3m4", "float8_e5m2fnuz", "float8_e4m3", "binary8p2", "binary8p3", "binary8p5",
                        "binary8p6", "binary8p7", "float8_e8m0fnu_rne", "p3109_k8p3ue", "p3109_k8p1ue",
                        "p3109_k6p3sf"})
    v.push_back({f, Round::nearest_even, false, false});
  for (const char* f : {"float8_e4m3fn", "float8_e5m2"}) {
    v.push_back({f, Round::stochastic, false, f == std::string("float8_e4m3fn")});
    v.push_back({f, Round::toward_neg, false, false});
    v.push_back({f, Round::odd, false, false});
    for (Round r : {Round::nearest_away, Round::toward_zero, Round::toward_pos}) v.push_back({f, r, false, false});
  }
  v.push_back({"float8_e4m3fn", Round::nearest_even, true, false});
  v.push_back({"float8_e5m2", Round::nearest_even, true, false});
  return v;
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.format << " " << round_name(c.round) << (c.saturate ? " saturate" : "");
}

class EveryPattern : public ::testing::TestWithParam<Case> {};

TEST_P(EveryPattern, SimdEqualsScalar) {
  const Case& c = GetParam();
  const char* all = std::getenv("LOWP_EXHAUSTIVE_ALL");
  if (!c.ci && !(all && std::string(all) == "1")) GTEST_SKIP() << "outside the CI set; LOWP_EXHAUSTIVE_ALL=1 runs it";
  if (!isa_available(Isa::avx2)) GTEST_SKIP() << "no SIMD instruction set on this CPU";
  const Format f = parse_format(c.format);
  const CastOptions o{c.round, c.saturate, false};
  const Mismatch m = exhaustive(f, o);
  EXPECT_EQ(m.count, 0u) << describe(f, o, m);
}

INSTANTIATE_TEST_SUITE_P(Bulk, EveryPattern, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::string(info.param.format) + "_" + std::string(round_name(info.param.round)) +
         (info.param.saturate ? "_saturate" : "");
});

}  // namespace
}  // namespace lowp
