// ScaledTensor: construction, casts, shape ops and dynamic rescaling.
#include <algorithm>
#include <cmath>
#include <string>

#include "lowp/formats/bulk.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/scaled_tensor.hpp"

namespace lowp::quant {

namespace {

std::string shape(const ScaledTensor& a) { return std::to_string(a.rows) + "x" + std::to_string(a.cols); }

// Every op casts with the same options: nearest even, saturating (the scale is meant to keep
// the data in range; saturation only clips the rare outlier instead of producing NaN).
void cast_in_place(const Format& f, std::vector<float>& data) {
  BulkOptions opt;
  opt.cast.saturate = true;
  fake_quant_f32(f, data, opt);
}

}  // namespace

std::vector<float> ScaledTensor::values() const {
  std::vector<float> v(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) v[i] = data[i] * scale;
  return v;
}

std::vector<std::uint8_t> ScaledTensor::codes() const {
  std::vector<std::uint8_t> out(encoded_bytes(format, data.size()));
  BulkOptions opt;
  opt.cast.saturate = true;
  encode_f32(format, data, out, opt);
  return out;
}

void check_scaled(const ScaledTensor& t, const char* op) {
  if (t.data.size() != t.rows * t.cols)
    throw Error(std::string(op) + ": tensor " + shape(t) + " holds " + std::to_string(t.data.size()) + " elements");
  if (!(t.scale > 0) || !std::isfinite(t.scale))
    throw Error(std::string(op) + ": scale " + std::to_string(t.scale) + " is not a positive finite float32");
}

// A sum of K unit-scale terms of random sign has RMS sqrt K, so dividing by p2(sqrt K) keeps
// the data near unit scale.
float matmul_divisor(std::size_t k) { return pow2_floor(std::sqrt(static_cast<double>(k > 0 ? k : 1))); }

float pow2_floor(double x) {
  if (!(x > 0) || !std::isfinite(x))
    throw Error("pow2_floor: " + std::to_string(x) + " is not a positive finite number");
  int e = 0;
  std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1)
  const float p = std::ldexp(1.0f, e - 1);
  if (!(p > 0) || !std::isfinite(p))
    throw Error("pow2_floor: " + std::to_string(x) + " has no power of two in float32 range");
  return p;
}

ScaledTensor scaled_from_data(std::vector<float> data, std::size_t rows, std::size_t cols,
                              const Format& format, double scale) {
  const float s = static_cast<float>(scale);
  if (!(s > 0) || !std::isfinite(s))
    throw Error("scaled tensor: scale " + std::to_string(scale) + " is not a positive finite float32");
  if (data.size() != rows * cols)
    throw Error("scaled tensor: " + std::to_string(data.size()) + " elements for shape " +
                std::to_string(rows) + "x" + std::to_string(cols));
  cast_in_place(format, data);
  return ScaledTensor{format, rows, cols, std::move(data), s};
}

ScaledTensor scaled_cast(std::span<const float> values, std::size_t rows, std::size_t cols,
                         const Format& format, float scale) {
  if (!(scale > 0) || !std::isfinite(scale))
    throw Error("scaled_cast: scale " + std::to_string(scale) + " is not a positive finite float32");
  std::vector<float> d(values.begin(), values.end());
  for (float& x : d) x /= scale;
  return scaled_from_data(std::move(d), rows, cols, format, scale);
}

double tensor_stat(std::span<const float> x, RescaleStat stat) {
  double acc = 0;
  std::size_t n = 0;
  for (float f : x) {
    if (!std::isfinite(f)) continue;
    const double a = std::fabs(static_cast<double>(f));
    if (stat == RescaleStat::max)
      acc = std::max(acc, a);
    else
      acc += stat == RescaleStat::rms ? a * a : a;
    ++n;
  }
  if (stat == RescaleStat::max || n == 0) return acc;
  acc /= static_cast<double>(n);
  return stat == RescaleStat::rms ? std::sqrt(acc) : acc;
}

ScaledTensor scaled_auto(std::span<const float> values, std::size_t rows, std::size_t cols,
                         const Format& format, RescaleStat stat) {
  const double m = tensor_stat(values, stat);
  return scaled_cast(values, rows, cols, format, m > 0 && std::isfinite(m) ? pow2_floor(m) : 1.0f);
}

ScaledTensor reshape(const ScaledTensor& a, std::size_t rows, std::size_t cols) {
  check_scaled(a, "reshape");
  if (rows * cols != a.size())
    throw Error("reshape: " + shape(a) + " cannot become " + std::to_string(rows) + "x" + std::to_string(cols));
  ScaledTensor r = a;
  r.rows = rows;
  r.cols = cols;
  return r;
}

ScaledTensor transpose(const ScaledTensor& a) {
  check_scaled(a, "transpose");
  ScaledTensor r{a.format, a.cols, a.rows, std::vector<float>(a.size()), a.scale};
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < a.cols; ++j) r.data[j * a.rows + i] = a.data[i * a.cols + j];
  return r;
}

ScaledTensor slice(const ScaledTensor& a, std::size_t row0, std::size_t row1, std::size_t col0,
                   std::size_t col1) {
  check_scaled(a, "slice");
  if (row0 > row1 || row1 > a.rows || col0 > col1 || col1 > a.cols)
    throw Error("slice: rows [" + std::to_string(row0) + ", " + std::to_string(row1) + ") cols [" +
                std::to_string(col0) + ", " + std::to_string(col1) + ") outside " + shape(a));
  ScaledTensor r{a.format, row1 - row0, col1 - col0, {}, a.scale};
  r.data.reserve(r.size());
  for (std::size_t i = row0; i < row1; ++i)
    r.data.insert(r.data.end(), a.data.begin() + static_cast<std::ptrdiff_t>(i * a.cols + col0),
                  a.data.begin() + static_cast<std::ptrdiff_t>(i * a.cols + col1));
  return r;
}

ScaledTensor row_max(const ScaledTensor& a) {
  check_scaled(a, "row_max");
  if (a.cols == 0) throw Error("row_max: no columns in " + shape(a));
  ScaledTensor r{a.format, a.rows, 1, std::vector<float>(a.rows), a.scale};
  for (std::size_t i = 0; i < a.rows; ++i) {
    float m = a.data[i * a.cols];
    for (std::size_t j = 1; j < a.cols; ++j) m = std::fmax(m, a.data[i * a.cols + j]);
    r.data[i] = m;
  }
  return r;
}

ScaledTensor cast(const ScaledTensor& a, const Format& format) {
  check_scaled(a, "cast");
  return scaled_from_data(a.data, a.rows, a.cols, format, a.scale);
}

ScaledTensor dynamic_rescale(const ScaledTensor& a, RescaleStat stat) {
  check_scaled(a, "dynamic_rescale");
  const double m = tensor_stat(a.data, stat);
  if (!(m > 0) || !std::isfinite(m)) return a;  // nothing to measure: keep the scale
  const float p = pow2_floor(m);
  std::vector<float> d = a.data;
  for (float& x : d) x /= p;  // exact: a power of two, away from float32's limits
  return scaled_from_data(std::move(d), a.rows, a.cols, a.format, static_cast<double>(a.scale) * p);
}

ScaledTensor DynamicRescale::forward(const ScaledTensor& x) const {
  check_scaled(x, "DynamicRescale.forward");
  return pass == Pass::forward ? dynamic_rescale(x, stat) : x;
}

ScaledTensor DynamicRescale::backward(const ScaledTensor& dy) const {
  check_scaled(dy, "DynamicRescale.backward");
  return pass == Pass::backward ? dynamic_rescale(dy, stat) : dy;
}

}  // namespace lowp::quant
