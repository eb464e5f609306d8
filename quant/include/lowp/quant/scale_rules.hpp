// The scale rules behind lowp/quant/quantize.hpp, one named function each, on a group's amax.
//
// amax is always the largest |x| over the *finite* elements of a group: NaN and +-Inf are left
// out (and counted by quantize), so one NaN does not wipe out its block's scale; the NaN itself
// encodes as the format's NaN (or 0 in FP4/FP6, which have none), an Inf saturates.
// A group with no finite nonzero element has amax 0, which no rule divides by.
//
// Two kinds of scale:
// - multipliers s (amax, amax_pow2, absmax_int, mse): codes = cast(x * s) and the value is
//   code / s, torchao's arithmetic (s = fmt_max / amax in float32);
// - dequantization scales d (mx, mx_ceil, mx_even, mx_rceil, nvfp4): codes = cast(x / d), value = code * d.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/format.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant {

// Largest |x| over the finite elements of x[0..n) (0 when there are none).
float finite_amax(const float* x, std::size_t n) noexcept;

// The largest finite value of the element format, as a float32 (FLT_MAX-clamped).
float format_max(const Format& f) noexcept;

// Current scaling: s = fmt_max / amax in float32. amax 0 (or not finite): s = 1. An s that
// overflows float32 (amax tiny) is clamped to FLT_MAX.
float amax_multiplier(float amax, float fmt_max) noexcept;
// The same, rounded down to a power of two (so 1/s is exact).
float amax_pow2_multiplier(float amax, float fmt_max) noexcept;
// Integers (SwitchBack, LLM.int8()): s = int_max / absmax, i.e. 127 / absmax for int8.
float absmax_int_multiplier(float amax, const Format& int_format) noexcept;

// The MX block scale: an E8M0 power of two 2^e, e clamped to [-127, 127], amax 0 giving -127,
// under one of torchao's four ScaleCalculationMode rules. emax_elem = floor(log2 max_finite) of
// the element format (8 for E4M3, 15 for E5M2, 2 for E2M1/E2M3, 4 for E3M2). Elements saturate.
int mx_emax_elem(const Format& element) noexcept;
// FLOOR (OCP MX v1.0, section 6.3): e = floor(log2 amax) - emax_elem.
int mx_scale_exponent(float amax, int emax_elem) noexcept;
// CEIL: e = ceil(log2 amax) - emax_elem (never clips; small elements may flush to 0).
int mx_ceil_scale_exponent(float amax, int emax_elem) noexcept;
// EVEN: amax rounded to the element's man_bits fraction bits (half an ulp added, ties away),
// then as FLOOR: e = floor(log2 round(amax)) - emax_elem.
int mx_even_scale_exponent(float amax, int emax_elem, int man_bits) noexcept;
// RCEIL (cuBLAS / TransformerEngine): d = amax * (1 / fmt_max), both float32 operations, then
// e = ceil(log2 d) exactly (cvt.rp to E8M0; d <= 2^-127 gives -127).
int mx_rceil_scale_exponent(float amax, float fmt_max) noexcept;

// Each stack's own E8M0 rule (docs/quantization.md, "Each stack's scale rule"), on the amax that
// stack computes: NaN when the group holds a NaN (MLX skips NaN elements), +Inf when it holds an
// Inf. They return the exponent in [-127, 127], or kE8m0Nan for the NaN code 0xFF, whose scale
// is NaN (every element of the block then dequantizes to NaN).
inline constexpr int kE8m0Nan = 128;
// The float32 nearest log2(d) (ties cannot occur), for d > 0 finite: what a correctly rounded
// log2f gives; the stacks' float32 log2 is faithful, and agrees wherever that is exact.
float log2_f32(float d) noexcept;
// torchao's eager RCEIL (mx_tensor.py `_to_mx_rceil`, March 2025 - August 2026): descale =
// amax / max as CUDA computes a division by a host scalar (amax * float32(1 / max)), then
// clamp(ceil(float32 log2 descale), -127, 127); NaN gives 0xFF, +Inf 2^127, 0 2^-127.
int mx_torchao_log2_exponent(float amax, float fmt_max) noexcept;
// TransformerEngine's MXFP4 reference (custom_recipes/reference_nvfp4.py, pow_2_scales): the
// float32 quotient amax / max, then 2^clamp(ceil(float32 log2), -127, 127) (`cast_to_e8`); a NaN
// propagates to a NaN scale (the block is poisoned), +Inf gives 2^127, 0 gives 2^-127.
int mx_te_mxfp4_exponent(float amax, float fmt_max) noexcept;
// gfloat (round.py `round_float` onto format_info_ocp_e8m0, TiesToEven, sat=True, after its
// issue #62 / PR #66): d = amax / max in float64 rounded to the nearest power of two, a tie
// (d = 1.5 * 2^k) to the even E8M0 code; finite underflows, 0 included, clamp to 2^-127 (before
// PR #66 they encoded as NaN); NaN gives NaN, +Inf saturates to 2^127.
int mx_gfloat_exponent(float amax, float fmt_max) noexcept;
// MLX (backend/cpu/quantized.cpp `to_fp8_e8m0`, the Metal fp8_e8m0 the same): the float32
// quotient amax / max, n = round(float32 log2), halves away from zero, clamped to [-127, 127];
// a non-finite quotient gives 0xFF; amax 0 gives 2^-127 (log2 0 = -inf, which x86 converts to
// INT_MIN before the clamp).
int mx_mlx_exponent(float amax, float fmt_max) noexcept;
// ROCm aiter's default MX rule (csrc/include/mx_quant_utils.h, MxScaleRoundMode::RoundUp):
// d = amax * float32(1 / max), then d's float32 exponent field plus one when its mantissa is
// nonzero. Unlike RCEIL, a subnormal d gives 2^-126 (field 0 bumped to 1); NaN / Inf keep
// field 0xFF (NaN).
int mx_aiter_exponent(float amax, float fmt_max) noexcept;

// The stacks' rules above, which see NaN and Inf in their amax (stack_amax).
constexpr bool stack_e8m0_rule(ScaleRule r) noexcept {
  return r == ScaleRule::mx_torchao_log2 || r == ScaleRule::mx_te_mxfp4 || r == ScaleRule::mx_gfloat ||
         r == ScaleRule::mx_mlx || r == ScaleRule::mx_aiter;
}
// The amax a stack's rule sees of x[0..n): NaN if an element is NaN (not for MLX, whose max
// skips NaN), else the largest |x| with +-Inf included.
float stack_amax(ScaleRule rule, const float* x, std::size_t n) noexcept;

// The table of docs/quantization.md ("Each stack's scale rule") that `lowp recipes` prints:
// which rule reproduces which stack, where that stack's code is, and how it differs from
// lowp's default (mx, OCP floor).
struct StackRule {
  std::string_view stack, rule, code, vs_default;
};
std::span<const StackRule> stack_scale_rules() noexcept;

// mx, mx_ceil, mx_even, mx_rceil and the stacks' rules: the rules with an E8M0 scale.
constexpr bool mx_rule(ScaleRule r) noexcept {
  return r == ScaleRule::mx || r == ScaleRule::mx_ceil || r == ScaleRule::mx_even || r == ScaleRule::mx_rceil ||
         stack_e8m0_rule(r);
}
// The E8M0 rule `rule` names (FLOOR for any other rule), for element format `element`;
// kE8m0Nan only from a stack's rule.
int mx_rule_exponent(ScaleRule rule, float amax, const Format& element) noexcept;
// What mx_rule_exponent reads of the element format, taken once for a tensor's many groups
// (max_finite decodes the format's largest code: too slow to repeat per 32 elements).
struct MxElement {
  int emax = 0;      // mx_emax_elem
  float fmax = 0;    // format_max
  int man_bits = 0;  // the rule `even`'s rounding
};
MxElement mx_element(const Format& element) noexcept;
int mx_rule_exponent(ScaleRule rule, float amax, const MxElement& element) noexcept;
// 2^e as a float32 for an mx_rule_exponent: NaN for kE8m0Nan.
float e8m0_scale(int exponent) noexcept;
// E8M0 code of 2^e for e in [-127, 127] (bias 127); kE8m0Nan gives 0xFF.
constexpr std::uint8_t e8m0_code(int exponent) noexcept { return static_cast<std::uint8_t>(exponent + 127); }

// NVFP4, two levels (torchao's nvfp4 arithmetic). Level 1: the float32 per-tensor
// dequantization scale amax / (448 * fmt_max) (448 * 6 = 2688 for E2M1; the quantization side
// multiplier is its inverse, 2688 / amax); amax 0 gives 1, and an underflow is clamped to the
// smallest float32. Level 2, per block: (block_amax / fmt_max) / tensor_scale in float32,
// clamped to [2^-6, 448] (torch.finfo(e4m3).tiny as torchao) and rounded to UE4M3 under
// nearest-even. Elements: cast(x / (tensor_scale * block)), value code * (tensor_scale * block).
float nvfp4_tensor_scale(float tensor_amax, float fmt_max) noexcept;
struct Nvfp4BlockScale {
  std::uint8_t code = 0;  // UE4M3
  float value = 0;        // decode(code)
};
Nvfp4BlockScale nvfp4_block_scale(float block_amax, float tensor_scale, float fmt_max) noexcept;
// The same for n blocks at once (the bulk UE4M3 cast), codes[i] / values[i] for block_amax[i].
void nvfp4_block_scales(const float* block_amax, std::size_t n, float tensor_scale, float fmt_max,
                        std::uint8_t* codes, float* values);

// 2^e as a float32, exactly, for e in [-149, 127].
float exp2i(int e) noexcept;

// Four Over Six (Cook et al. 2025, arXiv 2512.02010; the authors' reference
// mit-han-lab/fouroversix, quantize/pytorch/reference.py, round to nearest, scale rule MSE),
// rule nvfp4_4over6, E2M1 elements. Tensor level: enc = 1536 / amax (6 * 256: the block scale
// of a block scaled to 4 is 1.5x, and stays within E4M3), dec = 1 / enc, both float32; amax 0
// gives dec 1 and every block scale 0. Per block, with b its amax and x its elements:
//   s6 = E4M3((b / 6) * enc), s4 = E4M3(((b / 6) * enc) * 1.5) (float32, then to E4M3 nearest
//   even, subnormals kept, no clamp); each candidate's elements q = E2M1(x * (1 / (dec * s)))
//   (float32; a scale 0 gives q = 0) and values ((q * s) * amax) / 1536 in float32; the error is
//   the sum of squared differences from x, and 4 wins only when strictly smaller (ties: 6).
// The reference sums the 16 float32 squares in float32 in an order its backend picks; lowp sums
// the same float32 squares in float64, which can only differ from it when the two candidates'
// errors agree to float32 rounding. Its E2M1 rounding does not saturate (a block whose E4M3
// scale is subnormal can map an element past 6, to 8); lowp's cast saturates at 6.
struct FourOverSixTensor {
  float enc = 1, dec = 1;
  float amax = 0;
};
FourOverSixTensor four_over_six_tensor(float tensor_amax) noexcept;
struct FourOverSixBlock {
  std::uint8_t code = 0;  // the UE4M3 scale chosen
  float scale = 0;        // its value
  float q = 0;            // element multiplier 1 / (dec * scale) (0 for a zero scale)
  float d = 0;            // dequantization multiplier dec * scale, float32
  bool four = false;      // scaled to 4
};
FourOverSixBlock four_over_six_block(const FourOverSixTensor& t, const float* x, std::size_t n);

// MSE-optimal clipping: the clip ratios tried, 1.00, 0.99, ..., 0.20 (descending).
std::span<const float> mse_clip_grid() noexcept;
struct MseClip {
  float ratio = 1;       // the grid point chosen (the largest among equal errors)
  float multiplier = 1;  // amax_multiplier(ratio * amax, fmt_max)
  double sq_error = 0;   // sum over finite x of (x - code / s)^2
};
// Searches the grid for the clip ratio minimising the squared error of x[0..n) quantized with
// s = fmt_max / (ratio * amax) and a saturating cast in `cast.round` (nearest-even when the
// mode is stochastic, so the search is deterministic).
MseClip mse_clip_search(const Format& f, const float* x, std::size_t n, const CastOptions& cast);

}  // namespace lowp::quant
