// Scale propagation (the Scalify idea, Graphcore 2024): a tensor is low-precision data times
// one float32 scale, and every operation computes the scale of its result from the scales of
// its inputs by a fixed rule, so that the data stays near unit magnitude without measuring it.
//
// Data are stored as float32 values that are exactly representable in `format` (a decoded
// cast); `codes()` gives the packed storage. Every op computes its result data in float32 (or
// double), then casts them to the output format (round to nearest even, saturating). An op's
// output format defaults to its first operand's; pass `out` to choose (e.g. E5M2 gradients).
//
// p2(x) is x rounded down to a power of two. The rules (docs/quantization.md, "Scale
// propagation"):
//   matmul over K      scale sa*sb*p2(sqrt K), data (Da Db) / p2(sqrt K)
//   sum over n terms   the same rule with K = n (a matmul with a ones vector)
//   add, sub           scale p2(max * sqrt(1 + (min/max)^2)) of the two scales
//   mul                scales multiply; mul_scalar(c) multiplies the scale by p2(|c|)
//   reshape, transpose, slice, row_max, cast, relu, silu, gelu: scale kept
//   exp, log, softmax  unit scale
//   rms_norm           the gain's scale (1 without gain): x / rms(x) does not depend on sx
//   dynamic_rescale    scale * p2(stat(data)), data / p2(stat(data))
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "lowp/formats/format.hpp"

namespace lowp::quant {

struct ScaledTensor {
  Format format;
  std::size_t rows = 0, cols = 0;  // row-major
  std::vector<float> data;         // each exactly representable in `format`
  float scale = 1.0f;              // positive, finite; a power of two unless the user chose otherwise

  std::size_t size() const noexcept { return rows * cols; }
  float value(std::size_t r, std::size_t c) const { return data[r * cols + c] * scale; }
  std::vector<float> values() const;         // scale * data
  std::vector<std::uint8_t> codes() const;   // packed as in lowp/formats/bulk.hpp
};

// lowp::Error naming `op` when data.size() != rows * cols or the scale is not positive and
// finite; every op below checks its operands so.
void check_scaled(const ScaledTensor& t, const char* op);

// p2: the largest power of two <= x, for finite x > 0 (lowp::Error otherwise).
float pow2_floor(double x);
// The matmul rule's divisor p2(sqrt K) for a sum over K terms (K = 0 counts as 1).
float matmul_divisor(std::size_t k);

// data = cast(values / scale) to `format`, nearest even, saturating. lowp::Error on a scale
// that is not positive and finite, or values.size() != rows * cols.
ScaledTensor scaled_cast(std::span<const float> values, std::size_t rows, std::size_t cols,
                         const Format& format, float scale = 1.0f);
// The same from data already divided by the scale: data are cast in place to `format`. The
// scale is given in double so that a rule's product can be range-checked: lowp::Error when it
// is not a positive finite float32.
ScaledTensor scaled_from_data(std::vector<float> data, std::size_t rows, std::size_t cols,
                              const Format& format, double scale);

enum class RescaleStat : std::uint8_t { max, mean_abs, rms };
// The statistic of the finite elements of `x` (max |x|, mean |x|, sqrt(mean x^2)), in double.
double tensor_stat(std::span<const float> x, RescaleStat stat);
// scaled_cast with scale p2(stat(values)) (1 when the statistic is 0 or not finite).
ScaledTensor scaled_auto(std::span<const float> values, std::size_t rows, std::size_t cols,
                         const Format& format, RescaleStat stat = RescaleStat::rms);

// ---- shape ops: the scale is kept, the data are moved exactly.
ScaledTensor reshape(const ScaledTensor& a, std::size_t rows, std::size_t cols);
ScaledTensor transpose(const ScaledTensor& a);
ScaledTensor slice(const ScaledTensor& a, std::size_t row0, std::size_t row1, std::size_t col0,
                   std::size_t col1);  // rows [row0, row1), cols [col0, col1)
ScaledTensor row_max(const ScaledTensor& a);  // rows x 1: the max of each row
ScaledTensor cast(const ScaledTensor& a, const Format& format);

// ---- arithmetic. b broadcasts when it is 1 x cols, rows x 1 or 1 x 1.
ScaledTensor matmul(const ScaledTensor& a, const ScaledTensor& b,
                    std::optional<Format> out = {});  // (M x K)(K x N)
ScaledTensor matmul_nt(const ScaledTensor& a, const ScaledTensor& b,
                       std::optional<Format> out = {});  // (M x K)(N x K)^T, a linear layer
ScaledTensor add(const ScaledTensor& a, const ScaledTensor& b, std::optional<Format> out = {});
ScaledTensor sub(const ScaledTensor& a, const ScaledTensor& b, std::optional<Format> out = {});
ScaledTensor mul(const ScaledTensor& a, const ScaledTensor& b, std::optional<Format> out = {});
ScaledTensor mul_scalar(const ScaledTensor& a, float c, std::optional<Format> out = {});
ScaledTensor sum_rows(const ScaledTensor& a, std::optional<Format> out = {});  // 1 x cols
ScaledTensor sum_cols(const ScaledTensor& a, std::optional<Format> out = {});  // rows x 1

// ---- elementwise functions and their backward passes (dx = dy * f'(x), scale of dy).
ScaledTensor exp(const ScaledTensor& a, std::optional<Format> out = {});
ScaledTensor log(const ScaledTensor& a, std::optional<Format> out = {});
ScaledTensor relu(const ScaledTensor& a);
ScaledTensor silu(const ScaledTensor& a);
ScaledTensor gelu(const ScaledTensor& a);  // the erf form
ScaledTensor relu_backward(const ScaledTensor& x, const ScaledTensor& dy);
ScaledTensor silu_backward(const ScaledTensor& x, const ScaledTensor& dy);
ScaledTensor gelu_backward(const ScaledTensor& x, const ScaledTensor& dy);

// ---- row-wise normalisations, with their own rules (see the top of this file).
ScaledTensor softmax(const ScaledTensor& a, std::optional<Format> out = {});
// dx = y * (dy - sum(dy * y)): scale sy * sdy, format of dy.
ScaledTensor softmax_backward(const ScaledTensor& y, const ScaledTensor& dy);
// y = x / sqrt(mean(x^2) + eps) * gain; gain is 1 x cols (nullptr: none).
ScaledTensor rms_norm(const ScaledTensor& x, const ScaledTensor* gain, float eps = 1e-6f,
                      std::optional<Format> out = {});
struct RmsNormGrads {
  ScaledTensor dx;     // scale sgain * sdy / sx, format of dy
  ScaledTensor dgain;  // sum over rows of dy * x/rms: the sum rule, format of dy (empty without gain)
};
RmsNormGrads rms_norm_backward(const ScaledTensor& x, const ScaledTensor* gain,
                               const ScaledTensor& dy, float eps = 1e-6f);

// ---- explicit rescaling. The value is unchanged up to the cast of data / p2(stat), which
// can only round values that fall into the subnormal range or saturate outliers.
ScaledTensor dynamic_rescale(const ScaledTensor& a, RescaleStat stat);

// A rescaling point in a network: it rescales on one pass and is the identity on the other.
struct DynamicRescale {
  enum class Pass : std::uint8_t { forward, backward };
  RescaleStat stat = RescaleStat::rms;
  Pass pass = Pass::backward;
  ScaledTensor forward(const ScaledTensor& x) const;
  ScaledTensor backward(const ScaledTensor& dy) const;
};

}  // namespace lowp::quant
