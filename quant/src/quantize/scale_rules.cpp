// The scale rules: one function per rule, each on a group's finite amax.
#include "lowp/quant/scale_rules.hpp"

#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"

namespace lowp::quant {
namespace {

constexpr float kUe4m3Max = 448.0f;
constexpr float kUe4m3Tiny = 0.015625f;  // 2^-6, E4M3's smallest normal

const Format& ue4m3() {
  static const Format f = minifloat(4, 3, Specials::fn, false);
  return f;
}

const Format& fp4_e2m1() {
  static const Format f = parse_format("e2m1");
  return f;
}

float clamp_block(float b) noexcept {
  if (!(b >= kUe4m3Tiny)) b = kUe4m3Tiny;  // also catches NaN
  return b > kUe4m3Max ? kUe4m3Max : b;
}

}  // namespace

float exp2i(int e) noexcept {
  if (e < -126) return std::ldexp(1.0f, e);  // subnormal
  const auto b = static_cast<std::uint32_t>(e + 127) << 23;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

float finite_amax(const float* x, std::size_t n) noexcept {
  // On the bit patterns: |x| is the pattern without its sign, finite iff below Inf's, and
  // ordered like the values, so an integer max (which vectorises) gives the amax.
  std::uint32_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t b;
    std::memcpy(&b, x + i, 4);
    b &= 0x7fffffffu;
    b = b < 0x7f800000u ? b : 0u;
    m = b > m ? b : m;
  }
  float r;
  std::memcpy(&r, &m, 4);
  return r;
}

float format_max(const Format& f) noexcept {
  const double m = f.max_finite();
  return m >= static_cast<double>(FLT_MAX) ? FLT_MAX : static_cast<float>(m);
}

float amax_multiplier(float amax, float fmt_max) noexcept {
  if (!(amax > 0) || !std::isfinite(amax)) return 1.0f;
  const float s = fmt_max / amax;
  return std::isfinite(s) ? s : FLT_MAX;
}

float amax_pow2_multiplier(float amax, float fmt_max) noexcept {
  const float s = amax_multiplier(amax, fmt_max);
  int e = 0;
  std::frexp(s, &e);  // s = m * 2^e, m in [0.5, 1)
  return exp2i(e - 1);
}

float absmax_int_multiplier(float amax, const Format& int_format) noexcept {
  return amax_multiplier(amax, format_max(int_format));
}

int mx_emax_elem(const Format& element) noexcept {
  int e = 0;
  std::frexp(element.max_finite(), &e);
  return e - 1;
}

namespace {

// floor(log2 amax) for a finite amax > 0, subnormals included.
int floor_log2(float amax) noexcept {
  int e = 0;
  std::frexp(amax, &e);  // amax = m * 2^e, m in [0.5, 1)
  return e - 1;
}

int clamp_e8m0(int e) noexcept { return e < -127 ? -127 : e > 127 ? 127 : e; }

}  // namespace

int mx_scale_exponent(float amax, int emax_elem) noexcept {
  if (!(amax > 0) || !std::isfinite(amax)) return -127;
  return clamp_e8m0(floor_log2(amax) - emax_elem);
}

int mx_ceil_scale_exponent(float amax, int emax_elem) noexcept {
  if (!(amax > 0) || !std::isfinite(amax)) return -127;
  int e = 0;
  const float m = std::frexp(amax, &e);
  return clamp_e8m0((m == 0.5f ? e - 1 : e) - emax_elem);  // ceil(log2 amax)
}

int mx_even_scale_exponent(float amax, int emax_elem, int man_bits) noexcept {
  if (!(amax > 0) || !std::isfinite(amax)) return -127;
  int e = 0;
  const double m = 2.0 * std::frexp(static_cast<double>(amax), &e);  // amax = m * 2^(e-1), m in [1, 2)
  // m rounded to man_bits fraction bits (ties away, torchao adds half an ulp) reaches 2 iff
  // m >= 2 - 2^-(man_bits + 1); then the binade is the next one.
  const bool up = m >= 2.0 - std::ldexp(1.0, -(man_bits + 1));
  return clamp_e8m0(e - 1 + (up ? 1 : 0) - emax_elem);
}

int mx_rceil_scale_exponent(float amax, float fmt_max) noexcept {
  if (!(amax > 0) || !std::isfinite(amax)) return -127;
  // torchao / TransformerEngine arithmetic: the float32 product amax * float32(1 / fmt_max),
  // then rounded up to a power of two (cvt.rp.ue8m0); a subnormal product at most 2^-127
  // gives 2^-127.
  const double r = 1.0 / static_cast<double>(fmt_max);
  const float rcp = r < 0x1p128 ? static_cast<float>(r) : HUGE_VALF;  // a tiny fmt_max (custom bias)
  const float d = amax * rcp;
  if (!(d > 0)) return -127;
  if (!std::isfinite(d)) return 127;
  int e = 0;
  const float m = std::frexp(d, &e);  // d = m * 2^e, m in [0.5, 1)
  return clamp_e8m0(m == 0.5f ? e - 1 : e);
}

namespace {

// float32(1 / fmt_max), as CUDA's division by a host scalar and aiter's inv_max_pos take it.
float reciprocal_f32(float fmt_max) noexcept {
  const double r = 1.0 / static_cast<double>(fmt_max);
  return r < 0x1p128 ? static_cast<float>(r) : HUGE_VALF;
}

// clamp(ceil(float32 log2 d), -127, 127) for d >= 0 or +Inf (log2 0 = -inf, log2 Inf = Inf).
int ceil_log2_f32_clamped(float d) noexcept {
  if (!(d > 0)) return -127;
  if (!std::isfinite(d)) return 127;
  return clamp_e8m0(static_cast<int>(std::ceil(log2_f32(d))));
}

}  // namespace

float log2_f32(float d) noexcept {
  // x87 long double carries 64 significand bits; the float32 results of log2 that are hardest
  // to round lie within about 2^-(24 + 30) of a midpoint, far above log2l's error, so one
  // rounding of log2l gives the nearest float32. Exact powers of two give exact integers.
  static_assert(std::numeric_limits<long double>::digits >= 64, "log2_f32 needs x87 long double");
  return static_cast<float>(std::log2(static_cast<long double>(d)));
}

int mx_torchao_log2_exponent(float amax, float fmt_max) noexcept {
  if (std::isnan(amax)) return kE8m0Nan;
  return ceil_log2_f32_clamped(amax * reciprocal_f32(fmt_max));
}

int mx_te_mxfp4_exponent(float amax, float fmt_max) noexcept {
  if (std::isnan(amax)) return kE8m0Nan;
  return ceil_log2_f32_clamped(amax / fmt_max);
}

int mx_gfloat_exponent(float amax, float fmt_max) noexcept {
  if (std::isnan(amax)) return kE8m0Nan;
  if (!std::isfinite(amax)) return 127;  // sat=True
  const double d = static_cast<double>(amax) / static_cast<double>(fmt_max);
  if (!(d > 0)) return -127;  // zero: the smallest magnitude (PR #66)
  int e = 0;
  const double m = 2.0 * std::frexp(d, &e);  // d = m * 2^(e-1), m in [1, 2): isignificand 1, delta m - 1
  const int k = e - 1;
  // E8M0 has one bit of precision, so gfloat's "odd" is the code's parity (k + 127).
  const bool odd_code = ((k + 127) & 1) != 0;
  const bool away = m - 1.0 > 0.5 || (m - 1.0 == 0.5 && odd_code);
  return clamp_e8m0(k + (away ? 1 : 0));
}

int mx_mlx_exponent(float amax, float fmt_max) noexcept {
  const float d = amax / fmt_max;
  if (!std::isfinite(d)) return kE8m0Nan;
  if (!(d > 0)) return -127;
  return clamp_e8m0(static_cast<int>(std::round(log2_f32(d))));
}

int mx_aiter_exponent(float amax, float fmt_max) noexcept {
  const float d = amax * reciprocal_f32(fmt_max);
  std::uint32_t u;
  std::memcpy(&u, &d, 4);
  std::uint32_t field = (u >> 23) & 0xFFu;
  if (field < 0xFFu && (u & 0x7FFFFFu) != 0) ++field;
  return field == 0xFFu ? kE8m0Nan : static_cast<int>(field) - 127;
}

float stack_amax(ScaleRule rule, const float* x, std::size_t n) noexcept {
  const bool skip_nan = rule == ScaleRule::mx_mlx;
  float m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (std::isnan(a)) {
      if (!skip_nan) return a;
    } else if (a > m) {
      m = a;
    }
  }
  return m;
}

MxElement mx_element(const Format& element) noexcept {
  return {mx_emax_elem(element), format_max(element), element.man_bits};
}

int mx_rule_exponent(ScaleRule rule, float amax, const Format& element) noexcept {
  return mx_rule_exponent(rule, amax, mx_element(element));
}

int mx_rule_exponent(ScaleRule rule, float amax, const MxElement& element) noexcept {
  const int emax = element.emax;
  const float fmax = element.fmax;
  switch (rule) {
    case ScaleRule::mx_ceil: return mx_ceil_scale_exponent(amax, emax);
    case ScaleRule::mx_even: return mx_even_scale_exponent(amax, emax, element.man_bits);
    case ScaleRule::mx_rceil: return mx_rceil_scale_exponent(amax, fmax);
    case ScaleRule::mx_torchao_log2: return mx_torchao_log2_exponent(amax, fmax);
    case ScaleRule::mx_te_mxfp4: return mx_te_mxfp4_exponent(amax, fmax);
    case ScaleRule::mx_gfloat: return mx_gfloat_exponent(amax, fmax);
    case ScaleRule::mx_mlx: return mx_mlx_exponent(amax, fmax);
    case ScaleRule::mx_aiter: return mx_aiter_exponent(amax, fmax);
    default: return mx_scale_exponent(amax, emax);
  }
}

std::span<const StackRule> stack_scale_rules() noexcept {
  static constexpr StackRule kRules[] = {
      {"OCP MX v1.0 (section 6.3)", "mx", "OCP spec; torchao ScaleCalculationMode.FLOOR", "lowp's default"},
      {"cuBLAS, TransformerEngine MXFP8, torchao RCEIL since Aug 2026", "rceil",
       "TransformerEngine common/util/ptx.cuh (cvt.rp); torchao mx_formats/mx_tensor.py", "rounds up, never clips"},
      {"torchao eager RCEIL, Mar 2025 - Aug 2026", "torchao-log2",
       "pytorch/ao mx_formats/mx_tensor.py _to_mx_rceil before 5d73a0c", "float32 log2: 2^k a few ulps above max*2^k"},
      {"TransformerEngine MXFP4 reference", "te-mxfp4",
       "TransformerEngine pytorch/custom_recipes/reference_nvfp4.py cast_to_e8", "rounds up; a NaN poisons the block"},
      {"gfloat round_float to E8M0 (after PR #66)", "gfloat", "graphcore-research/gfloat src/gfloat/round.py",
       "nearest power of two (ties to even code), may clip"},
      {"MLX", "mlx", "ml-explore/mlx backend/cpu/quantized.cpp to_fp8_e8m0", "round(log2), may clip"},
      {"ROCm aiter (RoundUp, its default)", "aiter", "ROCm/aiter csrc/include/mx_quant_utils.h",
       "rceil, but a subnormal quotient gives 2^-126"},
      {"Four Over Six (NVFP4)", "4over6", "mit-han-lab/fouroversix quantize/pytorch/reference.py",
       "UE4M3: each block scaled to 6 or 4 (nvfp4 is 6 only)"},
  };
  return kRules;
}

float e8m0_scale(int exponent) noexcept { return exponent == kE8m0Nan ? NAN : exp2i(exponent); }

FourOverSixTensor four_over_six_tensor(float tensor_amax) noexcept {
  FourOverSixTensor t;
  t.amax = tensor_amax;
  if (!(tensor_amax > 0) || !std::isfinite(tensor_amax)) return t;
  t.enc = 1536.0f / tensor_amax;
  t.dec = 1.0f / t.enc;
  return t;
}

FourOverSixBlock four_over_six_block(const FourOverSixTensor& t, const float* x, std::size_t n) {
  const Format& e2m1 = fp4_e2m1();
  const float b = finite_amax(x, n);
  const float hp6 = t.amax > 0 ? b / 6.0f * t.enc : 0.0f;
  const CastOptions rne{Round::nearest_even, false, false};
  FourOverSixBlock best;
  double best_err = 0;
  for (const bool four : {false, true}) {
    FourOverSixBlock c;
    c.four = four;
    c.code = static_cast<std::uint8_t>(encode(ue4m3(), four ? hp6 * 1.5f : hp6, rne));
    c.scale = static_cast<float>(decode(ue4m3(), c.code));
    c.d = t.dec * c.scale;
    c.q = c.scale != 0 ? 1.0f / c.d : 0.0f;
    double err = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(x[i])) continue;
      const CastOptions sat{Round::nearest_even, true, false};
      const float q = static_cast<float>(decode(e2m1, encode(e2m1, x[i] * c.q, sat)));
      const float v = q * c.scale * t.amax / 1536.0f;
      const float diff = v - x[i];
      const float sq = diff * diff;
      err += sq;
    }
    if (!four || err < best_err) best = c, best_err = err;  // ties keep 6
  }
  return best;
}

float nvfp4_tensor_scale(float tensor_amax, float fmt_max) noexcept {
  if (!(tensor_amax > 0) || !std::isfinite(tensor_amax)) return 1.0f;
  const float s = tensor_amax / (kUe4m3Max * fmt_max);
  return s > 0 ? s : FLT_TRUE_MIN;
}

Nvfp4BlockScale nvfp4_block_scale(float block_amax, float tensor_scale, float fmt_max) noexcept {
  const float b = clamp_block(block_amax / fmt_max / tensor_scale);
  Nvfp4BlockScale r;
  r.code = static_cast<std::uint8_t>(encode(ue4m3(), b));
  r.value = static_cast<float>(decode(ue4m3(), r.code));
  return r;
}

void nvfp4_block_scales(const float* block_amax, std::size_t n, float tensor_scale, float fmt_max,
                        std::uint8_t* codes, float* values) {
  for (std::size_t i = 0; i < n; ++i) values[i] = clamp_block(block_amax[i] / fmt_max / tensor_scale);
  encode_f32(ue4m3(), {values, n}, {codes, n});
  decode_f32(ue4m3(), {codes, n}, {values, n});
}

std::span<const float> mse_clip_grid() noexcept {
  static const std::array<float, 81> grid = [] {
    std::array<float, 81> g{};
    for (int k = 0; k < 81; ++k) g[static_cast<std::size_t>(k)] = static_cast<float>(100 - k) / 100.0f;
    return g;
  }();
  return grid;
}

MseClip mse_clip_search(const Format& f, const float* x, std::size_t n, const CastOptions& cast) {
  const float amax = finite_amax(x, n);
  const float fmax = format_max(f);
  BulkOptions opt;
  opt.cast = cast;
  opt.cast.saturate = true;  // clipping means saturating
  if (opt.cast.round == Round::stochastic) opt.cast.round = Round::nearest_even;
  std::vector<float> tmp(n);
  MseClip best;
  bool first = true;
  for (const float ratio : mse_clip_grid()) {
    const float s = amax_multiplier(ratio * amax, fmax);
    for (std::size_t i = 0; i < n; ++i) tmp[i] = x[i] * s;
    fake_quant_f32(f, tmp, opt);
    double err = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(x[i])) continue;
      const double d = static_cast<double>(x[i]) - static_cast<double>(tmp[i] / s);
      err += d * d;
    }
    if (first || err < best.sq_error) best = {ratio, s, err};
    first = false;
    if (amax == 0) break;  // every ratio gives the same (zero) error
  }
  return best;
}

}  // namespace lowp::quant
