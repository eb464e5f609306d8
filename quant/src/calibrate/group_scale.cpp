// Group scales for calibration, with the scale rules' own arithmetic (scale_rules.hpp).
#include "group_scale.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/scale_rules.hpp"

namespace lowp::quant::calib {
namespace {

bool multiplier_rule(ScaleRule r) {
  return r == ScaleRule::amax || r == ScaleRule::amax_pow2 || r == ScaleRule::absmax_int || r == ScaleRule::mse;
}

ScaleChoice from_multiplier(float m) {
  ScaleChoice c;
  c.multiplier = c.q = c.d = m;
  c.scale = 1.0f / m;
  return c;
}

ScaleChoice from_exponent(int e) {
  ScaleChoice c;
  c.code = e8m0_code(e);
  c.scale = c.d = exp2i(e);
  c.q = 1.0f / c.scale;  // exact: a power of two
  return c;
}

const Format& ue4m3_format() {
  static const Format f = parse_format("ue4m3");
  return f;
}

ScaleChoice from_ue4m3(std::uint8_t code, float tensor_scale) {
  ScaleChoice c;
  c.code = code;
  c.scale = static_cast<float>(decode(ue4m3_format(), code));
  // As quantize: the total is kept nonzero, never divided by 0.
  c.q = c.d = std::max(tensor_scale * c.scale, FLT_TRUE_MIN);
  return c;
}

// Four Over Six (calibration's tensor_scale holds the tensor amax, from which its levels follow).
ScaleChoice from_four_over_six(std::uint8_t code, float tensor_amax) {
  ScaleChoice c;
  c.code = code;
  c.scale = static_cast<float>(decode(ue4m3_format(), code));
  c.d = four_over_six_tensor(tensor_amax).dec * c.scale;
  c.q = c.scale != 0 ? 1.0f / c.d : 0.0f;
  return c;
}

float rule_multiplier(const QuantSpec& spec, float amax) {
  const float fmax = format_max(spec.format);
  switch (spec.rule) {
    case ScaleRule::amax_pow2: return amax_pow2_multiplier(amax, fmax);
    case ScaleRule::absmax_int: return absmax_int_multiplier(amax, spec.format);
    default: return amax_multiplier(amax, fmax);
  }
}

}  // namespace

SpecOps spec_ops(const QuantSpec& spec) {
  SpecOps o;
  o.identity = spec.rule == ScaleRule::none;
  o.q_mul = spec.rule != ScaleRule::nvfp4;
  o.d_mul = !multiplier_rule(spec.rule);
  return o;
}

BulkOptions cast_options(const QuantSpec& spec) {
  BulkOptions o;
  o.cast = spec.cast;
  if (spec.rule != ScaleRule::none) o.cast.saturate = true;
  return o;
}

void check_finite(const char* fn, const float* p, std::size_t n, const char* what) {
  if (n != 0 && p == nullptr) throw Error(std::string(fn) + ": null " + what);
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i]))
      throw Error(std::string(fn) + ": " + what + " element " + std::to_string(i) + " is not finite (" +
                  std::to_string(p[i]) + ")");
}

void check_finite(const char* fn, std::span<const double> p, const char* what) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (!std::isfinite(p[i]))
      throw Error(std::string(fn) + ": " + what + " element " + std::to_string(i) + " is not finite (" +
                  std::to_string(p[i]) + ")");
}

void check_calibration_input(const char* fn, const QuantSpec& spec, const float* p, std::size_t n,
                             const char* what) {
  validate(spec.format);
  if (spec.cast.round == Round::stochastic)
    throw Error(std::string(fn) + ": " + describe(spec) + ": calibration needs a deterministic rounding, not stochastic");
  check_finite(fn, p, n, what);
}

float tensor_scale_of(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols) {
  if (spec.rule == ScaleRule::nvfp4_4over6) return finite_amax(w, rows * cols);
  if (spec.rule != ScaleRule::nvfp4) return 1.0f;
  return nvfp4_tensor_scale(finite_amax(w, rows * cols), format_max(spec.format));
}

ScaleChoice rule_choice(const QuantSpec& spec, float tensor_scale, const float* x, std::size_t n) {
  const float amax = finite_amax(x, n);
  const float fmax = format_max(spec.format);
  switch (spec.rule) {
    case ScaleRule::none: return {};
    case ScaleRule::mse: return from_multiplier(mse_clip_search(spec.format, x, n, spec.cast).multiplier);
    case ScaleRule::amax:
    case ScaleRule::amax_pow2:
    case ScaleRule::absmax_int: return from_multiplier(rule_multiplier(spec, amax));
    case ScaleRule::mx:
    case ScaleRule::mx_ceil:
    case ScaleRule::mx_even:
    case ScaleRule::mx_rceil:
    case ScaleRule::mx_torchao_log2:
    case ScaleRule::mx_te_mxfp4:
    case ScaleRule::mx_gfloat:
    case ScaleRule::mx_mlx:
    case ScaleRule::mx_aiter: return from_exponent(mx_rule_exponent(spec.rule, amax, spec.format));
    case ScaleRule::nvfp4: return from_ue4m3(nvfp4_block_scale(amax, tensor_scale, fmax).code, tensor_scale);
    case ScaleRule::nvfp4_4over6:
      return from_four_over_six(four_over_six_block(four_over_six_tensor(tensor_scale), x, n).code, tensor_scale);
  }
  return {};
}

std::vector<ScaleChoice> candidates(const QuantSpec& spec, float tensor_scale, const float* x, std::size_t n) {
  std::vector<ScaleChoice> c{rule_choice(spec, tensor_scale, x, n)};
  const float amax = finite_amax(x, n);
  switch (spec.rule) {
    case ScaleRule::none: break;
    case ScaleRule::amax:
    case ScaleRule::absmax_int:
    case ScaleRule::mse:
      for (int k = 0; k <= 30; ++k) {
        const float r = static_cast<float>(50 + 2 * k) / 100.0f;
        c.push_back(from_multiplier(rule_multiplier(spec, r * amax)));  // mse: amax's formula
      }
      break;
    case ScaleRule::amax_pow2:
      for (int k = -2; k <= 2; ++k) {
        const float m = std::ldexp(c[0].multiplier, k);
        if (k != 0 && std::isfinite(m) && m > 0) c.push_back(from_multiplier(m));
      }
      break;
    case ScaleRule::mx:
    case ScaleRule::mx_ceil:
    case ScaleRule::mx_even:
    case ScaleRule::mx_rceil:
    case ScaleRule::mx_torchao_log2:
    case ScaleRule::mx_te_mxfp4:
    case ScaleRule::mx_gfloat:
    case ScaleRule::mx_mlx:
    case ScaleRule::mx_aiter: {
      const int e0 = static_cast<int>(c[0].code) - 127;
      for (int e = std::max(-127, e0 - 2); e <= std::min(127, e0 + 2); ++e)
        if (e != e0) c.push_back(from_exponent(e));
      break;
    }
    case ScaleRule::nvfp4:
    case ScaleRule::nvfp4_4over6: {
      const bool fos = spec.rule == ScaleRule::nvfp4_4over6;  // its scales may be subnormal, as the authors'
      const int lo = fos ? 1 : static_cast<int>(encode(ue4m3_format(), std::ldexp(1.0f, -6)));
      const int hi = static_cast<int>(encode(ue4m3_format(), 448.0f));
      const int c0 = c[0].code;
      for (int k = std::max(lo, c0 - 8); k <= std::min(hi, c0 + 8); ++k)
        if (k != c0)
          c.push_back(fos ? from_four_over_six(static_cast<std::uint8_t>(k), tensor_scale)
                          : from_ue4m3(static_cast<std::uint8_t>(k), tensor_scale));
      break;
    }
  }
  return c;
}

void gather_group(const detail::Grid& g, const float* w, std::size_t gi, std::vector<float>& v,
                  std::vector<std::size_t>& col) {
  const std::size_t gr = gi / g.ngc, gc = gi % g.ngc;
  const std::size_t r0 = gr * g.rh, r1 = std::min(g.rows, r0 + g.rh);
  const std::size_t c0 = gc * g.cw, c1 = std::min(g.cols, c0 + g.cw);
  v.clear();
  col.clear();
  for (std::size_t r = r0; r < r1; ++r)
    for (std::size_t c = c0; c < c1; ++c) {
      v.push_back(w[r * g.cols + c]);
      col.push_back(c);
    }
}

QuantizedTensor assemble(const QuantSpec& spec, std::size_t rows, std::size_t cols,
                         const std::vector<ScaleChoice>& choice, float tensor_scale, const float* y) {
  QuantizedTensor t;
  t.spec = spec;
  t.rows = rows;
  t.cols = cols;
  t.codes.resize(encoded_bytes(spec.format, rows * cols));
  encode_f32(spec.format, {y, rows * cols}, t.codes, cast_options(spec));
  if (spec.rule == ScaleRule::none) return t;
  t.tensor_scale = spec.rule == ScaleRule::nvfp4_4over6 ? four_over_six_tensor(tensor_scale).dec : tensor_scale;
  t.scales.resize(choice.size());
  for (std::size_t i = 0; i < choice.size(); ++i) t.scales[i] = choice[i].scale;
  if (multiplier_rule(spec.rule)) {
    t.multipliers.resize(choice.size());
    for (std::size_t i = 0; i < choice.size(); ++i) t.multipliers[i] = choice[i].multiplier;
  }
  if (mx_rule(spec.rule) || spec.rule == ScaleRule::nvfp4 || spec.rule == ScaleRule::nvfp4_4over6) {
    t.scale_codes.resize(choice.size());
    for (std::size_t i = 0; i < choice.size(); ++i) t.scale_codes[i] = choice[i].code;
  }
  return t;
}

}  // namespace lowp::quant::calib
