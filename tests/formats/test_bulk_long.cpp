// Exhaustive: the SIMD encode kernels (best ISA and AVX2) equal the scalar reference on every
// one of the 2^32 float32 bit patterns. Minutes of CPU (the scalar codec is the slow side), so
// this binary is in the `exhaustive` CTest tier (.ci/run runs it; the README's test command runs
// test_bulk_sample.cpp's deterministic sample of the same cases instead).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bulk_patterns.hpp"

namespace lowp {
namespace {

using bulk_patterns::Case;

class EveryPattern : public ::testing::TestWithParam<Case> {};

// Each case costs ~38 CPU-seconds (2^32 scalar casts; ~19 s on two cores): the tier runs the
// 8 `exhaustive_default` cases (about two and a half minutes on two cores); LOWP_EXHAUSTIVE_ALL=1
// runs all 29 (about nine minutes). Every mode is also covered at every tie and boundary by the
// unit tests, and every case by the sample.
TEST_P(EveryPattern, SimdEqualsScalar) {
  const Case& c = GetParam();
  const char* all = std::getenv("LOWP_EXHAUSTIVE_ALL");
  if (!c.exhaustive_default && !(all && std::string(all) == "1"))
    GTEST_SKIP() << "outside the default exhaustive set; LOWP_EXHAUSTIVE_ALL=1 runs it";
  if (bulk_patterns::kernels().empty()) GTEST_SKIP() << "no SIMD instruction set on this CPU";
  const Format f = parse_format(c.format);
  const CastOptions o{c.round, c.saturate, false};
  const auto m = bulk_patterns::compare(f, o, std::uint64_t{1} << 32,
                                        [](std::uint64_t i) { return static_cast<std::uint32_t>(i); });
  EXPECT_EQ(m.count, 0u) << bulk_patterns::describe(f, o, m);
}

INSTANTIATE_TEST_SUITE_P(Bulk, EveryPattern, ::testing::ValuesIn(bulk_patterns::cases()),
                         [](const auto& info) { return bulk_patterns::case_name(info.param); });

}  // namespace
}  // namespace lowp
