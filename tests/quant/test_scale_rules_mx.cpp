// The four MX scale rules (torchao's ScaleCalculationMode FLOOR, CEIL, EVEN, RCEIL) against
// their definitions computed here in double precision, on adversarial block maxima, through the
// rule functions and through quantize; and the fake-quantized elements against a quantizer
// written here from the element formats' definitions (value grids built from E, M and bias).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/quantize.hpp"
#include "lowp/quant/scale_rules.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

using test::kInf;
using test::kNaN;

// The element formats of the OCP MX spec, from its tables.
struct Elem {
  const char* name;
  int ebits, mbits;
  bool ieee_specials;  // E5M2 keeps Inf/NaN; E4M3 keeps one NaN (S.1111.111); FP6/FP4 none
  double max;
  int emax;  // floor(log2 max)
};
const Elem kElems[] = {
    {"e4m3", 4, 3, false, 448.0, 8},  {"e5m2", 5, 2, true, 57344.0, 15}, {"e2m3", 2, 3, false, 7.5, 2},
    {"e3m2", 3, 2, false, 28.0, 4},   {"e2m1", 2, 1, false, 6.0, 2},
};

enum class Rule { floor, ceil, even, rceil };
const char* rule_name(Rule r) {
  return r == Rule::floor ? "floor" : r == Rule::ceil ? "ceil" : r == Rule::even ? "even" : "rceil";
}
const Rule kRules[] = {Rule::floor, Rule::ceil, Rule::even, Rule::rceil};

// floor(log2 a) for a double a > 0.
int ilog2(double a) {
  int e = 0;
  std::frexp(a, &e);
  return e - 1;
}

// torchao's definitions (torchao/prototype/mx_formats/mx_tensor.py, ScaleCalculationMode):
//   FLOOR  2^(floor(log2 amax) - emax)
//   CEIL   2^(ceil(log2 amax) - emax)
//   EVEN   2^(floor(log2 round(amax)) - emax), round = to mbits fraction bits, half away from 0
//   RCEIL  descale = float32(amax * float32(1 / max)), rounded up to a power of two
// E8M0's exponent range [-127, 127]; amax 0 gives 2^-127.
int oracle_exponent(Rule rule, float amax_f, const Elem& el) {
  const double amax = amax_f;
  if (amax == 0) return -127;
  int k = 0;
  switch (rule) {
    case Rule::floor: k = ilog2(amax) - el.emax; break;
    case Rule::ceil: {
      const int f = ilog2(amax);
      k = (std::ldexp(1.0, f) == amax ? f : f + 1) - el.emax;
      break;
    }
    case Rule::even: {
      const int f = ilog2(amax);
      const double ulp = std::ldexp(1.0, f - el.mbits);
      const double rounded = std::floor(amax / ulp + 0.5) * ulp;  // half away (amax > 0)
      k = ilog2(rounded) - el.emax;
      break;
    }
    case Rule::rceil: {
      const float rcp = static_cast<float>(1.0 / el.max);
      const double d = static_cast<float>(amax * static_cast<double>(rcp));  // exact product, one rounding
      k = -127;
      while (k < 127 && std::ldexp(1.0, k) < d) ++k;
      return k;
    }
  }
  return k < -127 ? -127 : k > 127 ? 127 : k;
}

ScaleRule to_rule(Rule r) {
  return r == Rule::floor  ? ScaleRule::mx
         : r == Rule::ceil ? ScaleRule::mx_ceil
         : r == Rule::even ? ScaleRule::mx_even
                           : ScaleRule::mx_rceil;
}

int lowp_exponent(Rule r, float amax, const Format& f) {
  const int emax = mx_emax_elem(f);
  switch (r) {
    case Rule::floor: return mx_scale_exponent(amax, emax);
    case Rule::ceil: return mx_ceil_scale_exponent(amax, emax);
    case Rule::even: return mx_even_scale_exponent(amax, emax, f.man_bits);
    case Rule::rceil: return mx_rceil_scale_exponent(amax, format_max(f));
  }
  return 0;
}

float next_up(float x) { return std::nextafter(x, kInf); }
float next_down(float x) { return std::nextafter(x, 0.0f); }

// Block maxima that sit on or next to every rule's threshold for element format el.
std::vector<float> adversarial_amaxes(const Elem& el) {
  std::vector<float> a = {0.0f, std::numeric_limits<float>::denorm_min(), FLT_MIN, next_down(FLT_MIN),
                          std::ldexp(1.0f, -127), std::ldexp(1.0f, -130), std::ldexp(3.0f, -140),
                          FLT_MAX, next_down(FLT_MAX), FLT_MAX / 2, static_cast<float>(el.max),
                          1.0f, 0.1f, 3.0f};
  const auto around = [&](float v) {
    if (!(v > 0) || !std::isfinite(v)) return;
    a.push_back(v);
    a.push_back(next_up(v));
    a.push_back(next_down(v));
  };
  for (int k = -149; k <= 127; k += (k > -120 && k < 100) ? 7 : 1) {
    around(std::ldexp(1.0f, k));                                                         // FLOOR / CEIL
    around(static_cast<float>(std::ldexp(2.0 - std::ldexp(1.0, -(el.mbits + 1)), k)));  // EVEN's carry
    around(static_cast<float>(std::ldexp(el.max, k - el.emax)));                         // RCEIL: max * 2^j
    around(static_cast<float>(std::ldexp(1.0 + std::ldexp(1.0, -el.mbits), k)));        // a grid point
  }
  test::SplitMix rng{2026};
  for (int i = 0; i < 3000; ++i) {  // random positive finite bit patterns, subnormals included
    const auto b = static_cast<std::uint32_t>(rng.next() % 0x7f800000u);
    float v;
    std::memcpy(&v, &b, 4);
    a.push_back(v);
  }
  return a;
}

TEST(MxScaleRules, SpecFormulasHoldOnTheirThresholds) {
  // Hand-checked cases first (E4M3: max 448 = 1.75 * 2^8, emax 8, 3 mantissa bits).
  const Format e4m3 = parse_format("e4m3");
  EXPECT_EQ(lowp_exponent(Rule::floor, 448.0f, e4m3), 0);
  EXPECT_EQ(lowp_exponent(Rule::ceil, 448.0f, e4m3), 1);   // 2^9 / 2^8
  EXPECT_EQ(lowp_exponent(Rule::rceil, 448.0f, e4m3), 0);  // 448 / 448 = 1
  EXPECT_EQ(lowp_exponent(Rule::rceil, next_up(448.0f), e4m3), 1);
  EXPECT_EQ(lowp_exponent(Rule::even, 496.0f, e4m3), 1);  // 1.9375 * 2^8 rounds to 2^9 at 3 bits
  EXPECT_EQ(lowp_exponent(Rule::even, next_down(496.0f), e4m3), 0);
  EXPECT_EQ(lowp_exponent(Rule::even, 480.0f, e4m3), 0);  // 1.875: exact at 3 bits
  EXPECT_EQ(lowp_exponent(Rule::ceil, 256.0f, e4m3), 0);
  EXPECT_EQ(lowp_exponent(Rule::ceil, next_up(256.0f), e4m3), 1);
  for (const Rule r : kRules) EXPECT_EQ(lowp_exponent(r, 0.0f, e4m3), -127) << rule_name(r);
  // quantize never passes a non-finite amax (NaN and Inf are left out of it); the functions
  // still answer 2^-127 rather than reading the bits of one.
  for (const Rule r : kRules)
    for (const float bad : {kNaN, kInf, -kInf, -1.0f}) EXPECT_EQ(lowp_exponent(r, bad, e4m3), -127) << rule_name(r);
  // Huge maxima: FLT_MAX = (2 - 2^-23) 2^127. FLOOR 127 - 8; CEIL and EVEN (3 bits) one more;
  // RCEIL: FLT_MAX / 448 = 2^119 * 1.1428..., rounded up to 2^120.
  EXPECT_EQ(lowp_exponent(Rule::floor, FLT_MAX, e4m3), 119);
  EXPECT_EQ(lowp_exponent(Rule::ceil, FLT_MAX, e4m3), 120);
  EXPECT_EQ(lowp_exponent(Rule::even, FLT_MAX, e4m3), 120);
  EXPECT_EQ(lowp_exponent(Rule::rceil, FLT_MAX, e4m3), 120);

  std::size_t checked = 0;
  for (const Elem& el : kElems) {
    const Format f = parse_format(el.name);
    ASSERT_EQ(mx_emax_elem(f), el.emax) << el.name;
    ASSERT_EQ(f.man_bits, el.mbits) << el.name;
    ASSERT_EQ(static_cast<double>(format_max(f)), el.max) << el.name;
    for (const float amax : adversarial_amaxes(el))
      for (const Rule r : kRules) {
        ASSERT_EQ(lowp_exponent(r, amax, f), oracle_exponent(r, amax, el))
            << el.name << " " << rule_name(r) << " amax " << amax;
        ++checked;
      }
  }
  EXPECT_GT(checked, 5u * 4u * 3000u);
}

// The element format's finite non-negative values, from E, M and the bias 2^(E-1) - 1.
std::vector<double> value_grid(const Elem& el) {
  std::vector<double> v;
  const int bias = (1 << (el.ebits - 1)) - 1;
  for (int e = 0; e < (1 << el.ebits); ++e)
    for (int m = 0; m < (1 << el.mbits); ++m) {
      const double frac = static_cast<double>(m) / (1 << el.mbits);
      const double x = e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0 + frac, e - bias);
      if (x <= el.max) v.push_back(x);
    }
  return v;  // ascending; index parity = mantissa parity within a binade and across it
}

// Round-to-nearest-even onto the grid, saturating; NaN stays NaN (a NaN element).
double quantize_elem(double y, const std::vector<double>& grid) {
  if (std::isnan(y)) return y;
  const double a = std::fabs(y);
  double r = grid.back();
  if (a < grid.back()) {
    std::size_t i = 0;
    while (grid[i + 1] <= a) ++i;  // grid[i] <= a < grid[i + 1]
    const double lo = grid[i], hi = grid[i + 1];
    r = a - lo < hi - a ? lo : a - lo > hi - a ? hi : (i % 2 == 0 ? lo : hi);
  }
  return std::signbit(y) ? -r : r;
}

// Blocks of 32: the value x of block b lands at x_b's position; block maxima from the
// adversarial list, the other elements spread below it (and some NaN / Inf).
struct Tensor {
  std::size_t rows = 0, cols = 32;
  std::vector<float> x;
};
Tensor adversarial_tensor(const Elem& el) {
  Tensor t;
  test::SplitMix rng{7};
  std::vector<float> maxima = adversarial_amaxes(el);
  maxima.resize(600);  // thresholds first, then some random ones
  for (const float amax : maxima) {
    std::vector<float> row(32);
    for (float& v : row) {
      const double u = static_cast<double>(rng.next() % 1000003) / 1000003.0;
      v = static_cast<float>(amax * u * ((rng.next() & 1) ? 1 : -1));
    }
    row[rng.next() % 32] = (rng.next() & 1) ? amax : -amax;
    t.x.insert(t.x.end(), row.begin(), row.end());
    ++t.rows;
  }
  // NaN and Inf are left out of the amax (lowp's rule; torchao would give the NaN scale).
  std::vector<float> special(32, 0.25f);
  special[3] = kNaN;
  special[9] = kInf;
  special[20] = -kInf;
  special[31] = -3.0f;
  t.x.insert(t.x.end(), special.begin(), special.end());
  ++t.rows;
  return t;
}

void check_tensor(const Elem& el, Rule r, const Tensor& t) {
  const std::string text = std::string(el.name) + ":b32:" + rule_name(r);
  const QuantSpec spec = parse_quant_spec(text);
  ASSERT_EQ(spec.rule, to_rule(r)) << text;
  const QuantizedTensor q = quantize(spec, t.x.data(), t.rows, t.cols);
  std::vector<float> deq(t.x.size());
  dequantize(q, deq.data());
  std::vector<float> fq = t.x;
  fake_quant(spec, fq.data(), t.rows, t.cols);
  const std::vector<double> grid = value_grid(el);
  const bool has_nan = el.ebits >= 4;  // E4M3, E5M2; FP6/FP4 encode NaN as zero (ml_dtypes)
  for (std::size_t row = 0; row < t.rows; ++row) {
    double amax = 0;
    for (std::size_t c = 0; c < 32; ++c) {
      const float v = t.x[row * 32 + c];
      if (std::isfinite(v)) amax = std::max(amax, std::fabs(static_cast<double>(v)));
    }
    const int k = oracle_exponent(r, static_cast<float>(amax), el);
    ASSERT_EQ(q.scale_codes[row], k + 127) << text << " row " << row << " amax " << amax;
    ASSERT_EQ(static_cast<double>(q.scales[row]), std::ldexp(1.0, k)) << text;
    for (std::size_t c = 0; c < 32; ++c) {
      const std::size_t i = row * 32 + c;
      const double x = t.x[i];
      double want = quantize_elem(x / std::ldexp(1.0, k), grid) * std::ldexp(1.0, k);
      if (std::isnan(x) && !has_nan) want = 0;
      // float32 output: a block near FLT_MAX under CEIL / EVEN / RCEIL can give code * X = 2^128.
      if (std::fabs(want) > FLT_MAX) want = std::copysign(static_cast<double>(kInf), want);
      const auto same = [&](double got) { return std::isnan(want) ? std::isnan(got) : got == want; };
      ASSERT_TRUE(same(deq[i])) << text << " x " << x << " dequantized " << deq[i] << " expected " << want;
      ASSERT_TRUE(same(fq[i])) << text << " x " << x << " fake_quant " << fq[i] << " expected " << want;
    }
  }
}

TEST(MxScaleRules, QuantizeMatchesAnIndependentQuantizerOnAdversarialBlocks) {
  for (const Elem& el : kElems) {
    const Tensor t = adversarial_tensor(el);
    for (const Rule r : kRules) check_tensor(el, r, t);
  }
}

TEST(MxScaleRules, QuantizeMatchesAnIndependentQuantizerOnRandomTensors) {
  // Normal-ish data with a few large outliers, so scales vary from block to block.
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    test::SplitMix rng{seed};
    Tensor t;
    t.rows = 16;
    for (std::size_t i = 0; i < t.rows * t.cols; ++i) {
      const double u = (static_cast<double>(rng.next() % 2000001) - 1000000.0) / 1000000.0;
      const double scale = rng.next() % 37 == 0 ? 1000.0 : std::ldexp(1.0, static_cast<int>(rng.next() % 20) - 10);
      t.x.push_back(static_cast<float>(u * scale));
    }
    for (const Elem& el : kElems)
      for (const Rule r : kRules) check_tensor(el, r, t);
  }
}

TEST(MxScaleRules, SpecGrammar) {
  EXPECT_EQ(parse_quant_spec("e4m3:b32:floor").rule, ScaleRule::mx);
  EXPECT_EQ(parse_quant_spec("e4m3:b32:mx").rule, ScaleRule::mx);
  EXPECT_EQ(parse_quant_spec("mxfp8").rule, ScaleRule::mx);
  EXPECT_EQ(parse_quant_spec("e4m3:b32:ceil").rule, ScaleRule::mx_ceil);
  EXPECT_EQ(parse_quant_spec("e2m1:b32:even").rule, ScaleRule::mx_even);
  EXPECT_EQ(parse_quant_spec("mxfp4:even").rule, ScaleRule::mx_even);
  EXPECT_EQ(parse_quant_spec("e4m3:b32:rceil").rule, ScaleRule::mx_rceil);
  for (const char* s : {"e4m3:b32:floor", "e4m3:b32:ceil", "e2m1:b32:even", "e5m2:b32:rceil"}) {
    const QuantSpec q = parse_quant_spec(s);
    EXPECT_EQ(parse_quant_spec(describe(q)).rule, q.rule) << describe(q);
  }
  EXPECT_EQ(describe(parse_quant_spec("e4m3:b32:floor")), describe(parse_quant_spec("mxfp8")));
  EXPECT_THROW(parse_quant_spec("int8:b32:even"), Error);
  EXPECT_EQ(bits_per_element(parse_quant_spec("e4m3:b32:even"), 4, 64), 8.25);
}

}  // namespace
}  // namespace lowp::quant
