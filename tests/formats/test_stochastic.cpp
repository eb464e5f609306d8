// Stochastic rounding through the scalar codec with the counter-based bits of rng.hpp:
// reproducible per (seed, index) whatever the thread count, unbiased (the mean of many casts
// is the value within 5 sigma), each outcome one of the two neighbours (from the oracle), and
// the frequency of rounding up equal to the discarded fraction.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/rng.hpp"
#include "reference.hpp"

namespace lowp::test {
namespace {

const CastOptions kSr{Round::stochastic, false, false};

std::vector<std::uint32_t> cast_all(const Format& f, const std::vector<float>& x, std::uint64_t seed, int threads) {
  std::vector<std::uint32_t> out(x.size());
  const RngKey key = rng_key(seed);
  const auto n = static_cast<std::int64_t>(x.size());
#pragma omp parallel for num_threads(threads) schedule(dynamic, 37)
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    out[k] = encode(f, x[k], kSr, random_bits(key, k));
  }
  return out;
}

TEST(Stochastic, SameSeedSameCodesAtAnyThreadCount) {
  const Format f = parse_format("float8_e4m3fn");
  std::vector<float> x(100000);
  SplitMix rng{7};
  for (auto& v : x) v = std::ldexp(static_cast<float>(rng.next() >> 40), static_cast<int>(rng.next() % 16) - 32);
  const auto ref = cast_all(f, x, 42, 1);
  EXPECT_EQ(cast_all(f, x, 42, 1), ref);
  EXPECT_EQ(cast_all(f, x, 42, 2), ref);
  EXPECT_EQ(cast_all(f, x, 42, 3), ref);
  // Another seed changes a good share of the inexact casts.
  const auto other = cast_all(f, x, 43, 2);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differ += other[i] != ref[i];
  EXPECT_GT(differ, x.size() / 10);
}

struct Case {
  const char* format;
  double x;
};

// Values inside a binade, in the subnormal range, just below max, integers, both signs.
const Case kCases[] = {
    {"float8_e4m3fn", 1.3},       {"float8_e4m3fn", -0.7},     {"float8_e4m3fn", 0x1.8p-9 * 0.3},
    {"float8_e4m3fn", 0x1p-10},   {"float8_e4m3fn", 430},      {"float8_e4m3fn", -447.9},
    {"float8_e5m2", 3.3e-5},      {"float8_e5m2", -50000},     {"float8_e5m2", 0.1},
    {"float4_e2m1fn", 2.6},       {"float4_e2m1fn", -0.2},     {"float4_e2m1fn", 5.99},
    {"float6_e3m2fn", 0.03},      {"float8_e8m0fnu", 3.0},     {"float8_e8m0fnu", 1e-30},
    {"binary8p3", 1e-5},          {"bfloat16", 3.14159},       {"float16", 1e-6},
    {"p3109_k8p1se", 3.3},        {"p3109_k8p3ue", 0.3},       {"p3109_k8p3ue", 1e-10},
    {"p3109_k5p2sf", -0.3},       {"p3109_k3p2ue", 1.4},       {"float8_e8m0fnu_rne", 3.0},
    {"int8", 2.3},                {"int8", -126.75},           {"uint4", 0.001},
};

TEST(Stochastic, UnbiasedAndOnlyNeighbours) {
  constexpr int kN = 1 << 17;
  std::uint64_t seed = 0;
  for (const Case& c : kCases) {
    ++seed;
    const Format f = parse_format(c.format);
    const Spec s = make_spec(f);
    for (bool as_float : {false, true}) {
      SCOPED_TRACE(std::string(c.format) + (as_float ? " float " : " double ") + std::to_string(c.x));
      const double x = as_float ? static_cast<double>(static_cast<float>(c.x)) : c.x;
      const oracle::Bracket b = oracle::bracket(s.system, Real(x));
      ASSERT_FALSE(b.exact);
      const double lo = b.lo.convert_to<double>(), hi = b.hi.convert_to<double>();
      const double frac = ((Real(std::abs(x)) - b.lo) / (b.hi - b.lo)).convert_to<double>();
      const RngKey key = rng_key(seed * 2 + as_float);
      double sum = 0;
      int ups = 0;
      for (int i = 0; i < kN; ++i) {
        const std::uint32_t u = random_bits(key, static_cast<std::uint64_t>(i));
        const double v = decode(f, as_float ? encode(f, static_cast<float>(x), kSr, u) : encode(f, x, kSr, u));
        const double mag = std::abs(v);
        ASSERT_TRUE(mag == lo || mag == hi) << "outcome " << v << " not in {" << lo << ", " << hi << "}";
        ASSERT_EQ(v < 0, x < 0 && mag != 0);
        ups += mag == hi;
        sum += mag;
      }
      // Bernoulli(frac) per cast: the count of ups and the mean within 5 sigma.
      const double sd_frac = std::sqrt(frac * (1 - frac) / kN);
      EXPECT_NEAR(static_cast<double>(ups) / kN, frac, 5 * sd_frac + 0x1p-32);
      EXPECT_NEAR(sum / kN, std::abs(x), 5 * (hi - lo) * sd_frac + (hi - lo) * 0x1p-32);
    }
  }
}

// The probability of rounding up is exactly floor(f * 2^32) / 2^32: check the threshold.
TEST(Stochastic, ThresholdIsTheFraction) {
  const Format f = parse_format("float8_e5m2");
  const Spec s = make_spec(f);
  for (double x : {1.1, 1.125 + 0x1p-30, 0x1p-16 * 0.75, 1.0 + 0x1p-40}) {
    const oracle::Bracket b = oracle::bracket(s.system, Real(x));
    const double lo = b.lo.convert_to<double>(), hi = b.hi.convert_to<double>();
    const auto t = static_cast<std::uint32_t>((std::uint64_t{1} << 32) - b.frac32);
    EXPECT_EQ(decode(f, encode(f, x, kSr, t)), b.frac32 == 0 ? lo : hi) << x;
    EXPECT_EQ(decode(f, encode(f, x, kSr, t - 1)), lo) << x;
  }
  // Exact values never move.
  for (std::uint32_t u : {0u, 1u, 0x80000000u, 0xffffffffu}) EXPECT_EQ(encode(f, 1.25, kSr, u), encode(f, 1.25));
}

}  // namespace
}  // namespace lowp::test
