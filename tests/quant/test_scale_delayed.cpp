// Delayed scaling, step by step: the history window, its reduction, the margin, the old scale
// kept on a zero or non-finite amax, and the per-step quantize helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/quant/delayed_scaling.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

using test::kInf;
using test::kNaN;

TEST(DelayedScaling, MaxOverAWindowOfThree) {
  DelayedScaling d(448.0f, {3, AmaxReduce::max, 0});
  EXPECT_EQ(d.scale(), 1.0f);  // before any amax
  d.record(2.0f);
  EXPECT_EQ(d.scale(), 224.0f);  // 448 / 2
  d.record(8.0f);
  EXPECT_EQ(d.scale(), 56.0f);  // max(8, 2)
  d.record(1.0f);
  EXPECT_EQ(d.scale(), 56.0f);  // max(1, 8, 2)
  d.record(4.0f);
  EXPECT_EQ(d.scale(), 56.0f);  // max(4, 1, 8): the 2 has left the window
  d.record(1.0f);
  EXPECT_EQ(d.scale(), 112.0f);  // max(1, 4, 1): the 8 has left
  EXPECT_EQ(d.history(), (std::vector<float>{1.0f, 4.0f, 1.0f}));
}

TEST(DelayedScaling, MostRecentFollowsTheLastAmax) {
  DelayedScaling d(448.0f, {16, AmaxReduce::most_recent, 0});
  d.record(8.0f);
  EXPECT_EQ(d.scale(), 56.0f);
  d.record(2.0f);
  EXPECT_EQ(d.scale(), 224.0f);
  d.record(0.0f);  // zero amax: old scale kept
  EXPECT_EQ(d.scale(), 224.0f);
  d.record(kNaN);
  EXPECT_EQ(d.scale(), 224.0f);
  d.record(kInf);
  EXPECT_EQ(d.scale(), 224.0f);
  d.record(7.0f);
  EXPECT_EQ(d.scale(), 64.0f);
  EXPECT_EQ(d.history().size(), 6u);
}

TEST(DelayedScaling, MarginDividesByAPowerOfTwo) {
  DelayedScaling d(parse_format("e4m3"), {4, AmaxReduce::max, 2});
  d.record(3.0f);
  EXPECT_EQ(d.scale(), 448.0f / 3.0f / 4.0f);
  DelayedScaling e(parse_format("e5m2"), {4, AmaxReduce::max, -1});
  e.record(1024.0f);
  EXPECT_EQ(e.scale(), 57344.0f / 1024.0f * 2.0f);
}

TEST(DelayedScaling, ZeroAndNonFiniteAmaxKeepTheOldScale) {
  DelayedScaling d(448.0f, {2, AmaxReduce::max, 0});
  d.record(0.0f);
  EXPECT_EQ(d.scale(), 1.0f);  // nothing seen yet: still 1
  d.record(4.0f);
  EXPECT_EQ(d.scale(), 112.0f);
  d.record(kNaN);  // a NaN in the window holds the scale (torch.max propagates NaN)
  EXPECT_EQ(d.scale(), 112.0f);
  d.record(1.0f);  // window (1, NaN): still held
  EXPECT_EQ(d.scale(), 112.0f);
  d.record(2.0f);  // window (2, 1)
  EXPECT_EQ(d.scale(), 224.0f);
  d.record(kInf);
  EXPECT_EQ(d.scale(), 224.0f);
}

TEST(DelayedScaling, BadConfigurationIsAnError) {
  test::expect_error([] { DelayedScaling(448.0f, {0, AmaxReduce::max, 0}); }, {"history length 0"});
  test::expect_error([] { DelayedScaling(0.0f); }, {"format maximum"});
}

// Each step quantizes with the scale from the earlier steps, then records its own amax.
TEST(DelayedScaling, QuantizeDelayedUsesTheHistoryThenRecords) {
  const QuantSpec spec = parse_quant_spec("e4m3");
  DelayedScaling d(spec.format, {8, AmaxReduce::max, 0});
  std::vector<float> x = test::normal_floats(4 * 32, 21);
  CastOptions sat;
  sat.saturate = true;
  for (int step = 0; step < 4; ++step) {
    for (float& v : x) v *= 3.0f;  // growing: the delayed scale lags behind and saturates
    const float s = d.scale();
    float amax = 0;
    for (const float v : x) amax = std::max(amax, std::fabs(v));
    const QuantizedTensor q = quantize_delayed(spec, x.data(), 4, 32, d);
    ASSERT_EQ(q.multipliers.size(), 1u);
    EXPECT_EQ(q.multipliers[0], s);
    std::vector<float> out(x.size());
    dequantize(q, out.data());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint32_t code = encode(spec.format, x[i] * s, sat);
      ASSERT_EQ(q.codes[i], code) << step << " " << i;
      ASSERT_EQ(out[i], static_cast<float>(decode(spec.format, code)) / s);
    }
    EXPECT_EQ(d.history().front(), amax);
    EXPECT_EQ(d.scale(), 448.0f / amax);
  }
  // fake_quant_delayed agrees with quantize_delayed for the same state.
  DelayedScaling a(spec.format), b(spec.format);
  a.record(5.0f);
  b.record(5.0f);
  std::vector<float> f = x, out(x.size());
  fake_quant_delayed(spec, f.data(), 4, 32, a);
  dequantize(quantize_delayed(spec, x.data(), 4, 32, b), out.data());
  EXPECT_EQ(f, out);
  EXPECT_EQ(a.scale(), b.scale());
  // Power-of-two rule: the history's scale rounded down.
  DelayedScaling p(spec.format);
  p.record(3.0f);  // 149.33 -> 128
  EXPECT_EQ(quantize_delayed(parse_quant_spec("e4m3:pow2"), x.data(), 4, 32, p).multipliers[0], 128.0f);
  // Only per-tensor multiplier rules.
  test::expect_error([&] { quantize_delayed(parse_quant_spec("mxfp8"), x.data(), 4, 32, p); }, {"delayed", "e4m3"});
  test::expect_error([&] { quantize_delayed(parse_quant_spec("e4m3:row"), x.data(), 4, 32, p); }, {"delayed", "row"});
}

}  // namespace
}  // namespace lowp::quant
