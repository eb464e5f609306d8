// quantize / dequantize / fake_quant / bits_per_element: the scale rules applied per group,
// then the bulk casts of lowp/formats/bulk.hpp over flat pieces of the tensor.
//
// Three steps, each parallel over rows, bands or pieces and each deterministic: (1) the
// finite amax of every group (and the NaN / Inf counts); (2) the group scales from the rule;
// (3) per piece of kPiece elements: scale, cast (stochastic bits indexed by the element's
// flat position, BulkOptions::offset), and for fake-quant unscale, in place. Row and block
// groups under the local rules run all three per piece of whole rows (fused_pass), reading x
// once; NVFP4 (tensor level first), tensor / column / tile groups and MSE read it twice.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/quantize.hpp"
#include "lowp/quant/scale_rules.hpp"
#include "quantize_detail.hpp"
#include "quantize_grid.hpp"
#include "quantize_kernels.hpp"

namespace lowp::quant {
namespace {

using detail::Grid;
using detail::kParallelMin;
using detail::kPiece;

bool multiplier_rule(ScaleRule r) {
  return r == ScaleRule::amax || r == ScaleRule::amax_pow2 || r == ScaleRule::absmax_int || r == ScaleRule::mse;
}

// The two-level rules: a float32 tensor scale times a UE4M3 scale per group.
bool nvfp4_rule(ScaleRule r) { return r == ScaleRule::nvfp4 || r == ScaleRule::nvfp4_4over6; }

// Every scaled rule saturates: the scale maps amax onto fmt_max, so what lies beyond is a
// rounding overshoot or a clip (MX, NVFP4 and MSE clip on purpose; torchao clamps too).
BulkOptions cast_options(const QuantSpec& spec) {
  BulkOptions o;
  o.cast = spec.cast;
  o.seed = spec.seed;
  if (spec.rule != ScaleRule::none) o.cast.saturate = true;
  return o;
}

void check_args(const QuantSpec& spec, const void* x, std::size_t rows, std::size_t cols, const char* fn) {
  validate(spec.format);
  if (cols != 0 && rows > SIZE_MAX / 8 / cols)
    throw Error(std::string(fn) + ": tensor " + std::to_string(rows) + "x" + std::to_string(cols) + " is too large");
  check_shape(spec, rows, cols);
  if (spec.rule == ScaleRule::mx_even && spec.format.kind != Kind::floating)
    throw Error(std::string(fn) + ": rule even needs a floating-point element format, not " + format_name(spec.format));
  if (spec.rule == ScaleRule::nvfp4_4over6 && !(spec.format == parse_format("e2m1")))
    throw Error(std::string(fn) + ": rule 4over6 needs e2m1 elements, not " + format_name(spec.format));
  if (x == nullptr && rows * cols != 0) throw Error(std::string(fn) + ": null data for a non-empty tensor");
}

// The elements of group `gi`, gathered row by row.
std::vector<float> gather(const Grid& g, const float* x, std::size_t gi) {
  const std::size_t gr = gi / g.ngc, gc = gi % g.ngc;
  const std::size_t r0 = gr * g.rh, r1 = std::min(g.rows, r0 + g.rh);
  const std::size_t c0 = gc * g.cw, c1 = std::min(g.cols, c0 + g.cw);
  std::vector<float> v;
  v.reserve((r1 - r0) * (c1 - c0));
  for (std::size_t r = r0; r < r1; ++r) v.insert(v.end(), x + r * g.cols + c0, x + r * g.cols + c1);
  return v;
}

// Sizes t's scale arrays for `n` groups under t.spec's rule.
void prepare_scales(QuantizedTensor& t, std::size_t n) {
  t.scales.assign(n, 1.0f);
  if (multiplier_rule(t.spec.rule)) t.multipliers.assign(n, 1.0f);
  if (mx_rule(t.spec.rule) || nvfp4_rule(t.spec.rule)) t.scale_codes.resize(n);
}

// Fills groups [g0, g1) of t's scales from their amaxes amax[0 .. g1 - g0) (NVFP4:
// t.tensor_scale set first; MSE: searched apart, see mse_scales).
void fill_scales(QuantizedTensor& t, const float* amax, std::size_t g0, std::size_t g1) {
  const QuantSpec& spec = t.spec;
  const Format& f = spec.format;
  const float fmax = format_max(f);
  switch (spec.rule) {
    case ScaleRule::none:
    case ScaleRule::nvfp4_4over6:
    case ScaleRule::mse: return;
    case ScaleRule::amax:
    case ScaleRule::amax_pow2:
    case ScaleRule::absmax_int:
      for (std::size_t i = g0; i < g1; ++i) {
        const float a = amax[i - g0];
        // absmax_int_multiplier(a, f) is amax_multiplier(a, format_max(f)): fmax, taken once.
        const float m = spec.rule == ScaleRule::amax_pow2 ? amax_pow2_multiplier(a, fmax) : amax_multiplier(a, fmax);
        t.multipliers[i] = m;
        t.scales[i] = 1.0f / m;
      }
      return;
    case ScaleRule::mx:
    case ScaleRule::mx_ceil:
    case ScaleRule::mx_even:
    case ScaleRule::mx_rceil:
    case ScaleRule::mx_torchao_log2:
    case ScaleRule::mx_te_mxfp4:
    case ScaleRule::mx_gfloat:
    case ScaleRule::mx_mlx:
    case ScaleRule::mx_aiter: {
      const MxElement el = mx_element(f);
      for (std::size_t i = g0; i < g1; ++i) {
        const int e = mx_rule_exponent(spec.rule, amax[i - g0], el);
        t.scale_codes[i] = e8m0_code(e);
        t.scales[i] = e8m0_scale(e);
      }
      return;
    }
    case ScaleRule::nvfp4:
      nvfp4_block_scales(amax, g1 - g0, t.tensor_scale, fmax, t.scale_codes.data() + g0, t.scales.data() + g0);
      return;
  }
}

// MSE: the clip search on each group's elements.
void mse_scales(QuantizedTensor& t, const Grid& g, const float* x) {
  const std::size_t n = g.count();
  const bool par = g.size() >= kParallelMin && n > 1;
#pragma omp parallel for schedule(dynamic) if (par)
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<float> v = gather(g, x, i);
    t.multipliers[i] = mse_clip_search(t.spec.format, v.data(), v.size(), t.spec.cast).multiplier;
    t.scales[i] = 1.0f / t.multipliers[i];
  }
}

// Four Over Six: the tensor level, then each group's choice between scaling it to 6 or to 4.
void four_over_six_scales(QuantizedTensor& t, const Grid& g, const float* x, float tensor_amax) {
  const FourOverSixTensor ts = four_over_six_tensor(tensor_amax);
  t.tensor_scale = ts.dec;
  const std::size_t n = g.count();
#pragma omp parallel for schedule(static) if (g.size() >= kParallelMin && n > 1)
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<float> v = gather(g, x, i);
    const FourOverSixBlock b = four_over_six_block(ts, v.data(), v.size());
    t.scale_codes[i] = b.code;
    t.scales[i] = b.scale;
  }
}

// The stacks' rules see NaN and Inf in their amax (stack_amax): the groups holding one are read
// again, only when the tensor has any.
void stack_amaxes(const QuantSpec& spec, const Grid& g, const float* x, detail::GroupStats& st) {
  if (st.nan_inputs + st.inf_inputs == 0) return;
  for (std::size_t i = 0; i < g.count(); ++i) {
    const std::vector<float> v = gather(g, x, i);
    st.amax[i] = stack_amax(spec.rule, v.data(), v.size());
  }
}

// A tensor built elsewhere with a multiplier rule but no multipliers dequantizes by its scales.
bool uses_multipliers(const QuantizedTensor& t) { return multiplier_rule(t.spec.rule) && !t.multipliers.empty(); }

// The per-group operations: cast(x op_q q[g]), value code op_d d[g]. q and d point into t's
// own arrays where they can (multipliers: both; MX: d = scales) and into `own` otherwise, so
// make_ops must come after t's arrays have their final size.
struct Ops {
  bool identity = false;
  std::vector<float> own, own_d;  // own_d: Four Over Six's dequantization side
  const float* q = nullptr;
  const float* d = nullptr;
  bool q_mul = true, d_mul = true;
};

Ops make_ops(const QuantizedTensor& t, std::size_t n) {
  Ops o;
  o.identity = t.spec.rule == ScaleRule::none;
  if (o.identity) return o;
  o.q_mul = t.spec.rule != ScaleRule::nvfp4;  // x * s, x * 2^-e; NVFP4 divides by its scales
  o.d_mul = !uses_multipliers(t);             // code / s for the multiplier rules
  if (uses_multipliers(t)) {
    o.q = o.d = t.multipliers.data();
  } else if (t.spec.rule == ScaleRule::nvfp4_4over6) {
    o.own.resize(n);  // x * (1 / (dec * s)), value code * (dec * s): the authors' arithmetic
    o.own_d.resize(n);
    o.q = o.own.data();
    o.d = o.own_d.data();
  } else {
    o.own.resize(n);
    o.q = o.own.data();
    o.d = t.spec.rule == ScaleRule::nvfp4 ? o.own.data() : t.scales.data();
  }
  return o;
}

// Groups [g0, g1) of the operations, once t's scales for them are known.
void fill_ops(const QuantizedTensor& t, Ops& o, std::size_t g0, std::size_t g1) {
  if (o.identity || uses_multipliers(t)) return;
  if (t.spec.rule == ScaleRule::nvfp4_4over6) {
    for (std::size_t i = g0; i < g1; ++i) {
      o.own_d[i] = t.tensor_scale * t.scales[i];
      o.own[i] = t.scales[i] != 0 ? 1.0f / o.own_d[i] : 0.0f;  // a zero scale zeroes its block
    }
  } else if (t.spec.rule == ScaleRule::nvfp4) {
    // A total that underflows (tensor amax below ~1e-40) is kept nonzero: never divided by 0.
    for (std::size_t i = g0; i < g1; ++i) o.own[i] = std::max(t.tensor_scale * t.scales[i], FLT_TRUE_MIN);
  } else {
    // Power-of-two scales (MX): multiplying by 1 / d is the division, exactly.
    for (std::size_t i = g0; i < g1; ++i) o.own[i] = 1.0f / t.scales[i];
  }
}

Ops ops_of(const QuantizedTensor& t, std::size_t n) {
  Ops o = make_ops(t, n);
  fill_ops(t, o, 0, n);
  return o;
}

std::size_t piece_count(std::size_t n) { return (n + kPiece - 1) / kPiece; }

// An integer format of at most 24 bits (its bounds exact in float32) cast to nearest even:
// fake-quant through QuantKernels::round_int instead of the per-element codec.
bool int_nearest(const Format& f, const CastOptions& c) {
  return f.kind == Kind::integer && f.bits() <= 24 && c.round == Round::nearest_even;
}

// Where a cast pass writes: codes (quantize) or fake-quantized values (fake-quant: x itself,
// or another array).
struct Target {
  const float* x;
  float* fake = nullptr;          // fake-quant
  std::uint8_t* codes = nullptr;  // quantize
};

// Scales, casts and (fake-quant) unscales the flat elements [a, b); a is a multiple of 4.
CastReport cast_piece(const QuantSpec& spec, const BulkOptions& base, const Grid& g, const Target& t, const Ops& ops,
                      std::size_t a, std::size_t b, std::vector<float>& tmp) {
  const Format& f = spec.format;
  BulkOptions o = base;
  o.offset = a;
  if (t.fake) {
    if (!ops.identity) detail::scale_range(g, t.x, t.fake, 0, a, b, ops.q, ops.q_mul);
    else if (t.fake != t.x) std::copy(t.x + a, t.x + b, t.fake + a);
    CastReport r;
    if (int_nearest(f, o.cast)) {  // the codec's integer cast, vectorised (bulk.hpp's is scalar)
      detail::quant_kernels().round_int(t.fake + a, b - a, static_cast<float>(f.int_min),
                                        static_cast<float>(f.int_max), &r.nan_inputs, &r.inf_inputs);
    } else {
      r = fake_quant_f32(f, {t.fake + a, b - a}, o);
    }
    if (!ops.identity) detail::scale_range(g, t.fake, t.fake, 0, a, b, ops.d, ops.d_mul);
    return r;
  }
  const float* src = t.x + a;
  if (!ops.identity) {
    tmp.resize(b - a);
    detail::scale_range(g, t.x, tmp.data(), a, a, b, ops.q, ops.q_mul);
    src = tmp.data();
  }
  return encode_f32(f, {src, b - a}, {t.codes + encoded_bytes(f, a), encoded_bytes(f, b - a)}, o);
}

// The cast over flat pieces, once every group's operation is known.
CastReport cast_pass(const QuantSpec& spec, const Grid& g, const Target& t, const Ops& ops) {
  const BulkOptions base = cast_options(spec);
  const std::size_t n = g.size(), np = piece_count(n);
  std::size_t nan = 0, inf = 0;
#pragma omp parallel reduction(+ : nan, inf) if (n >= kParallelMin)
  {
    std::vector<float> tmp;
#pragma omp for schedule(static)
    for (std::size_t p = 0; p < np; ++p) {
      const CastReport r = cast_piece(spec, base, g, t, ops, p * kPiece, std::min(n, (p + 1) * kPiece), tmp);
      nan += r.nan_inputs;
      inf += r.inf_inputs;
    }
  }
  return {nan, inf};
}

// Rules whose group scale needs only the group (no tensor-wide level, no search), on groups
// inside one row (or 1-D blocks down the columns, in bands of a few rows), with rows that
// start on packing boundaries: amax, scales and cast run per piece of whole rows (bands)
// while it is in cache, one pass over x instead of two.
bool fusable(const QuantSpec& spec, const Grid& g) {
  const ScaleRule r = spec.rule;
  const bool bands = g.cw == 1 && g.ngr > 1 && g.rh * g.cols <= kPiece * 4;
  return (g.rh == 1 || bands) && g.cols % 4 == 0 && g.cols > 0 && !stack_e8m0_rule(r) &&
         (r == ScaleRule::amax || r == ScaleRule::amax_pow2 || r == ScaleRule::absmax_int || mx_rule(r));
}

void fused_pass(QuantizedTensor& q, const Grid& g, const Target& t, Ops& ops, std::size_t& nan, std::size_t& inf) {
  const QuantSpec& spec = q.spec;
  const detail::QuantKernels& k = detail::quant_kernels();
  const BulkOptions base = cast_options(spec);
  // A piece: whole rows (rh 1), or whole bands of rh rows whose groups are single columns.
  const std::size_t cols = g.cols, per = g.rh * std::max<std::size_t>(1, kPiece / (g.rh * cols));
  const std::size_t np = (g.rows + per - 1) / per;
  std::size_t nan_ = 0, inf_ = 0;
#pragma omp parallel reduction(+ : nan_, inf_) if (g.size() >= kParallelMin)
  {
    std::vector<float> tmp;
    std::vector<std::uint32_t> bits(per / g.rh * g.ngc);
    std::vector<float> amax(per / g.rh * g.ngc);
#pragma omp for schedule(static)
    for (std::size_t p = 0; p < np; ++p) {
      const std::size_t r0 = p * per, r1 = std::min(g.rows, r0 + per);
      if (g.rh > 1) std::fill(bits.begin(), bits.end(), 0u);
      for (std::size_t r = r0; r < r1; ++r) {
        const float* xr = t.x + r * cols;
        std::uint32_t* out = bits.data() + (r - r0) / g.rh * g.ngc;
        if ((g.rh == 1 ? k.group_max(xr, cols, g.cw, out) : k.max_into(xr, cols, out)) >= 0x7f800000u)
          detail::count_nonfinite(xr, cols, nan_, inf_);
      }
      const std::size_t g0 = r0 / g.rh * g.ngc, g1 = (r1 + g.rh - 1) / g.rh * g.ngc;
      std::memcpy(amax.data(), bits.data(), (g1 - g0) * 4);  // the bit patterns of the amaxes
      fill_scales(q, amax.data(), g0, g1);
      fill_ops(q, ops, g0, g1);
      cast_piece(spec, base, g, t, ops, r0 * cols, r1 * cols, tmp);
    }
  }
  nan = nan_;
  inf = inf_;
}

// Everything but the cast target: stats, scales (rule, or the caller's fixed multiplier, or
// the rule on the caller's fixed tensor amax: static scaling). Fills q's scales and counts;
// returns the tensor amax through amax_out when asked.
CastReport run(QuantizedTensor& q, const Target& t, const float* fixed_multiplier, float* amax_out,
               const float* fixed_amax = nullptr, const Grid* grid = nullptr) {
  const QuantSpec& spec = q.spec;
  const Grid g = grid ? *grid : detail::make_grid(spec, q.rows, q.cols);
  prepare_scales(q, g.count());
  if (spec.rule == ScaleRule::none) return cast_pass(spec, g, t, make_ops(q, g.count()));
  const bool fixed = fixed_multiplier || fixed_amax;
  if (!fixed && fusable(spec, g)) {
    Ops ops = make_ops(q, g.count());
    CastReport r;
    fused_pass(q, g, t, ops, r.nan_inputs, r.inf_inputs);
    return r;
  }
  detail::GroupStats st = detail::group_stats(g, t.x);
  if (!fixed && stack_e8m0_rule(spec.rule)) stack_amaxes(spec, g, t.x, st);
  // Static scaling: a per-tensor spec's one group takes the given amax (NVFP4: below).
  if (fixed_amax && !nvfp4_rule(spec.rule) && !st.amax.empty()) st.amax[0] = *fixed_amax;
  if (fixed_multiplier) {
    q.multipliers.assign(1, *fixed_multiplier);
    q.scales.assign(1, 1.0f / *fixed_multiplier);
    *amax_out = st.amax[0];
  } else if (spec.rule == ScaleRule::mse) {
    mse_scales(q, g, t.x);
  } else if (nvfp4_rule(spec.rule)) {
    // The tensor amax: static scaling's, or the largest group amax (SIMD: the group amaxes are
    // finite and non-negative).
    float tensor_amax;
    if (fixed_amax) {
      tensor_amax = *fixed_amax;
    } else {
      std::uint32_t bits = 0;
      if (!st.amax.empty()) detail::quant_kernels().group_max(st.amax.data(), st.amax.size(), st.amax.size(), &bits);
      std::memcpy(&tensor_amax, &bits, 4);
    }
    if (spec.rule == ScaleRule::nvfp4_4over6)
      four_over_six_scales(q, g, t.x, tensor_amax);
    else
      q.tensor_scale = nvfp4_tensor_scale(tensor_amax, format_max(spec.format));
  }
  Ops ops = make_ops(q, g.count());
  // Scales and operations of many groups (a million for NVFP4 on 4096^2): in parallel chunks.
  const std::size_t ng = g.count(), chunk = 4096, nc = (ng + chunk - 1) / chunk;
  const bool rule_scales = !fixed_multiplier && spec.rule != ScaleRule::mse && spec.rule != ScaleRule::nvfp4_4over6;
#pragma omp parallel for schedule(static) if (ng >= 4 * chunk)
  for (std::size_t c = 0; c < nc; ++c) {
    const std::size_t g0 = c * chunk, g1 = std::min(ng, g0 + chunk);
    if (rule_scales) fill_scales(q, st.amax.data() + g0, g0, g1);
    fill_ops(q, ops, g0, g1);
  }
  cast_pass(spec, g, t, ops);
  return {st.nan_inputs, st.inf_inputs};
}

QuantizedTensor quantize_impl(const QuantSpec& spec, const float* x, std::size_t rows, std::size_t cols,
                              const float* fixed_multiplier, float* amax_out) {
  QuantizedTensor q;
  q.spec = spec;
  q.rows = rows;
  q.cols = cols;
  q.codes.resize(encoded_bytes(spec.format, rows * cols));
  const CastReport r = run(q, {x, nullptr, q.codes.data()}, fixed_multiplier, amax_out);
  q.nan_inputs = r.nan_inputs;
  q.inf_inputs = r.inf_inputs;
  return q;
}

FakeQuantReport fake_quant_impl(const QuantSpec& spec, const float* x, float* out, std::size_t rows, std::size_t cols,
                                const float* fixed_multiplier, float* amax_out, const float* fixed_amax = nullptr) {
  QuantizedTensor q;  // the scales only
  q.spec = spec;
  q.rows = rows;
  q.cols = cols;
  const CastReport r = run(q, {x, out, nullptr}, fixed_multiplier, amax_out, fixed_amax);
  return {r.nan_inputs, r.inf_inputs};
}

}  // namespace

namespace detail {

bool column_blocks_fit(const QuantSpec& spec) {
  const ScaleRule r = spec.rule;
  return spec.granularity == Granularity::block && spec.cast.round != Round::stochastic && !stack_e8m0_rule(r) &&
         (mx_rule(r) || r == ScaleRule::amax || r == ScaleRule::amax_pow2 || r == ScaleRule::absmax_int ||
          r == ScaleRule::nvfp4);
}

FakeQuantReport fake_quant_column_blocks(const QuantSpec& spec, const float* x, float* out, std::size_t rows,
                                         std::size_t cols) {
  if (!column_blocks_fit(spec)) throw Error("fake_quant_column_blocks: " + describe(spec) + " does not fit");
  check_args(spec, x, cols, rows, "fake_quant");  // the shape of x^T, which the blocks divide
  Grid g = detail::make_grid(spec, cols, rows);
  std::swap(g.rows, g.cols);
  std::swap(g.rh, g.cw);
  std::swap(g.ngr, g.ngc);
  QuantizedTensor q;  // the scales only
  q.spec = spec;
  q.rows = rows;
  q.cols = cols;
  const CastReport r = run(q, {x, out, nullptr}, nullptr, nullptr, nullptr, &g);
  return {r.nan_inputs, r.inf_inputs};
}

}  // namespace detail

namespace {

void check_fixed(const QuantSpec& spec, float s, const char* fn) {
  if (spec.granularity != Granularity::tensor || !multiplier_rule(spec.rule) || spec.rule == ScaleRule::mse)
    throw Error(std::string(fn) + ": delayed scaling needs a per-tensor amax rule, not " + describe(spec));
  if (!(s > 0) || !std::isfinite(s))
    throw Error(std::string(fn) + ": scale " + std::to_string(s) + " is not a positive finite number");
}

}  // namespace

double bits_per_element(const QuantSpec& spec, std::size_t rows, std::size_t cols) {
  check_args(spec, &spec, rows, cols, "bits_per_element");
  const double elem = storage_bits(spec.format);
  const std::size_t n = rows * cols;
  if (n == 0 || spec.rule == ScaleRule::none) return elem;
  const Grid g = detail::make_grid(spec, rows, cols);
  double scale_bits = 32.0 * static_cast<double>(g.count());  // float32 multipliers
  if (mx_rule(spec.rule)) scale_bits = 8.0 * static_cast<double>(g.count());
  if (nvfp4_rule(spec.rule)) scale_bits = 8.0 * static_cast<double>(g.count()) + 32.0;
  return elem + scale_bits / static_cast<double>(n);
}

double QuantizedTensor::bits_per_element() const { return quant::bits_per_element(spec, rows, cols); }

QuantizedTensor quantize(const QuantSpec& spec, const float* x, std::size_t rows, std::size_t cols) {
  check_args(spec, x, rows, cols, "quantize");
  return quantize_impl(spec, x, rows, cols, nullptr, nullptr);
}

FakeQuantReport fake_quant(const QuantSpec& spec, float* x, std::size_t rows, std::size_t cols) {
  check_args(spec, x, rows, cols, "fake_quant");
  return fake_quant_impl(spec, x, x, rows, cols, nullptr, nullptr);
}

FakeQuantReport fake_quant(const QuantSpec& spec, const float* x, float* out, std::size_t rows, std::size_t cols) {
  check_args(spec, x, rows, cols, "fake_quant");
  if (out == nullptr && rows * cols != 0) throw Error("fake_quant: null output for a non-empty tensor");
  return fake_quant_impl(spec, x, out, rows, cols, nullptr, nullptr);
}

bool has_tensor_scale(const QuantSpec& spec) noexcept {
  if (nvfp4_rule(spec.rule)) return true;
  return spec.granularity == Granularity::tensor && spec.rule != ScaleRule::none && spec.rule != ScaleRule::mse;
}

FakeQuantReport fake_quant_static(const QuantSpec& spec, float* x, std::size_t rows, std::size_t cols, float amax) {
  check_args(spec, x, rows, cols, "fake_quant_static");
  if (!has_tensor_scale(spec))
    throw Error("fake_quant_static: " + describe(spec) + " has no tensor-level scale to fix");
  if (!(amax >= 0) || !std::isfinite(amax))
    throw Error("fake_quant_static: amax " + std::to_string(amax) + " is not a finite number >= 0");
  return fake_quant_impl(spec, x, x, rows, cols, nullptr, nullptr, &amax);
}

void dequantize(const QuantizedTensor& q, float* out) {
  check_args(q.spec, out, q.rows, q.cols, "dequantize");
  const Format& f = q.spec.format;
  const Grid g = detail::make_grid(q.spec, q.rows, q.cols);
  const std::size_t n = g.size();
  const auto fail = [&](const std::string& what) {
    return Error("dequantize: " + what + " for a " + std::to_string(q.rows) + "x" + std::to_string(q.cols) +
                 " tensor (" + describe(q.spec) + ")");
  };
  if (q.codes.size() < encoded_bytes(f, n))
    throw fail(std::to_string(q.codes.size()) + " code bytes, need " + std::to_string(encoded_bytes(f, n)));
  const std::size_t ns = q.multipliers.empty() ? q.scales.size() : q.multipliers.size();
  if (q.spec.rule != ScaleRule::none && ns != g.count())
    throw fail(std::to_string(ns) + " scales, need " + std::to_string(g.count()));
  const Ops ops = ops_of(q, g.count());
  const std::size_t np = piece_count(n);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (std::size_t p = 0; p < np; ++p) {
    const std::size_t a = p * kPiece, b = std::min(n, a + kPiece);
    decode_f32(f, {q.codes.data() + encoded_bytes(f, a), encoded_bytes(f, b - a)}, {out + a, b - a});
    if (!ops.identity) detail::scale_range(g, out, out, 0, a, b, ops.d, ops.d_mul);
  }
}

namespace detail {

QuantizedTensor quantize_with_multiplier(const QuantSpec& spec, const float* x, std::size_t rows,
                                         std::size_t cols, float s, float& amax) {
  check_args(spec, x, rows, cols, "quantize (delayed scaling)");
  check_fixed(spec, s, "quantize");
  return quantize_impl(spec, x, rows, cols, &s, &amax);
}

FakeQuantReport fake_quant_with_multiplier(const QuantSpec& spec, float* x, std::size_t rows,
                                           std::size_t cols, float s, float& amax) {
  check_args(spec, x, rows, cols, "fake_quant (delayed scaling)");
  check_fixed(spec, s, "fake_quant");
  return fake_quant_impl(spec, x, x, rows, cols, &s, &amax);
}

DequantOps dequant_ops(const QuantizedTensor& q) {
  const Grid g = make_grid(q.spec, q.rows, q.cols);
  DequantOps out;
  out.rh = g.rh;
  out.cw = g.cw;
  out.ngc = g.ngc;
  const Ops ops = ops_of(q, g.count());
  if (!ops.identity) {
    out.d.assign(ops.d, ops.d + g.count());
    out.mul = ops.d_mul;
  }
  return out;
}

}  // namespace detail
}  // namespace lowp::quant
