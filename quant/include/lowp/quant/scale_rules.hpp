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
// mx, mx_ceil, mx_even or mx_rceil: the rules with an E8M0 scale.
constexpr bool mx_rule(ScaleRule r) noexcept {
  return r == ScaleRule::mx || r == ScaleRule::mx_ceil || r == ScaleRule::mx_even || r == ScaleRule::mx_rceil;
}
// The one of the four above that `rule` names (mx, mx_ceil, mx_even, mx_rceil; FLOOR for any
// other rule), for element format `element`.
int mx_rule_exponent(ScaleRule rule, float amax, const Format& element) noexcept;
// E8M0 code of 2^e for e in [-127, 127] (bias 127).
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
