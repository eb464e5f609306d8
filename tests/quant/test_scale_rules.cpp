// The scale rules, each against the formula of its spec computed independently here
// (double-precision frexp/ldexp, hand-worked NVFP4 cases, a brute-force MSE grid scan).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <string>
#include <limits>
#include <random>
#include <vector>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/quant/scale_rules.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

using test::kInf;
using test::kNaN;

TEST(ScaleRules, FiniteAmaxSkipsNanAndInf) {
  const std::vector<float> x = {1.0f, -3.5f, kNaN, kInf, -kInf, 2.0f, -0.0f};
  EXPECT_EQ(finite_amax(x.data(), x.size()), 3.5f);
  const std::vector<float> specials = {kNaN, kInf, 0.0f, -0.0f};
  EXPECT_EQ(finite_amax(specials.data(), specials.size()), 0.0f);
  EXPECT_EQ(finite_amax(nullptr, 0), 0.0f);
  const float sub = std::numeric_limits<float>::denorm_min() * 3;
  const std::vector<float> tiny = {sub, -sub / 3};
  EXPECT_EQ(finite_amax(tiny.data(), tiny.size()), sub);
}

TEST(ScaleRules, AmaxMultiplierIsFmtMaxOverAmaxInFloat32) {
  for (const float amax : {1.0f, 3.0f, 0.1f, 1e-20f, 12345.678f, 3e38f}) {
    const float expect = 448.0f / amax;  // one float32 division, as torchao
    EXPECT_EQ(amax_multiplier(amax, 448.0f), expect) << amax;
  }
  // amax 0 or non-finite: no division, s = 1. amax so small that s overflows: FLT_MAX.
  EXPECT_EQ(amax_multiplier(0.0f, 448.0f), 1.0f);
  EXPECT_EQ(amax_multiplier(kNaN, 448.0f), 1.0f);
  EXPECT_EQ(amax_multiplier(kInf, 448.0f), 1.0f);
  EXPECT_EQ(amax_multiplier(1e-44f, 448.0f), FLT_MAX);
  EXPECT_EQ(absmax_int_multiplier(2.0f, parse_format("int8")), 63.5f);  // 127 / 2
  EXPECT_EQ(absmax_int_multiplier(2.0f, parse_format("int4_sym")), 3.5f);
}

TEST(ScaleRules, Pow2MultiplierIsTheLargestPowerOfTwoBelow) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> lg(-30, 30);
  for (int i = 0; i < 2000; ++i) {
    const float amax = static_cast<float>(std::exp2(lg(gen)));
    const double s = static_cast<double>(amax_multiplier(amax, 448.0f));
    const double p = static_cast<double>(amax_pow2_multiplier(amax, 448.0f));
    int e = 0;
    EXPECT_EQ(std::frexp(p, &e), 0.5) << "not a power of two: " << p;
    EXPECT_LE(p, s);
    EXPECT_GT(2 * p, s);
  }
  EXPECT_EQ(amax_pow2_multiplier(448.0f, 448.0f), 1.0f);
  EXPECT_EQ(amax_pow2_multiplier(0.0f, 448.0f), 1.0f);
  EXPECT_EQ(amax_pow2_multiplier(300.0f, 448.0f), 1.0f);   // 1.49 -> 1
  EXPECT_EQ(amax_pow2_multiplier(100.0f, 448.0f), 4.0f);   // 4.48 -> 4
}

// OCP MX v1.0: X = 2^(floor(log2(amax)) - emax_elem), emax_elem from the element tables.
TEST(ScaleRules, MxFloorRuleMatchesTheSpecFormula) {
  struct Case {
    const char* fmt;
    int emax;
  };
  for (const Case c : {Case{"e4m3", 8}, Case{"e5m2", 15}, Case{"e2m3", 2}, Case{"e3m2", 4}, Case{"e2m1", 2}}) {
    const Format f = parse_format(c.fmt);
    ASSERT_EQ(mx_emax_elem(f), c.emax) << c.fmt;
    test::SplitMix rng{42};
    for (int i = 0; i < 5000; ++i) {
      // Random positive finite float32 bit patterns, subnormals included.
      const auto b = static_cast<std::uint32_t>(rng.next() % 0x7f800000u);
      float amax;
      std::memcpy(&amax, &b, 4);
      if (amax == 0) continue;
      int e = 0;
      std::frexp(static_cast<double>(amax), &e);
      const int expect = std::clamp(e - 1 - c.emax, -127, 127);
      ASSERT_EQ(mx_scale_exponent(amax, c.emax), expect) << c.fmt << " amax " << amax;
      // The spec's reading: 2^(shared + emax) <= amax < 2^(shared + emax + 1) when unclamped.
      if (expect > -127) {
        EXPECT_LE(std::ldexp(1.0, expect + c.emax), static_cast<double>(amax));
        EXPECT_GT(std::ldexp(1.0, expect + c.emax + 1), static_cast<double>(amax));
      }
    }
  }
  EXPECT_EQ(mx_scale_exponent(0.0f, 8), -127);
  EXPECT_EQ(mx_scale_exponent(448.0f, 8), 0);
  EXPECT_EQ(mx_scale_exponent(511.0f, 8), 0);
  EXPECT_EQ(mx_scale_exponent(512.0f, 8), 1);
  EXPECT_EQ(mx_scale_exponent(6.0f, 2), 0);
  EXPECT_EQ(mx_scale_exponent(FLT_MAX, 2), 125);
  EXPECT_EQ(e8m0_code(-127), 0);
  EXPECT_EQ(e8m0_code(0), 127);
  EXPECT_EQ(e8m0_code(127), 254);
}

// RCEIL: the smallest 2^e >= d, d = amax * (1 / fmt_max) in float32 (torchao, TransformerEngine);
// in the normal range that is the smallest 2^e with 2^e * fmt_max >= amax. Thresholds and every
// rule: test_scale_rules_mx.cpp.
TEST(ScaleRules, MxRceilIsTheSmallestPowerOfTwoCoveringAmax) {
  for (const float fmax : {448.0f, 57344.0f, 6.0f, 7.5f, 28.0f}) {
    test::SplitMix rng{3};
    for (int i = 0; i < 5000; ++i) {
      const auto b = static_cast<std::uint32_t>(rng.next() % 0x7f800000u);
      float amax;
      std::memcpy(&amax, &b, 4);
      if (amax == 0) continue;
      const float rcp = static_cast<float>(1.0 / static_cast<double>(fmax));
      const double d = static_cast<float>(static_cast<double>(amax) * static_cast<double>(rcp));
      int e = -127;
      while (e < 127 && std::ldexp(1.0, e) < d) ++e;
      ASSERT_EQ(mx_rceil_scale_exponent(amax, fmax), e) << fmax << " " << amax;
      if (d >= FLT_MIN) {  // the exact reading, away from float32's subnormals
        int x = -127;
        while (x < 127 && std::ldexp(static_cast<double>(fmax), x) < static_cast<double>(amax)) ++x;
        EXPECT_EQ(e, x) << fmax << " " << amax;
      }
    }
    EXPECT_EQ(mx_rceil_scale_exponent(fmax, fmax), 0);
    EXPECT_EQ(mx_rceil_scale_exponent(std::nextafter(fmax, 1e30f), fmax), 1);
    EXPECT_EQ(mx_rceil_scale_exponent(0.0f, fmax), -127);
  }
  EXPECT_EQ(mx_rceil_scale_exponent(449.0f, 448.0f), 1);
  EXPECT_EQ(mx_rceil_scale_exponent(224.0f, 448.0f), -1);
  EXPECT_EQ(mx_rceil_scale_exponent(225.0f, 448.0f), 0);
}

// NVFP4 by hand: tensor scale amax / 2688, block scale UE4M3((block_amax / 6) / tensor_scale).
TEST(ScaleRules, Nvfp4TwoLevelScalesByHand) {
  EXPECT_EQ(nvfp4_tensor_scale(2688.0f, 6.0f), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(5376.0f, 6.0f), 2.0f);
  EXPECT_EQ(nvfp4_tensor_scale(0.0f, 6.0f), 1.0f);  // all-zero tensor: no 0/0
  EXPECT_EQ(nvfp4_tensor_scale(kNaN, 6.0f), 1.0f);
  EXPECT_GT(nvfp4_tensor_scale(1e-44f, 6.0f), 0.0f);  // underflow clamped, never 0
  EXPECT_EQ(nvfp4_tensor_scale(1.0f, 6.0f), 1.0f / 2688.0f);

  struct Case {
    float block_amax, tensor_scale, value;
    int code;
  };
  const Case cases[] = {
      {6.0f, 1.0f, 1.0f, 0x38},          // 1.0 = 2^0: E = 7, M = 0
      {12.0f, 1.0f, 2.0f, 0x40},         // 2.0
      {2688.0f, 1.0f, 448.0f, 0x7e},     // the top of UE4M3: 1.75 * 2^8
      {5.0f, 1.0f, 0.8125f, 0x35},       // 5/6 = 0.833 -> 1.625 * 2^-1 (0.875 is farther)
      {0.0f, 1.0f, 0.015625f, 0x08},     // zero block: clamped to 2^-6, not 0
      {1e-9f, 1.0f, 0.015625f, 0x08},    // below 2^-6 * 6: clamped up
      {1e6f, 1.0f, 448.0f, 0x7e},        // above 448 * 6: clamped down
      {3.0f, 0.25f, 2.0f, 0x40},         // (3 / 6) / 0.25 = 2
      {6.75f, 1.0f, 1.125f, 0x39},       // 1.125 exactly: M = 1
      {6.375f, 1.0f, 1.0f, 0x38},        // 1.0625: a tie between 1.0 and 1.125 -> even (1.0)
  };
  for (const Case& c : cases) {
    const Nvfp4BlockScale b = nvfp4_block_scale(c.block_amax, c.tensor_scale, 6.0f);
    EXPECT_EQ(b.value, c.value) << c.block_amax;
    EXPECT_EQ(b.code, c.code) << c.block_amax;
  }
  // A tensor of amax 1: the block holding the amax gets (1/6) / (1/2688) = 448 (clamped).
  const float ts = nvfp4_tensor_scale(1.0f, 6.0f);
  EXPECT_EQ(nvfp4_block_scale(1.0f, ts, 6.0f).value, 448.0f);
  EXPECT_EQ(nvfp4_block_scale(0.5f, ts, 6.0f).value, 224.0f);
}

TEST(ScaleRules, MseGridIsDescendingFromOne) {
  const auto g = mse_clip_grid();
  ASSERT_EQ(g.size(), 81u);
  EXPECT_EQ(g.front(), 1.0f);
  EXPECT_FLOAT_EQ(g.back(), 0.2f);
  for (std::size_t i = 1; i < g.size(); ++i) EXPECT_LT(g[i], g[i - 1]);
}

// The error of x quantized with s, computed with the scalar codec.
double sq_error(const Format& f, const std::vector<float>& x, float s) {
  CastOptions o;
  o.saturate = true;
  double e = 0;
  for (const float v : x) {
    const float q = static_cast<float>(decode(f, encode(f, v * s, o))) / s;
    e += (static_cast<double>(v) - q) * (static_cast<double>(v) - q);
  }
  return e;
}

TEST(ScaleRules, MseClipReturnsTheBestGridPointAndBeatsAmax) {
  for (const char* fmt : {"e2m1", "int4_sym", "e4m3"}) {
    const Format f = parse_format(fmt);
    const float fmax = static_cast<float>(f.max_finite());
    // Heavy tails: Student-t with 2 degrees of freedom.
    std::mt19937 gen(11);
    std::student_t_distribution<float> t(2.0f);
    std::vector<float> x(512);
    for (float& v : x) v = t(gen);
    const MseClip best = mse_clip_search(f, x.data(), x.size(), CastOptions{});
    const float amax = finite_amax(x.data(), x.size());
    double best_err = std::numeric_limits<double>::infinity();
    float best_ratio = 0;
    for (const float r : mse_clip_grid()) {
      const double e = sq_error(f, x, fmax / (r * amax));
      if (e < best_err) {
        best_err = e;
        best_ratio = r;
      }
    }
    EXPECT_EQ(best.ratio, best_ratio) << fmt;
    EXPECT_EQ(best.sq_error, best_err) << fmt;
    EXPECT_EQ(best.multiplier, fmax / (best_ratio * amax)) << fmt;
    EXPECT_LE(best.sq_error, sq_error(f, x, fmax / amax)) << fmt;
    if (std::string(fmt) != "e4m3") {
      EXPECT_LT(best.ratio, 1.0f) << fmt << ": heavy tails should clip";
    }
  }
  // All zeros: ratio 1, no error, s = 1.
  const std::vector<float> z(16, 0.0f);
  const MseClip zc = mse_clip_search(parse_format("e2m1"), z.data(), z.size(), CastOptions{});
  EXPECT_EQ(zc.ratio, 1.0f);
  EXPECT_EQ(zc.multiplier, 1.0f);
  EXPECT_EQ(zc.sq_error, 0.0);
}

}  // namespace
}  // namespace lowp::quant
