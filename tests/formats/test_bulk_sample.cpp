// The exhaustive tier's cases (bulk_patterns.hpp) on a deterministic sample of 2^22 float32 bit
// patterns, in every run: every sign and exponent, the top 11 significand bits in every
// combination (so every round bit and every lower significand bit an 8-bit target keeps, normal
// or subnormal, with ties exact), and the low 12 bits in 4 states: 0 (exact ties), 1 and 0xfff
// (sticky bit set at either end) and a hashed value (stochastic rounding compares every
// discarded bit with its random draw).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "bulk_patterns.hpp"
#include "lowp/numerics/rng.hpp"

namespace lowp {
namespace {

using bulk_patterns::Case;

constexpr std::uint64_t kSample = std::uint64_t{1} << 22;  // 2^9 sign/exponent x 2^11 top x 4 low

std::uint32_t sampled_pattern(std::uint64_t i) {
  const auto low_state = static_cast<std::uint32_t>(i & 3);
  const auto top = static_cast<std::uint32_t>((i >> 2) & 0x7ff);
  const auto sign_exp = static_cast<std::uint32_t>(i >> 13);
  std::uint32_t low = 0;
  switch (low_state) {
    case 0: low = 0; break;
    case 1: low = 1; break;
    case 2: low = 0xfff; break;
    default: low = static_cast<std::uint32_t>(random_bits(rng_key(0xb17), i)) & 0xfff; break;
  }
  return sign_exp << 23 | top << 12 | low;
}

// The sample's mapping reaches every sign/exponent, every top-11-bit value and all 4 low states.
TEST(BulkSample, CoversEverySignExponentAndTopBits) {
  std::vector<bool> seen_exp(512), seen_top(2048);
  std::uint64_t ties = 0;
  for (std::uint64_t i = 0; i < kSample; ++i) {
    const std::uint32_t p = sampled_pattern(i);
    seen_exp[p >> 23] = true;
    seen_top[(p >> 12) & 0x7ff] = true;
    ties += (p & 0xfff) == 0;
  }
  EXPECT_EQ(std::count(seen_exp.begin(), seen_exp.end(), true), 512);
  EXPECT_EQ(std::count(seen_top.begin(), seen_top.end(), true), 2048);
  EXPECT_GE(ties, kSample / 4);
}

class SampledPattern : public ::testing::TestWithParam<Case> {};

TEST_P(SampledPattern, SimdEqualsScalar) {
  const Case& c = GetParam();
  if (bulk_patterns::kernels().empty()) GTEST_SKIP() << "no SIMD instruction set on this CPU";
  const Format f = parse_format(c.format);
  const CastOptions o{c.round, c.saturate, false};
  const auto m = bulk_patterns::compare(f, o, kSample, sampled_pattern);
  EXPECT_EQ(m.count, 0u) << bulk_patterns::describe(f, o, m);
}

INSTANTIATE_TEST_SUITE_P(Bulk, SampledPattern, ::testing::ValuesIn(bulk_patterns::cases()),
                         [](const auto& info) { return bulk_patterns::case_name(info.param); });

}  // namespace
}  // namespace lowp
