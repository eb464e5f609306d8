// Internal to calibration: one group's scale as the spec's rule stores it, the candidates the
// weighted search tries, and packing chosen scales and code-domain values into a
// QuantizedTensor that lowp's dequantize decodes to the same values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "../quantize/quantize_grid.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/quant/quantize.hpp"

namespace lowp::quant::calib {

// A group's scale: the stored fields and the operands of y = x op_q q (code domain) and
// value = cast(y) op_d d, with the operators of lowp's quantize for the rule (SpecOps).
struct ScaleChoice {
  float scale = 1;        // QuantizedTensor::scales
  float multiplier = 0;   // QuantizedTensor::multipliers (multiplier rules)
  std::uint8_t code = 0;  // QuantizedTensor::scale_codes (E8M0 / UE4M3)
  float q = 1, d = 1;
};

struct SpecOps {
  bool identity = false;  // rule none
  bool q_mul = true;      // x * q, else x / q (NVFP4)
  bool d_mul = true;      // v * d, else v / d (multiplier rules)
  float to_code(float x, const ScaleChoice& c) const { return identity ? x : q_mul ? x * c.q : x / c.q; }
  float from_code(float v, const ScaleChoice& c) const { return identity ? v : d_mul ? v * c.d : v / c.d; }
};
SpecOps spec_ops(const QuantSpec& spec);

// The spec's cast (saturating for every scaled rule, as quantize does).
BulkOptions cast_options(const QuantSpec& spec);

// Throws lowp::Error for NaN / Inf in p[0..n) (`what` names it).
void check_finite(const char* fn, const float* p, std::size_t n, const char* what);
void check_finite(const char* fn, std::span<const double> p, const char* what);
// The same, and for an invalid format or stochastic rounding in the spec.
void check_calibration_input(const char* fn, const QuantSpec& spec, const float* p, std::size_t n,
                             const char* what);

// NVFP4's float32 tensor scale of w; Four Over Six: w's amax, from which both of its levels
// follow (assemble stores its tensor scale); 1 for the other rules.
float tensor_scale_of(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols);

// The rule's own choice for a group of elements x[0..n) (finite).
ScaleChoice rule_choice(const QuantSpec& spec, float tensor_scale, const float* x, std::size_t n);
// The weighted search's candidates (calibrate.hpp lists them); [0] is rule_choice.
std::vector<ScaleChoice> candidates(const QuantSpec& spec, float tensor_scale, const float* x, std::size_t n);

// Every group's scale: the rule's own (imp null) or the one minimising
// sum_j imp[col j] (w_j - q_j)^2 among candidates(); ties keep the rule's.
std::vector<ScaleChoice> choose_scales(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols,
                                       const float* imp, float tensor_scale);

// The elements of group gi of w, gathered row by row, with their column indices.
void gather_group(const detail::Grid& g, const float* w, std::size_t gi, std::vector<float>& v,
                  std::vector<std::size_t>& col);
// Group index of element (r, c).
inline std::size_t group_of(const detail::Grid& g, std::size_t r, std::size_t c) {
  return (r / g.rh) * g.ngc + c / g.cw;
}

// The tensor with these group scales and the code-domain values y (rows x cols), encoded with
// the spec's cast: dequantize gives from_code(cast(y)).
QuantizedTensor assemble(const QuantSpec& spec, std::size_t rows, std::size_t cols,
                         const std::vector<ScaleChoice>& choice, float tensor_scale, const float* y);

}  // namespace lowp::quant::calib
