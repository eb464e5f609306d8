// Exhaustive: the SIMD encode kernels (best ISA and AVX2) equal the scalar reference on every
// one of the 2^32 float32 bit patterns (bulk_patterns::compare_every_pattern). Seconds to a
// minute of CPU per case, so this binary is in the `exhaustive` CTest tier (.ci/run runs it;
// the README's test command runs test_bulk_sample.cpp's deterministic sample of the same cases).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bulk_patterns.hpp"

namespace lowp {
namespace {

using bulk_patterns::Case;

class EveryPattern : public ::testing::TestWithParam<Case> {};

// A deterministic rounding costs ~5 CPU-seconds per ISA (the kernel on 2^32 inputs; the scalar
// reference only at the ends of each run of equal codes), stochastic rounding ~38 (the scalar
// reference on every input). The tier runs the 8 `exhaustive_default` cases (about 40 s on two
// cores); LOWP_EXHAUSTIVE_ALL=1 runs all 29. Every mode is also covered at every tie and
// boundary by the unit tests, and every case by the sample.
TEST_P(EveryPattern, SimdEqualsScalar) {
  const Case& c = GetParam();
  const char* all = std::getenv("LOWP_EXHAUSTIVE_ALL");
  if (!c.exhaustive_default && !(all && std::string(all) == "1"))
    GTEST_SKIP() << "outside the default exhaustive set; LOWP_EXHAUSTIVE_ALL=1 runs it";
  if (bulk_patterns::kernels().empty()) GTEST_SKIP() << "no SIMD instruction set on this CPU";
  const Format f = parse_format(c.format);
  const CastOptions o{c.round, c.saturate, false};
  const auto m = bulk_patterns::compare_every_pattern(f, o);
  EXPECT_EQ(m.count, 0u) << bulk_patterns::describe(f, o, m);
}

INSTANTIATE_TEST_SUITE_P(Bulk, EveryPattern, ::testing::ValuesIn(bulk_patterns::cases()),
                         [](const auto& info) { return bulk_patterns::case_name(info.param); });

}  // namespace
}  // namespace lowp
