// Internal: quantization with a scale fixed by the caller (delayed scaling), and dequantize()'s
// per-group arithmetic for readers of the codes (PackedWeight).
#pragma once
#include <cstddef>
#include <vector>

#include "lowp/quant/quantize.hpp"

namespace lowp::quant::detail {

// Per-tensor quantization with the given multiplier s (codes = cast(x * s), value code / s):
// `spec` must be per tensor with a multiplier rule (amax, amax_pow2, absmax_int).
// `amax` receives the finite amax of x, measured in the same pass.
QuantizedTensor quantize_with_multiplier(const QuantSpec& spec, const float* x, std::size_t rows,
                                         std::size_t cols, float s, float& amax);
FakeQuantReport fake_quant_with_multiplier(const QuantSpec& spec, float* x, std::size_t rows,
                                           std::size_t cols, float s, float& amax);

// fake_quant of x^T under a 1-D block spec, left in x's layout: out (rows x cols) =
// fake_quant(spec, x^T)^T bitwise, its groups spec.block rows of one column (no transpose).
// Only for the specs column_blocks_fit() accepts: no stochastic rounding (its random bits
// follow the flat position) and a rule that sees only each group's amax (or the tensor's).
bool column_blocks_fit(const QuantSpec& spec);
FakeQuantReport fake_quant_column_blocks(const QuantSpec& spec, const float* x, float* out, std::size_t rows,
                                         std::size_t cols);

// dequantize()'s arithmetic, group by group: element (r, c) of q is decode(code) * d[g] when
// `mul`, else decode(code) / d[g], for g = (r / rh) * ngc + c / cw; d is empty when the rule is
// none (the value is decode(code)).
struct DequantOps {
  std::size_t rh = 1, cw = 1, ngc = 1;
  std::vector<float> d;
  bool mul = true;
};
DequantOps dequant_ops(const QuantizedTensor& q);

}  // namespace lowp::quant::detail
