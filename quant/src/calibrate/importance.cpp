// The importance matrix (llama.cpp's mean of x_j^2) and the importance-weighted scale search.
#include <cmath>
#include <string>

#include "group_scale.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/calibrate.hpp"

namespace lowp::quant {
namespace calib {

std::vector<ScaleChoice> choose_scales(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols,
                                       const float* imp, float tensor_scale) {
  const detail::Grid g = detail::make_grid(spec, rows, cols);
  const SpecOps ops = spec_ops(spec);
  const BulkOptions cast = cast_options(spec);
  std::vector<ScaleChoice> choice(g.count());
#pragma omp parallel if (rows * cols >= (std::size_t{1} << 16))
  {
    std::vector<float> v, t;
    std::vector<std::size_t> col;
#pragma omp for schedule(dynamic, 16)
    for (std::size_t gi = 0; gi < g.count(); ++gi) {
      gather_group(g, w, gi, v, col);
      if (imp == nullptr) {
        choice[gi] = rule_choice(spec, tensor_scale, v.data(), v.size());
        continue;
      }
      const std::vector<ScaleChoice> cand = candidates(spec, tensor_scale, v.data(), v.size());
      double best = 0;
      std::size_t best_i = 0;
      t.resize(v.size());
      for (std::size_t i = 0; i < cand.size(); ++i) {
        for (std::size_t j = 0; j < v.size(); ++j) t[j] = ops.to_code(v[j], cand[i]);
        fake_quant_f32(spec.format, t, cast);
        double err = 0;
        for (std::size_t j = 0; j < v.size(); ++j) {
          const double e = static_cast<double>(v[j]) - static_cast<double>(ops.from_code(t[j], cand[i]));
          err += static_cast<double>(imp[col[j]]) * e * e;
        }
        if (i == 0 || err < best) {  // strict: ties keep the rule's own scale
          best = err;
          best_i = i;
        }
      }
      choice[gi] = cand[best_i];
    }
  }
  return choice;
}

}  // namespace calib

std::vector<float> importance(const float* x, std::size_t n, std::size_t k) {
  calib::check_finite("importance", x, n * k, "activation");
  if (n == 0) throw Error("importance: no calibration rows");
  std::vector<double> sum(k, 0.0);
  // Column sums in row order: the same bits at any thread count.
  const std::size_t chunk = 256, nchunks = (k + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (n * k >= (std::size_t{1} << 18))
  for (std::size_t ci = 0; ci < nchunks; ++ci) {
    const std::size_t c0 = ci * chunk, c1 = std::min(k, c0 + chunk);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t c = c0; c < c1; ++c) {
        const double v = x[r * k + c];
        sum[c] += v * v;
      }
  }
  std::vector<float> imp(k);
  for (std::size_t c = 0; c < k; ++c) imp[c] = static_cast<float>(sum[c] / static_cast<double>(n));
  return imp;
}

QuantizedTensor quantize_weighted(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols,
                                  std::span<const float> imp) {
  check_shape(spec, rows, cols);
  calib::check_calibration_input("quantize_weighted", spec, w, rows * cols, "weight");
  if (imp.size() != cols)
    throw Error("quantize_weighted: " + std::to_string(imp.size()) + " importances for " + std::to_string(cols) +
                " columns");
  for (std::size_t c = 0; c < cols; ++c)
    if (!(imp[c] >= 0) || !std::isfinite(imp[c]))
      throw Error("quantize_weighted: importance " + std::to_string(c) + " is " + std::to_string(imp[c]) +
                  " (need finite and >= 0)");
  const detail::Grid g = detail::make_grid(spec, rows, cols);
  const calib::SpecOps ops = calib::spec_ops(spec);
  const float ts = calib::tensor_scale_of(spec, w, rows, cols);
  const std::vector<calib::ScaleChoice> choice = calib::choose_scales(spec, w, rows, cols, imp.data(), ts);
  std::vector<float> y(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      y[r * cols + c] = ops.to_code(w[r * cols + c], choice[calib::group_of(g, r, c)]);
  return calib::assemble(spec, rows, cols, choice, ts, y.data());
}

}  // namespace lowp::quant
