// AWQ-style per-input-channel scaling: the alpha grid search of llm-awq's auto_scale on
// linears sharing one input, with the objective measured in double precision (Eigen, serial:
// the same bits at any thread count).
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <string>

#include "group_scale.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/calibrate.hpp"

namespace lowp::quant {
namespace {

using RowMatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// s_j = max(m_j^alpha, 1e-4) / sqrt(max s * min s), as auto_scale (in double, then float32).
std::vector<float> awq_scales(const std::vector<double>& m, double alpha) {
  std::vector<double> s(m.size());
  for (std::size_t j = 0; j < m.size(); ++j) s[j] = std::max(std::pow(m[j], alpha), 1e-4);
  const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  const double norm = std::sqrt(*lo * *hi);
  std::vector<float> r(m.size());
  for (std::size_t j = 0; j < m.size(); ++j) r[j] = static_cast<float>(s[j] / norm);
  return r;
}

// The objective's data: X itself, or G = X^T X when there are more rows than columns, since
// ||X D^T||_F^2 = sum (D G) o D costs N K^2 per alpha instead of n K N.
struct Objective {
  RowMatrixD x, g;
  bool gram = false;
  double of(const RowMatrixD& d) const {
    return gram ? (d * g).cwiseProduct(d).sum() : (x * d.transpose()).squaredNorm();
  }
};

// ||X (W - Q(W diag s) diag(1/s))^T||_F^2 for one linear; q receives Q(W diag s).
double scaled_error(const QuantSpec& spec, const WeightRef& ref, std::size_t k, const std::vector<float>& s,
                    const Objective& obj, QuantizedTensor& q) {
  const std::size_t rows = ref.rows;
  std::vector<float> ws(rows * k), deq(rows * k);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < k; ++j) ws[r * k + j] = ref.w[r * k + j] * s[j];
  q = quantize(spec, ws.data(), rows, k);
  dequantize(q, deq.data());
  RowMatrixD diff(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(k));
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < k; ++j)
      diff.data()[r * k + j] = static_cast<double>(ref.w[r * k + j]) - static_cast<double>(deq[r * k + j] / s[j]);
  return obj.of(diff);
}

}  // namespace

namespace {

// The alpha grid over the scales from m (mean |x_j|), scored by `obj`.
AwqGroupResult search_alpha(const QuantSpec& spec, std::span<const WeightRef> ws, std::size_t k,
                            const std::vector<double>& m, const Objective& obj, const AwqOptions& opt) {
  AwqGroupResult best;
  std::vector<QuantizedTensor> qs(ws.size());
  for (std::size_t i = 0; i < opt.grid; ++i) {
    const double alpha = static_cast<double>(i) / static_cast<double>(opt.grid);
    std::vector<float> s = awq_scales(m, alpha);
    double e = 0;
    for (std::size_t l = 0; l < ws.size(); ++l) e += scaled_error(spec, ws[l], k, s, obj, qs[l]);
    if (i == 0) best.rtn_error = e;
    if (i == 0 || e < best.error) {  // strict: ties keep the smaller alpha (0: RTN)
      best.error = e;
      best.alpha = alpha;
      best.scales = std::move(s);
      best.weights = qs;
    }
  }
  return best;
}

void check_group(const QuantSpec& spec, std::span<const WeightRef> ws, std::size_t cols, const AwqOptions& opt) {
  if (ws.empty()) throw Error("awq: no weights");
  for (const WeightRef& r : ws) {
    check_shape(spec, r.rows, cols);
    calib::check_calibration_input("awq", spec, r.w, r.rows * cols, "weight");
  }
  if (opt.grid == 0) throw Error("awq: a grid of 0 points");
}

}  // namespace

AwqGroupResult awq_group(const QuantSpec& spec, std::span<const WeightRef> ws, std::size_t cols, const float* x,
                         std::size_t n, const AwqOptions& opt) {
  check_group(spec, ws, cols, opt);
  calib::check_finite("awq", x, n * cols, "activation");
  if (n == 0) throw Error("awq: no calibration rows");
  const std::size_t k = cols;
  std::vector<double> m(k, 0.0);  // mean |x_j|, summed in row order
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < k; ++j) m[j] += std::fabs(static_cast<double>(x[r * k + j]));
  for (double& v : m) v /= static_cast<double>(n);
  Objective obj;
  obj.x.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k));
  for (std::size_t i = 0; i < n * k; ++i) obj.x.data()[i] = x[i];
  if (n > k) {
    obj.gram = true;
    obj.g = obj.x.transpose() * obj.x;
    obj.x.resize(0, 0);
  }
  return search_alpha(spec, ws, k, m, obj, opt);
}

AwqGroupResult awq_group_from_stats(const QuantSpec& spec, std::span<const WeightRef> ws, std::size_t cols,
                                    std::span<const double> mean_abs, std::span<const double> gram,
                                    const AwqOptions& opt) {
  check_group(spec, ws, cols, opt);
  if (mean_abs.size() != cols || gram.size() != cols * cols)
    throw Error("awq: statistics of " + std::to_string(mean_abs.size()) + " channels and a Gram matrix of " +
                std::to_string(gram.size()) + " elements for " + std::to_string(cols) + " columns");
  calib::check_finite("awq", mean_abs, "mean |x|");
  calib::check_finite("awq", gram, "Gram matrix");
  Objective obj;
  obj.gram = true;
  obj.g.resize(static_cast<Eigen::Index>(cols), static_cast<Eigen::Index>(cols));
  std::copy(gram.begin(), gram.end(), obj.g.data());
  return search_alpha(spec, ws, cols, std::vector<double>(mean_abs.begin(), mean_abs.end()), obj, opt);
}

AwqResult awq(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols, const float* x,
              std::size_t n, const AwqOptions& opt) {
  const WeightRef ref{w, rows};
  AwqGroupResult g = awq_group(spec, {&ref, 1}, cols, x, n, opt);
  AwqResult r;
  r.scales = std::move(g.scales);
  r.alpha = g.alpha;
  r.error = g.error;
  r.rtn_error = g.rtn_error;
  r.weight = std::move(g.weights[0]);
  return r;
}

}  // namespace lowp::quant
