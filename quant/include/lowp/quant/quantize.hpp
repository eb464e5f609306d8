// Quantizing a 2-D float32 tensor with scales: the granularity, the scale rule, the codes.
//
// Tensors are row-major `rows` x `cols`, contiguous. The reduction dimension of a GEMM is the
// last one (cols): X is M x K and W is N x K for Y = X W^T, so a `row` scale is per token
// for X and per output channel for W, and 1-D blocks run along K.
//
// A scale here is always the *dequantization* multiplier: x ~= decode(code) * scale.
// Each group g of elements gets scale[g]; NVFP4 multiplies in a second, per-tensor float32
// level: x ~= decode(code) * scale[g] * tensor_scale.
// The rules' formulas, and what NaN / Inf / all-zero groups do: lowp/quant/scale_rules.hpp
// and docs/quantization.md ("Scaling"). Delayed scaling: lowp/quant/delayed_scaling.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "lowp/formats/codec.hpp"
#include "lowp/formats/format.hpp"

namespace lowp::quant {

enum class Granularity : std::uint8_t {
  tensor,  // one scale
  row,     // one per row (per token for activations, per output channel for W[N x K])
  column,  // one per column
  block,   // 1 x `block` along each row (the reduction dimension): MX, NVFP4, DeepSeek 1x128
  tile,    // `block` x `block` 2-D tiles (DeepSeek-V3's 128 x 128 weights)
};

enum class ScaleRule : std::uint8_t {
  none,       // scale 1: the format's own range (bf16, fp16, unscaled casts)
  amax,       // current scaling: quant multiplier s = fmt_max / amax in float32, scale = 1 / s
  amax_pow2,  // the same with s rounded down to a power of two
  absmax_int, // integers: s = int_max / amax (127 / absmax for int8), as SwitchBack/LLM.int8()
  mx,         // MX FLOOR (OCP): E8M0 scale 2^(floor(log2 amax) - emax_elem); elements saturate
  mx_ceil,    // MX CEIL: 2^(ceil(log2 amax) - emax_elem)
  mx_even,    // MX EVEN: FLOOR of amax rounded to the element's mantissa width
  mx_rceil,   // MX RCEIL (cuBLAS / TransformerEngine cvt.rp): amax * (1 / fmt_max) rounded up to a power of two
  nvfp4,      // two levels: float32 tensor scale amax / (448 * 6), UE4M3 scale per 16-block
  mse,        // weights: per group, the clip ratio that minimises the squared error
  // E8M0 rules named after the stack whose arithmetic they reproduce (scale_rules.hpp):
  mx_torchao_log2,  // torchao's eager RCEIL before Aug 2026: ceil(float32 log2(amax * (1 / max)))
  mx_te_mxfp4,      // TransformerEngine's MXFP4 reference: ceil(float32 log2(amax / max)), NaN blocks
  mx_gfloat,        // gfloat round_float(ocp_e8m0, amax / max), ties to even code, underflow 2^-127
  mx_mlx,           // MLX: round(float32 log2(amax / max)), ties away
  mx_aiter,         // ROCm aiter RoundUp: float32 exponent field of amax * (1 / max), bumped
  nvfp4_4over6,     // Four Over Six: NVFP4 with each 16-block scaled to 6 or to 4 (smaller error)
};

struct QuantSpec {
  Format format;                         // element format
  Granularity granularity = Granularity::tensor;
  std::size_t block = 0;                 // block / tile edge (block, tile)
  ScaleRule rule = ScaleRule::amax;
  CastOptions cast{};                    // rounding (stochastic included), saturate, flush
  std::uint64_t seed = 0;                // stochastic rounding
  bool pad = false;                      // allow shapes the block does not divide (zero padding)
};

// Text spelling of a spec, used by recipes and the CLI:
//   <format>[:<granularity>][:<rule>][:<round>][:sat]
//   granularity: tensor | row | col | b<N> (1-D block) | t<N> (tile); rule: none, amax, pow2,
//   int, mx (= floor), floor, ceil, even, rceil, nvfp4, mse, and the stacks' rules torchao-log2,
//   te-mxfp4, gfloat, mlx, aiter, 4over6 (scale_rules.hpp); round: nearest, away, zero, up, down,
//   stochastic, odd.
// Presets: "mxfp8" = e4m3:b32:floor, "mxfp6" = e2m3:b32:mx, "mxfp4" = e2m1:b32:mx,
// "nvfp4" = e2m1:b16:nvfp4, and every format name alone (per-tensor amax, or none for
// 16-bit and wider floats: bf16, fp16, tf32 are plain casts).
// Throws lowp::Error naming the text on anything unknown.
QuantSpec parse_quant_spec(std::string_view text);
std::string describe(const QuantSpec& spec);
// The spec spelling of a rule (its first one: mx, not floor).
std::string_view rule_name(ScaleRule rule);

// Throws lowp::Error (one line, naming the shape and block) when the shape does not fit the
// granularity and padding was not asked for, or when rows * cols == 0 is not allowed.
void check_shape(const QuantSpec& spec, std::size_t rows, std::size_t cols);

struct QuantizedTensor {
  QuantSpec spec;
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint8_t> codes;     // packed as in lowp/formats/bulk.hpp, row-major
  std::vector<float> scales;           // dequantization multiplier per group, row-major groups
  std::vector<std::uint8_t> scale_codes;  // the E8M0 / UE4M3 codes of `scales`, when stored so
  float tensor_scale = 1.0f;           // second level (NVFP4); 1 otherwise
  // Rules amax, amax_pow2, absmax_int, mse (torchao's arithmetic): the quantization
  // multiplier s per group, codes = cast(x * s); dequantize computes code / s, and
  // scales[g] = 1 / s rounded to float32 is for callers that multiply. Empty for the other
  // rules (and in tensors built without it), whose value is code * scales[g]
  // (NVFP4: code * (tensor_scale * scales[g]), the product in float32).
  std::vector<float> multipliers;
  std::size_t nan_inputs = 0, inf_inputs = 0;

  // Storage bits per element, scales included (E8M0 per 32: 8 + 8/32 = 8.25 for MXFP8).
  double bits_per_element() const;
};

QuantizedTensor quantize(const QuantSpec& spec, const float* x, std::size_t rows, std::size_t cols);
void dequantize(const QuantizedTensor& q, float* out);
// x <- dequantize(quantize(x)), in place, without materialising the codes when possible.
// Returns the NaN/Inf input counts.
struct FakeQuantReport {
  std::size_t nan_inputs = 0, inf_inputs = 0;
};
FakeQuantReport fake_quant(const QuantSpec& spec, float* x, std::size_t rows, std::size_t cols);
// out <- dequantize(quantize(x)): the same bits as copying x to out and fake_quant(out), in one
// pass less. out may be x; otherwise the two must not overlap.
FakeQuantReport fake_quant(const QuantSpec& spec, const float* x, float* out, std::size_t rows, std::size_t cols);
// Static scaling (deployed FP8 / NVFP4 inference: scales calibrated once): fake_quant with the
// tensor-level scale computed by the rule from `amax`, a calibrated bound on |x|, instead of
// from x's own amax. That is the one scale of a per-tensor spec, or NVFP4's float32 tensor
// scale (its block scales stay x's own). Elements beyond amax saturate, as under every scaled
// rule. Throws lowp::Error when !has_tensor_scale(spec) or amax is negative or not finite.
// has_tensor_scale: per-tensor granularity with a rule other than none and mse, or an NVFP4 rule.
bool has_tensor_scale(const QuantSpec& spec) noexcept;
FakeQuantReport fake_quant_static(const QuantSpec& spec, float* x, std::size_t rows, std::size_t cols, float amax);
// Bits per element of `spec` on a rows x cols tensor, scales included.
double bits_per_element(const QuantSpec& spec, std::size_t rows, std::size_t cols);

}  // namespace lowp::quant
