// Each stack's E8M0 rule (torchao-log2, te-mxfp4, gfloat, mlx, aiter) against an oracle written
// here with that stack's own arithmetic: float32 quotients and products, std::log2f where the
// stack takes a float32 log2, gfloat's round_float step by step, aiter's bit manipulation. The
// amaxes sit on every power-of-two threshold max * 2^k (and gfloat's 1.5 * max * 2^k, MLX's
// sqrt(2) * max * 2^k) and a few ulps either side, for every OCP element format, plus 0,
// subnormals, the top of float32, Inf and NaN. Through quantize too: scale codes, NaN-poisoned
// blocks. And Four Over Six against the authors' reference arithmetic written out here.
#include <gtest/gtest.h>

#include <cfloat>
#include <climits>
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

struct StackElem {
  const char* name;
  float max;
};
const StackElem kStackElems[] = {{"e4m3", 448.0f}, {"e5m2", 57344.0f}, {"e2m3", 7.5f}, {"e3m2", 28.0f}, {"e2m1", 6.0f}};

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// torch.clamp(e, -127, 127): NaN stays NaN (std::fmax would drop it).
float clamp127(float e) { return std::isnan(e) ? e : std::fmin(std::fmax(e, -127.0f), 127.0f); }

// The oracles return the E8M0 code (255 = NaN).
// torchao (mx_tensor.py before 5d73a0c, eager CUDA): descale = max_abs / max_pos, which CUDA
// computes as max_abs * (1 / max_pos) for a host scalar (BinaryDivTrueKernel.cu); exponent =
// clamp(ceil(log2(descale)), -127, 127) + 127 in float32, 0xFF where descale is NaN.
int torchao_log2_code(float amax, float max) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(max));
  const float descale = amax * inv;
  if (std::isnan(descale)) return 255;
  return static_cast<int>(clamp127(std::ceil(std::log2f(descale)))) + 127;
}

// TransformerEngine reference_nvfp4.py, pow_2_scales: decode_scale = vec_max / 6 (a device
// tensor: a true float32 division), cast_to_e8: 2 ** clamp(ceil(log2), -127, 127); NaN stays NaN.
int te_mxfp4_code(float amax, float max) {
  const float d = amax / max;
  const float e = clamp127(std::ceil(std::log2f(d)));
  return std::isnan(e) ? 255 : static_cast<int>(e) + 127;
}

// gfloat round.py round_float(format_info_ocp_e8m0, v, TiesToEven, sat=True): precision 1,
// bias 127, no subnormals; PR #66 clamps finite underflows (0 included) to 2^-127.
int gfloat_code(float amax, float max) {
  const double v = static_cast<double>(amax) / static_cast<double>(max);
  if (std::isnan(v)) return 255;
  double result;
  if (std::isinf(v)) {
    result = INFINITY;
  } else if (v == 0) {
    result = 0;
  } else {
    int fe = 0;
    std::frexp(v, &fe);
    const int expval = fe - 1;  // - p + 1 with p = 1
    const double fsignificand = std::ldexp(v, -expval);
    double isignificand = std::floor(fsignificand);
    const double delta = fsignificand - isignificand;
    const bool code_is_odd = isignificand != 0 && ((expval + 127) % 2 != 0);
    if (delta > 0.5 || (delta == 0.5 && code_is_odd)) isignificand += 1;
    result = isignificand * std::ldexp(1.0, expval);
  }
  if (result < std::ldexp(1.0, -127)) result = std::ldexp(1.0, -127);  // PR #66
  if (result > std::ldexp(1.0, 127)) result = std::ldexp(1.0, 127);    // sat
  int fe = 0;
  std::frexp(result, &fe);
  return fe - 1 + 127;
}

// MLX backend/cpu/quantized.cpp: scale /= max (float32); to_fp8_e8m0: 0xFF if not finite,
// n = int(round(log2(x))) (float log2, halves away), clamped. log2(0) = -inf, whose int
// conversion x86 makes INT_MIN.
int mlx_code(float amax, float max) {
  const float x = amax / max;
  if (!std::isfinite(x)) return 255;
  const float le = std::log2f(x);
  const int n = std::isinf(le) ? INT_MIN : static_cast<int>(std::round(le));
  return std::min(std::max(n, -127), 127) + 127;
}

// aiter csrc/include/mx_quant_utils.h, RoundUp: u32 = bits(amax * inv_max_pos) with
// inv_max_pos = 1.0f / max_pos; exponent field + 1 when below 0xFF with a nonzero mantissa.
int aiter_code(float amax, float max) {
  const float inv_max_pos = 1.0f / max;
  const std::uint32_t u = bits_of(amax * inv_max_pos);
  std::uint32_t exponent = (u >> 23) & 0xFFu;
  if (exponent < 0xFFu && (u & 0x7FFFFFu)) exponent += 1;
  return static_cast<int>(exponent);
}

struct Stack {
  const char* spec;
  ScaleRule rule;
  int (*oracle)(float, float);
};
const Stack kStacks[] = {{"torchao-log2", ScaleRule::mx_torchao_log2, torchao_log2_code},
                         {"te-mxfp4", ScaleRule::mx_te_mxfp4, te_mxfp4_code},
                         {"gfloat", ScaleRule::mx_gfloat, gfloat_code},
                         {"mlx", ScaleRule::mx_mlx, mlx_code},
                         {"aiter", ScaleRule::mx_aiter, aiter_code}};

// Every threshold of the five rules for max, with `ulps` float32 steps either side.
std::vector<float> thresholds(float max) {
  std::vector<float> a = {0.0f, std::numeric_limits<float>::denorm_min(), FLT_MIN, std::nextafter(FLT_MIN, 0.0f),
                          std::ldexp(1.0f, -127), std::ldexp(3.0f, -140), FLT_MAX, std::nextafter(FLT_MAX, 0.0f),
                          kInf, std::numeric_limits<float>::quiet_NaN(), max};
  const auto around = [&](double v) {
    if (!(v > 0) || v > FLT_MAX) return;
    float f = static_cast<float>(v), lo = f, hi = f;
    if (!(f > 0)) return;
    a.push_back(f);
    for (int i = 0; i < 4; ++i) {  // float32 log2 maps up to a few ulps onto the integer k
      lo = std::nextafter(lo, 0.0f);
      hi = std::nextafter(hi, kInf);
      a.push_back(lo);
      a.push_back(hi);
    }
  };
  for (int k = -160; k <= 130; ++k) {
    around(std::ldexp(static_cast<double>(max), k));              // RCEIL / log2 thresholds: max * 2^k
    around(std::ldexp(1.5 * max, k));                             // gfloat's ties
    around(std::ldexp(static_cast<double>(max) * std::sqrt(2.0), k));  // MLX's round(log2)
    around(std::ldexp(1.0, k));                                   // subnormal quotients (aiter)
  }
  return a;
}

std::string hex(float f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", static_cast<double>(f));
  return buf;
}

int lowp_code(ScaleRule r, float amax, const Format& f) { return e8m0_code(mx_rule_exponent(r, amax, f)); }

TEST(StackScaleRules, EveryThresholdMatchesTheStacksOwnArithmetic) {
  for (const StackElem& el : kStackElems) {
    const Format f = parse_format(el.name);
    ASSERT_EQ(format_max(f), el.max);
    const std::vector<float> amaxes = thresholds(el.max);
    for (const Stack& s : kStacks) {
      int bad = 0;
      for (const float a : amaxes) {
        const int want = s.oracle(a, el.max), got = lowp_code(s.rule, a, f);
        if (want != got && ++bad <= 5)
          ADD_FAILURE() << s.spec << " " << el.name << " amax " << hex(a) << ": oracle " << want << ", lowp " << got;
      }
      EXPECT_EQ(bad, 0) << s.spec << " " << el.name << " over " << amaxes.size() << " amaxes";
    }
  }
}

TEST(StackScaleRules, RandomAmaxesMatch) {
  test::SplitMix rng{29};
  for (const StackElem& el : kStackElems) {
    const Format f = parse_format(el.name);
    for (int i = 0; i < 20000; ++i) {
      const auto b = static_cast<std::uint32_t>(rng.next() % 0x7f800000u);
      float a;
      std::memcpy(&a, &b, 4);
      for (const Stack& s : kStacks) ASSERT_EQ(lowp_code(s.rule, a, f), s.oracle(a, el.max)) << s.spec << " " << hex(a);
    }
  }
}

// The case: one ulp above 448 * 2^5, float32 log2 gives exactly 5, cvt.rp gives 6.
TEST(StackScaleRules, TorchaoLog2AndRceilPartOneUlpAboveAThreshold) {
  const Format e4m3 = parse_format("e4m3");
  const float a = 0x1.c00002p+13f;
  EXPECT_EQ(mx_rule_exponent(ScaleRule::mx_torchao_log2, a, e4m3), 5);
  EXPECT_EQ(mx_rule_exponent(ScaleRule::mx_rceil, a, e4m3), 6);
  // They agree below |k| = 2, where float32 log2 still resolves one ulp.
  EXPECT_EQ(mx_rule_exponent(ScaleRule::mx_torchao_log2, 0x1.c00002p+8f, e4m3), 1);
  // Count the disagreements over all one-ulp-above amaxes: the "thousands per format"
  // are the amaxes a few ulps above max * 2^k for |k| >= 4 (here only 1 ulp above each k).
  int differ = 0;
  for (int k = -126; k <= 119; ++k) {
    const float t = std::ldexp(448.0f, k);
    const float up = std::nextafter(t, kInf);
    differ += mx_rule_exponent(ScaleRule::mx_torchao_log2, up, e4m3) != mx_rule_exponent(ScaleRule::mx_rceil, up, e4m3);
  }
  EXPECT_GT(differ, 200);
}

TEST(StackScaleRules, SpecNamesRoundTrip) {
  for (const Stack& s : kStacks) {
    const QuantSpec q = parse_quant_spec(std::string("e4m3:b32:") + s.spec);
    EXPECT_EQ(q.rule, s.rule) << s.spec;
    EXPECT_EQ(parse_quant_spec(describe(q)).rule, s.rule) << describe(q);
    EXPECT_EQ(rule_name(s.rule), s.spec);
  }
  EXPECT_EQ(parse_quant_spec("nvfp4:4over6").rule, ScaleRule::nvfp4_4over6);
  EXPECT_THROW(parse_quant_spec("e4m3:b16:4over6"), Error);
}

// Through quantize: one block per amax, the scale codes the oracles'; a NaN poisons its block
// (NaN scale, every value NaN) except under MLX, whose max skips NaN; an Inf in a block gives
// each stack's Inf scale.
TEST(StackScaleRules, QuantizeUsesEachStacksAmaxAndCode) {
  for (const StackElem& el : kStackElems) {
    std::vector<float> amaxes = thresholds(el.max);
    std::vector<float> x;
    for (const float a : amaxes) {
      for (int i = 0; i < 32; ++i) x.push_back(i == 5 ? a : (i == 7 ? -0.25f * (std::isfinite(a) ? a : 1.0f) : 0.0f));
      if (std::isnan(a)) x[x.size() - 3] = 2.0f;  // a finite element beside the NaN
    }
    const std::size_t rows = amaxes.size();
    for (const Stack& s : kStacks) {
      QuantSpec spec = parse_quant_spec(std::string(el.name) + ":b32:" + s.spec);
      const QuantizedTensor q = quantize(spec, x.data(), rows, 32);
      std::vector<float> v(x.size());
      dequantize(q, v.data());
      for (std::size_t r = 0; r < rows; ++r) {
        const float a = amaxes[r];
        const float stack_a = std::isnan(a) && s.rule == ScaleRule::mx_mlx ? 2.0f : a;
        const int want = s.oracle(stack_a, el.max);
        ASSERT_EQ(q.scale_codes[r], want) << s.spec << " " << el.name << " amax " << hex(a);
        if (want == 255) {
          for (int i = 0; i < 32; ++i) ASSERT_TRUE(std::isnan(v[r * 32 + i])) << s.spec << " row " << r;
        }
      }
    }
  }
}

// ---- Four Over Six: the authors' reference (quantize/pytorch/reference.py), float32 ----

// E4M3 (fn) of a non-negative float32, nearest even, subnormals (step 2^-9) kept.
float e4m3_rne(float v) {
  if (v == 0) return 0;
  int e = 0;
  std::frexp(v, &e);
  const int step_exp = std::max(e - 1, -6) - 3;
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(v), -step_exp)), step_exp));
}

// fake_quantize_to_e2m1, round_style nearest: torch.round (half to even) on three grids.
float ref_e2m1(float x) {
  const float a = std::fabs(x);
  float r;
  if (a < 2) r = std::nearbyint(2 * a) / 2;
  else if (a < 4) r = std::nearbyint(a);
  else r = 2 * std::nearbyint(a / 2);
  return x > 0 ? r : x < 0 ? -r : 0.0f;
}

struct RefBlock {
  float scale;
  std::vector<float> q;
};

// One block of nvfp4_fouroversix_block_scaled_quantization with scale_rule mse.
RefBlock ref_four_over_six(const float* x, std::size_t n, float x_amax) {
  float b = 0;
  for (std::size_t i = 0; i < n; ++i) b = std::max(b, std::fabs(x[i]));
  RefBlock cand[2];
  float err[2];
  for (int c = 0; c < 2; ++c) {  // 0: scaled to 6, 1: expansion factor 1.5 (scaled to 4)
    float s_hp = 0;
    if (x_amax != 0) {
      const float encode_scale = 1536.0f / x_amax;  // 6 * 256 * adjustment 1
      s_hp = b / 6.0f * encode_scale;
    }
    if (c == 1) s_hp = s_hp * 1.5f;
    const float s = e4m3_rne(s_hp);
    const float decode_scale = 1.0f / (1536.0f / x_amax);
    cand[c].scale = s;
    float e = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float scaled = s != 0 ? x[i] * (1.0f / (decode_scale * s)) : 0.0f;
      const float q = ref_e2m1(scaled);
      cand[c].q.push_back(q);
      const float deq = q * s * x_amax / 1536.0f;
      const float d = deq - x[i];
      e += d * d;  // the reference sums in float32
    }
    err[c] = e;
  }
  return err[1] < err[0] ? cand[1] : cand[0];
}

TEST(FourOverSixRule, CodesAndScalesMatchTheAuthorsReference) {
  const Format e2m1 = parse_format("e2m1");
  const QuantSpec spec = parse_quant_spec("nvfp4:4over6");
  std::size_t fours = 0, blocks = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const std::size_t rows = 24, cols = 64;
    std::vector<float> x = test::normal_floats(rows * cols, 46 + static_cast<std::uint32_t>(trial));
    for (auto& v : x) v *= static_cast<float>(trial + 1);
    x[3] = 40.0f * (trial + 1);  // an outlier sets the tensor amax
    for (std::size_t i = 16; i < 32; ++i) x[i] = 0.0f;  // an all-zero block
    const QuantizedTensor q = quantize(spec, x.data(), rows, cols);
    float x_amax = 0;
    for (const float v : x) x_amax = std::max(x_amax, std::fabs(v));
    ASSERT_EQ(q.tensor_scale, 1.0f / (1536.0f / x_amax));
    std::vector<float> deq(x.size());
    dequantize(q, deq.data());
    for (std::size_t g = 0; g < rows * cols / 16; ++g) {
      const RefBlock r = ref_four_over_six(x.data() + g * 16, 16, x_amax);
      ++blocks;
      ASSERT_EQ(q.scales[g], r.scale) << "block " << g;
      for (std::size_t i = 0; i < 16; ++i) {
        const float code_value = static_cast<float>(decode(e2m1, encode(e2m1, r.q[i])));
        ASSERT_EQ(code_value, r.q[i]);  // the reference's values are E2M1 values here
        ASSERT_EQ(deq[g * 16 + i], r.q[i] * (q.tensor_scale * r.scale)) << "block " << g << " element " << i;
      }
    }
    // Blocks scaled to 4: their scale exceeds the 6-scaled one by about 1.5.
    for (std::size_t g = 0; g < rows * cols / 16; ++g) {
      float b = 0;
      for (std::size_t i = 0; i < 16; ++i) b = std::max(b, std::fabs(x[g * 16 + i]));
      fours += b > 0 && q.scales[g] > e4m3_rne(b / 6.0f * (1536.0f / x_amax)) * 1.25f;
    }
  }
  // Both choices occur (the test would not see a rule that always keeps 6).
  EXPECT_GT(fours, blocks / 10);
  EXPECT_LT(fours, blocks - blocks / 10);
}

TEST(FourOverSixRule, ZeroTensorAndTiesKeepSix) {
  const QuantSpec spec = parse_quant_spec("e2m1:b16:4over6");
  std::vector<float> z(32, 0.0f);
  const QuantizedTensor q = quantize(spec, z.data(), 1, 32);
  EXPECT_EQ(q.scales[0], 0.0f);
  std::vector<float> v(32);
  dequantize(q, v.data());
  for (const float e : v) EXPECT_EQ(e, 0.0f);
  // A block of equal values that both candidates represent exactly: a tie, kept at 6.
  std::vector<float> x(16, 1.0f);
  const QuantizedTensor t = quantize(spec, x.data(), 1, 16);
  EXPECT_EQ(t.scales[0], e4m3_rne(1.0f / 6.0f * 1536.0f));  // 256: the block max maps to 6
}

}  // namespace
}  // namespace lowp::quant
