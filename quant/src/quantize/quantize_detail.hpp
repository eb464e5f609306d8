// Internal: quantization with a scale fixed by the caller (delayed scaling).
#pragma once
#include <cstddef>

#include "lowp/quant/quantize.hpp"

namespace lowp::quant::detail {

// Per-tensor quantization with the given multiplier s (codes = cast(x * s), value code / s):
// `spec` must be per tensor with a multiplier rule (amax, amax_pow2, absmax_int).
// `amax` receives the finite amax of x, measured in the same pass.
QuantizedTensor quantize_with_multiplier(const QuantSpec& spec, const float* x, std::size_t rows,
                                         std::size_t cols, float s, float& amax);
FakeQuantReport fake_quant_with_multiplier(const QuantSpec& spec, float* x, std::size_t rows,
                                           std::size_t cols, float s, float& amax);

}  // namespace lowp::quant::detail
