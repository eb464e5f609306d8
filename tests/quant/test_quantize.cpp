// quantize / dequantize / fake_quant against the independent reference of
// quantize_reference.hpp, for every granularity, scale rule and a spread of formats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "lowp/formats/registry.hpp"
#include "lowp/quant/quantize.hpp"
#include "lowp/quant/scale_rules.hpp"
#include "quant/quantize_reference.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

using test::same_or_both_nan;

// Normal data whose magnitude changes by 2^k from row to row, so that groups differ.
std::vector<float> test_data(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::vector<float> x = test::normal_floats(rows * cols, seed);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) x[r * cols + c] *= std::ldexp(1.0f, static_cast<int>((r * 7 + c / 8) % 13) - 6);
  return x;
}

// Checks codes, scales, dequantize and fake_quant against the reference, element by element.
void check_spec(const QuantSpec& spec, const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  SCOPED_TRACE(describe(spec) + " on " + std::to_string(rows) + "x" + std::to_string(cols));
  const QuantizedTensor q = quantize(spec, x.data(), rows, cols);
  ASSERT_EQ(q.rows, rows);
  ASSERT_EQ(q.cols, cols);
  std::vector<float> deq(rows * cols);
  dequantize(q, deq.data());
  std::vector<float> fq = x;
  fake_quant(spec, fq.data(), rows, cols);
  const test_ref::Amaxes am = test_ref::amaxes(spec, x.data(), rows, cols);
  int bad = 0;
  for (std::size_t r = 0; r < rows && bad < 5; ++r)
    for (std::size_t c = 0; c < cols && bad < 5; ++c) {
      const std::size_t i = r * cols + c;
      const test_ref::Expected e = test_ref::expected(spec, x.data(), am, cols, r, c);
      const std::uint32_t code = test_ref::unpack(spec.format, q.codes, i);
      if (code != e.code || !same_or_both_nan(deq[i], e.value) || !same_or_both_nan(fq[i], e.value)) {
        ++bad;
        ADD_FAILURE() << "element (" << r << ", " << c << ") x = " << x[i] << ": code " << code << " want " << e.code
                      << ", dequantized " << deq[i] << " / fake-quant " << fq[i] << " want " << e.value;
      }
    }
  // The group scales, in row-major group order.
  for (std::size_t i = 0; i < q.scales.size() && bad < 5; ++i) {
    std::size_t r = 0, c = 0;
    switch (spec.granularity) {
      case Granularity::tensor: break;
      case Granularity::row: r = i; break;
      case Granularity::column: c = i; break;
      case Granularity::block: r = i / ((cols + spec.block - 1) / spec.block); c = i % ((cols + spec.block - 1) / spec.block) * spec.block; break;
      case Granularity::tile: {
        const std::size_t ngc = (cols + spec.block - 1) / spec.block;
        r = i / ngc * spec.block;
        c = i % ngc * spec.block;
        break;
      }
    }
    const test_ref::Expected e = test_ref::expected(spec, x.data(), am, cols, r, c);
    if (!same_or_both_nan(q.scales[i], e.scale)) {
      ++bad;
      ADD_FAILURE() << "scale of group " << i << ": " << q.scales[i] << " want " << e.scale;
    }
  }
}

QuantSpec make(const char* text) { return parse_quant_spec(text); }

TEST(Quantize, EveryGranularityAndRuleMatchesTheReference) {
  const char* formats[] = {"e4m3", "e5m2", "e2m1", "e2m3", "e3m2", "int8"};
  const char* grans[] = {"tensor", "row", "col", "b16", "b32", "t8"};
  const char* rules[] = {"amax", "pow2", "mx", "ceil", "even", "rceil", "nvfp4", "none"};
  const std::size_t rows = 24, cols = 64;
  const std::vector<float> x = test_data(rows, cols, 1);
  for (const char* f : formats)
    for (const char* g : grans)
      for (const char* r : rules) {
        // rceil, ceil: covered by e-formats; even needs a mantissa.
        if (std::string(f) == "int8" && (std::string(r) == "rceil" || std::string(r) == "ceil" || std::string(r) == "even"))
          continue;
        check_spec(make((std::string(f) + ":" + g + ":" + r).c_str()), x, rows, cols);
      }
  check_spec(make("int8:row:int"), x, rows, cols);
  check_spec(make("int4_sym:b32:int"), x, rows, cols);
}

TEST(Quantize, PresetsMatchTheReference) {
  const std::vector<float> x = test_data(16, 256, 2);
  for (const char* p : {"mxfp8", "mxfp6", "mxfp4", "nvfp4", "e4m3", "e5m2:row", "e4m3:t128:pow2:pad", "bf16", "fp16"})
    check_spec(make(p), x, 16, 256);
  const std::vector<float> big = test_data(128, 256, 3);
  check_spec(make("e4m3:t128"), big, 128, 256);
  check_spec(make("e4m3:b128"), big, 128, 256);
}

TEST(Quantize, EveryRoundingModeIncludingStochastic) {
  const std::vector<float> x = test_data(8, 96, 4);
  for (const char* round : {"nearest", "away", "zero", "up", "down", "odd", "stochastic"})
    for (const char* base : {"e4m3:row:amax", "e2m1:b32:mx", "e2m1:b16:nvfp4", "e2m3:t16:rceil:pad", "e5m2:col:pow2"}) {
      QuantSpec s = make((std::string(base) + ":" + round).c_str());
      s.seed = 1234;
      check_spec(s, x, 8, 96);
    }
}

TEST(Quantize, LargeTensorsTakeTheParallelPathAndStillMatch) {
  // 300 x 320 = 96000 elements: above the parallel threshold, several cast pieces, odd rows.
  const std::vector<float> x = test_data(300, 320, 5);
  for (const char* s : {"mxfp4", "nvfp4", "e4m3:col", "e4m3:tensor", "e2m3:t64:pad", "e4m3:row:stochastic"})
    check_spec(make(s), x, 300, 320);
}

TEST(Quantize, OddColumnCountsWithPackedCodes) {
  // 4- and 6-bit codes of a row that does not end on a byte / group boundary.
  const std::vector<float> x = test_data(7, 45, 6);
  for (const char* s : {"e2m1:row", "e2m3:col", "e2m1:b16:pad:mx", "e3m2:t8:pad:nvfp4", "e2m1:tensor:stochastic"})
    check_spec(make(s), x, 7, 45);
}

TEST(Quantize, ScaleCodesAreStoredForMxAndNvfp4) {
  const std::vector<float> x = test_data(4, 64, 7);
  const QuantizedTensor mx = quantize(make("mxfp8"), x.data(), 4, 64);
  ASSERT_EQ(mx.scale_codes.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(std::ldexp(1.0f, mx.scale_codes[i] - 127), mx.scales[i]);
  const QuantizedTensor nv = quantize(make("nvfp4"), x.data(), 4, 64);
  ASSERT_EQ(nv.scale_codes.size(), 16u);
  const Format ue4m3 = parse_format("ue4m3");
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(decode(ue4m3, nv.scale_codes[i]), nv.scales[i]);
  float amax = 0;
  for (const float v : x) amax = std::max(amax, std::fabs(v));
  EXPECT_EQ(nv.tensor_scale, amax / 2688.0f);
  const QuantizedTensor am = quantize(make("e4m3:row"), x.data(), 4, 64);
  EXPECT_TRUE(am.scale_codes.empty());
  ASSERT_EQ(am.multipliers.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(am.scales[i], 1.0f / am.multipliers[i]);
}

TEST(Quantize, MseRuleUsesTheSearchedMultiplierPerGroup) {
  std::vector<float> x = test_data(6, 64, 8);
  x[5] = 40.0f;  // an outlier in group 0
  const QuantSpec s = make("int4_sym:b32:mse");
  const QuantizedTensor q = quantize(s, x.data(), 6, 64);
  ASSERT_EQ(q.multipliers.size(), 12u);
  for (std::size_t g = 0; g < 12; ++g) {
    const std::size_t r = g / 2, c0 = g % 2 * 32;
    const MseClip m = mse_clip_search(s.format, x.data() + r * 64 + c0, 32, s.cast);
    EXPECT_EQ(q.multipliers[g], m.multiplier) << g;
  }
  // Elements: cast(x * s) with the group's s, value code / s.
  std::vector<float> deq(x.size()), fq = x;
  dequantize(q, deq.data());
  fake_quant(s, fq.data(), 6, 64);
  CastOptions o;
  o.saturate = true;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float m = q.multipliers[i / 32];
    const std::uint32_t code = encode(s.format, x[i] * m, o);
    EXPECT_EQ(test_ref::unpack(s.format, q.codes, i), code) << i;
    EXPECT_EQ(deq[i], static_cast<float>(decode(s.format, code)) / m) << i;
    EXPECT_EQ(fq[i], deq[i]) << i;
  }
}

TEST(Quantize, MseSearchRunsOnEachGroupOfEveryGranularity) {
  const std::size_t rows = 16, cols = 24;
  const std::vector<float> x = test_data(rows, cols, 13);
  for (const char* text : {"e2m1:tensor:mse", "e2m1:row:mse", "e2m1:col:mse", "e2m1:t8:mse", "e2m3:b16:mse:pad"}) {
    SCOPED_TRACE(text);
    const QuantSpec s = make(text);
    const QuantizedTensor q = quantize(s, x.data(), rows, cols);
    // Walk the groups in row-major group order, gathering each one's elements here.
    std::size_t g = 0;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const test_ref::Bounds b = test_ref::group_bounds(s, rows, cols, r, c);
        if (b.r0 != r || b.c0 != c) continue;  // not the group's first element
        std::vector<float> v;
        for (std::size_t i = b.r0; i < b.r1; ++i)
          for (std::size_t k = b.c0; k < b.c1; ++k) v.push_back(x[i * cols + k]);
        ASSERT_LT(g, q.multipliers.size());
        EXPECT_EQ(q.multipliers[g], mse_clip_search(s.format, v.data(), v.size(), s.cast).multiplier) << g;
        ++g;
      }
    EXPECT_EQ(g, q.multipliers.size());
  }
}

}  // namespace
}  // namespace lowp::quant
