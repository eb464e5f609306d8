// Scale propagation through elementwise functions, softmax and RMSNorm (forward and backward).
// Values are evaluated in double from scale * data, then divided by the result's scale and cast.
#include <algorithm>
#include <cmath>
#include <string>

#include "lowp/numerics/error.hpp"
#include "lowp/quant/scaled_tensor.hpp"

namespace lowp::quant {

namespace {

std::string shape(const ScaledTensor& a) { return std::to_string(a.rows) + "x" + std::to_string(a.cols); }

void same_shape(const ScaledTensor& a, const ScaledTensor& b, const char* op) {
  if (a.rows != b.rows || a.cols != b.cols)
    throw Error(std::string(op) + ": shapes differ (" + shape(a) + " and " + shape(b) + ")");
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
constexpr double inv_sqrt_2pi = 0.3989422804014327;

// out data_i = f(s * d_i, d_i), at scale `scale`.
template <class F>
ScaledTensor map(const ScaledTensor& a, const Format& fmt, double scale, F f) {
  std::vector<float> d(a.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>(f(static_cast<double>(a.scale) * a.data[i], a.data[i]));
  return scaled_from_data(std::move(d), a.rows, a.cols, fmt, scale);
}

// dx = dy * g(x): the scale of dy, the format of dy.
template <class G>
ScaledTensor backward_map(const ScaledTensor& x, const ScaledTensor& dy, const char* op, G g) {
  same_shape(x, dy, op);
  std::vector<float> d(x.size());
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<float>(dy.data[i] * g(static_cast<double>(x.scale) * x.data[i]));
  return scaled_from_data(std::move(d), x.rows, x.cols, dy.format, dy.scale);
}

double rms_denominator(const float* row, std::size_t n, double scale, float eps) {
  double ss = 0;
  for (std::size_t j = 0; j < n; ++j) ss += static_cast<double>(row[j]) * row[j];
  // rms(s d) = s rms(d): eps is moved into data units so the result does not depend on s.
  return std::sqrt(ss / static_cast<double>(n) + eps / (scale * scale));
}

void check_gain(const ScaledTensor& x, const ScaledTensor* gain, const char* op) {
  if (gain && (gain->rows != 1 || gain->cols != x.cols))
    throw Error(std::string(op) + ": gain " + shape(*gain) + " is not 1x" + std::to_string(x.cols));
  if (x.cols == 0) throw Error(std::string(op) + ": no columns in " + shape(x));
}

}  // namespace

ScaledTensor exp(const ScaledTensor& a, std::optional<Format> out) {
  check_scaled(a, "exp");
  return map(a, out.value_or(a.format), 1.0, [](double v, double) { return std::exp(v); });
}

ScaledTensor log(const ScaledTensor& a, std::optional<Format> out) {
  check_scaled(a, "log");
  return map(a, out.value_or(a.format), 1.0, [](double v, double) { return std::log(v); });
}

// f(s d) / s = d * gate(s d) for these three, computed so, without dividing by s.
ScaledTensor relu(const ScaledTensor& a) {
  check_scaled(a, "relu");
  return map(a, a.format, a.scale, [](double, double d) { return d > 0 ? d : 0.0; });
}

ScaledTensor silu(const ScaledTensor& a) {
  check_scaled(a, "silu");
  return map(a, a.format, a.scale, [](double v, double d) { return d * sigmoid(v); });
}

ScaledTensor gelu(const ScaledTensor& a) {
  check_scaled(a, "gelu");
  return map(a, a.format, a.scale, [](double v, double d) { return d * normal_cdf(v); });
}

ScaledTensor relu_backward(const ScaledTensor& x, const ScaledTensor& dy) {
  check_scaled(x, "relu_backward");
  check_scaled(dy, "relu_backward");
  return backward_map(x, dy, "relu_backward", [](double v) { return v > 0 ? 1.0 : 0.0; });
}

ScaledTensor silu_backward(const ScaledTensor& x, const ScaledTensor& dy) {
  check_scaled(x, "silu_backward");
  check_scaled(dy, "silu_backward");
  return backward_map(x, dy, "silu_backward", [](double v) {
    const double s = sigmoid(v);
    return s * (1 + v * (1 - s));
  });
}

ScaledTensor gelu_backward(const ScaledTensor& x, const ScaledTensor& dy) {
  check_scaled(x, "gelu_backward");
  check_scaled(dy, "gelu_backward");
  return backward_map(x, dy, "gelu_backward", [](double v) {
    return normal_cdf(v) + v * inv_sqrt_2pi * std::exp(-0.5 * v * v);
  });
}

ScaledTensor softmax(const ScaledTensor& a, std::optional<Format> out) {
  check_scaled(a, "softmax");
  if (a.cols == 0) throw Error("softmax: no columns in " + shape(a));
  std::vector<float> r(a.size());
  std::vector<double> e(a.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    const float* row = &a.data[i * a.cols];
    const double m = *std::max_element(row, row + a.cols);
    double sum = 0;
    for (std::size_t j = 0; j < a.cols; ++j) sum += e[j] = std::exp(a.scale * (row[j] - m));
    for (std::size_t j = 0; j < a.cols; ++j) r[i * a.cols + j] = static_cast<float>(e[j] / sum);
  }
  return scaled_from_data(std::move(r), a.rows, a.cols, out.value_or(a.format), 1.0);
}

ScaledTensor softmax_backward(const ScaledTensor& y, const ScaledTensor& dy) {
  check_scaled(y, "softmax_backward");
  check_scaled(dy, "softmax_backward");
  same_shape(y, dy, "softmax_backward");
  // y = sy a, dy = sg g: dx = sy sg * a (g - sy sum(g a)).
  std::vector<float> r(y.size());
  for (std::size_t i = 0; i < y.rows; ++i) {
    const std::size_t o = i * y.cols;
    double dot = 0;
    for (std::size_t j = 0; j < y.cols; ++j) dot += static_cast<double>(dy.data[o + j]) * y.data[o + j];
    for (std::size_t j = 0; j < y.cols; ++j)
      r[o + j] = static_cast<float>(y.data[o + j] * (dy.data[o + j] - y.scale * dot));
  }
  return scaled_from_data(std::move(r), y.rows, y.cols, dy.format, static_cast<double>(y.scale) * dy.scale);
}

ScaledTensor rms_norm(const ScaledTensor& x, const ScaledTensor* gain, float eps, std::optional<Format> out) {
  check_scaled(x, "rms_norm");
  if (gain) check_scaled(*gain, "rms_norm");
  check_gain(x, gain, "rms_norm");
  std::vector<float> r(x.size());
  for (std::size_t i = 0; i < x.rows; ++i) {
    const float* row = &x.data[i * x.cols];
    const double rho = rms_denominator(row, x.cols, x.scale, eps);
    for (std::size_t j = 0; j < x.cols; ++j)
      r[i * x.cols + j] = static_cast<float>(row[j] / rho * (gain ? gain->data[j] : 1.0f));
  }
  return scaled_from_data(std::move(r), x.rows, x.cols, out.value_or(x.format), gain ? gain->scale : 1.0f);
}

RmsNormGrads rms_norm_backward(const ScaledTensor& x, const ScaledTensor* gain, const ScaledTensor& dy, float eps) {
  check_scaled(x, "rms_norm_backward");
  if (gain) check_scaled(*gain, "rms_norm_backward");
  check_scaled(dy, "rms_norm_backward");
  check_gain(x, gain, "rms_norm_backward");
  same_shape(x, dy, "rms_norm_backward");
  // x = sx a, rms(x) = sx rho, xhat = a / rho; gain = sg b, dy = sd c.
  // dx = (sg sd / sx) (b c - xhat mean(b c xhat)) / rho; dgain = sd sum_rows(c xhat).
  const std::size_t n = x.cols;
  std::vector<float> dx(x.size());
  std::vector<double> dg(n, 0.0);
  std::vector<double> xhat(n);
  for (std::size_t i = 0; i < x.rows; ++i) {
    const std::size_t o = i * n;
    const double rho = rms_denominator(&x.data[o], n, x.scale, eps);
    double mean = 0;
    for (std::size_t j = 0; j < n; ++j) {
      xhat[j] = x.data[o + j] / rho;
      mean += (gain ? gain->data[j] : 1.0) * dy.data[o + j] * xhat[j];
      dg[j] += dy.data[o + j] * xhat[j];
    }
    mean /= static_cast<double>(n);
    for (std::size_t j = 0; j < n; ++j)
      dx[o + j] = static_cast<float>(((gain ? gain->data[j] : 1.0) * dy.data[o + j] - xhat[j] * mean) / rho);
  }
  const double sg = gain ? gain->scale : 1.0;
  RmsNormGrads g{scaled_from_data(std::move(dx), x.rows, n, dy.format, sg * dy.scale / x.scale), {}};
  if (gain) {
    const float d = matmul_divisor(x.rows);  // dgain sums over the rows
    std::vector<float> r(n);
    for (std::size_t j = 0; j < n; ++j) r[j] = static_cast<float>(dg[j] / d);
    g.dgain = scaled_from_data(std::move(r), 1, n, dy.format, static_cast<double>(dy.scale) * d);
  }
  return g;
}

}  // namespace lowp::quant
