// GPTQ with the spec's block scales fixed from the original weights (MR-GPTQ's choice).
//
// Layout: the weight is held transposed (K x N), so that a column of W, the unit GPTQ
// quantizes, is one contiguous row, and the lazy update of the columns after a block is one
// float32 GEMM (lowp's gemm_f32, whose bits depend on neither the ISA nor the thread count).
// Eigen runs serially here (EIGEN_DONT_PARALLELIZE): its blocking then never depends on threads.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "gptq_factor.hpp"
#include "group_scale.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/calibrate.hpp"
#include "lowp/quant/gemm.hpp"

namespace lowp::quant {
namespace calib {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::vector<float> inverse_upper_cholesky(std::vector<float> h, std::size_t k) {
  // H = J A J with J the reversal and A = L L^T (lower Cholesky); then H = (J L J)(J L J)^T
  // with J L J upper, so H^-1 = U^T U for U = (J L J)^-1 = J L^-1 J, upper with a positive
  // diagonal: the unique upper Cholesky factor of H^-1 (GPTQ's cholesky(inverse(H), upper)),
  // for one factorisation and one triangular inverse. J M J of a row-major k x k matrix is its
  // flat array reversed.
  std::reverse(h.begin(), h.end());
  const auto kk = static_cast<Eigen::Index>(k);
  Eigen::Map<RowMatrix> a(h.data(), kk, kk);
  Eigen::LLT<Eigen::Ref<RowMatrix>> llt(a);
  if (llt.info() != Eigen::Success)
    throw Error("gptq: the damped Hessian is not positive definite (raise the damping)");
  a.triangularView<Eigen::StrictlyUpper>().setZero();
  // L^-1, one panel of columns at a time: panel [c0, c1) of L^-1 is zero above row c0 and
  // solves the trailing triangle only (k^3 / 3 multiply-adds in all).
  RowMatrix inv = RowMatrix::Zero(kk, kk);
  const Eigen::Index panel = 128;
  for (Eigen::Index c0 = 0; c0 < kk; c0 += panel) {
    const Eigen::Index w = std::min(panel, kk - c0), m = kk - c0;
    auto x = inv.block(c0, c0, m, w);
    for (Eigen::Index i = 0; i < w; ++i) x(i, i) = 1.0f;
    a.bottomRightCorner(m, m).triangularView<Eigen::Lower>().solveInPlace(x);
  }
  std::vector<float> u(inv.data(), inv.data() + k * k);
  std::reverse(u.begin(), u.end());
  return u;
}

}  // namespace calib

std::vector<float> gptq_hessian(const float* x, std::size_t n, std::size_t k) {
  calib::check_calibration_input("gptq", QuantSpec{}, x, n * k, "activation");
  if (n == 0 || k == 0) throw Error("gptq: no calibration rows or no columns");
  std::vector<float> h(k * k);
  gemm_f32(x, Layout::transposed, x, Layout::transposed, h.data(), k, k, n);
  const double f = 2.0 / static_cast<double>(n);
  for (float& v : h) v = static_cast<float>(static_cast<double>(v) * f);
  return h;
}

QuantizedTensor gptq(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols, const float* x,
                     std::size_t n, const GptqOptions& opt) {
  check_shape(spec, rows, cols);
  const std::vector<float> h = gptq_hessian(x, n, cols);
  return gptq_from_hessian(spec, w, rows, cols, h, opt);
}

QuantizedTensor gptq_from_hessian(const QuantSpec& spec, const float* w, std::size_t rows, std::size_t cols,
                                  std::span<const float> hessian, const GptqOptions& opt) {
  check_shape(spec, rows, cols);
  calib::check_calibration_input("gptq", spec, w, rows * cols, "weight");
  const std::size_t k = cols, nr = rows;
  if (hessian.size() != k * k)
    throw Error("gptq: Hessian of " + std::to_string(hessian.size()) + " elements for " + std::to_string(k) +
                " columns (need " + std::to_string(k * k) + ")");
  calib::check_calibration_input("gptq", spec, hessian.data(), hessian.size(), "Hessian");
  if (opt.block == 0) throw Error("gptq: block of 0 columns");
  if (!(opt.damp >= 0) || !std::isfinite(opt.damp)) throw Error("gptq: damping must be finite and >= 0");

  // Scales first, from the original weights (MR-GPTQ), by the rule or weighted by diag(H)/2.
  const detail::Grid g = detail::make_grid(spec, rows, cols);
  const calib::SpecOps ops = calib::spec_ops(spec);
  const BulkOptions cast = calib::cast_options(spec);
  const float ts = calib::tensor_scale_of(spec, w, rows, cols);
  std::vector<float> diag(k);
  for (std::size_t j = 0; j < k; ++j) diag[j] = hessian[j * k + j];
  std::vector<float> imp(k);
  for (std::size_t j = 0; j < k; ++j) imp[j] = std::max(diag[j], 0.0f) / 2;
  const std::vector<calib::ScaleChoice> choice =
      calib::choose_scales(spec, w, rows, cols, opt.weighted_scales ? imp.data() : nullptr, ts);

  // Column order (act_order: diag(H) descending, stable) and the damped, permuted Hessian.
  // Dead inputs (H_jj = 0, the column never active) get H_jj = 1 as in GPTQ; unlike GPTQ
  // their weights are kept (rounded to nearest), not zeroed.
  std::vector<std::size_t> perm(k);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  if (opt.act_order)
    std::stable_sort(perm.begin(), perm.end(), [&](std::size_t a, std::size_t b) { return diag[a] > diag[b]; });
  double mean = 0;
  for (std::size_t j = 0; j < k; ++j) mean += diag[j] == 0 ? 1.0 : static_cast<double>(diag[j]);
  const float damp = static_cast<float>(opt.damp * mean / static_cast<double>(k));
  std::vector<float> hp(k * k);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < k; ++j) hp[i * k + j] = hessian[perm[i] * k + perm[j]];
  for (std::size_t i = 0; i < k; ++i) {
    float& d = hp[i * k + i];
    if (d == 0) d = 1;
    d += damp;
  }
  const std::vector<float> u = calib::inverse_upper_cholesky(std::move(hp), k);

  // wt: row c is column perm[c] of W; y: the code-domain values, N x K as W.
  std::vector<float> wt(k * nr), y(nr * k), t(nr), err(nr);
  for (std::size_t c = 0; c < k; ++c)
    for (std::size_t r = 0; r < nr; ++r) wt[c * nr + r] = w[r * k + perm[c]];
  const bool par = nr * opt.block >= (std::size_t{1} << 15);
  std::vector<float> neg_err, ublk;
  for (std::size_t i1 = 0; i1 < k; i1 += opt.block) {
    const std::size_t i2 = std::min(k, i1 + opt.block), nb = i2 - i1;
    neg_err.assign(nb * nr, 0.0f);
    for (std::size_t c = i1; c < i2; ++c) {
      const std::size_t oc = perm[c];
      float* wc = wt.data() + c * nr;
      for (std::size_t r = 0; r < nr; ++r) {
        const float v = ops.to_code(wc[r], choice[calib::group_of(g, r, oc)]);
        y[r * k + oc] = v;
        t[r] = v;
      }
      fake_quant_f32(spec.format, t, cast);
      const float dcc = u[c * k + c];
      for (std::size_t r = 0; r < nr; ++r) {
        const float q = ops.from_code(t[r], choice[calib::group_of(g, r, oc)]);
        err[r] = (wc[r] - q) / dcc;
        neg_err[(c - i1) * nr + r] = -err[r];
      }
      // The columns left in this block: w_j -= err * U[c][j], each row of wt on its own.
#pragma omp parallel for schedule(static) if (par)
      for (std::size_t j = c + 1; j < i2; ++j) {
        const float ucj = u[c * k + j];
        float* wj = wt.data() + j * nr;
        for (std::size_t r = 0; r < nr; ++r) wj[r] -= err[r] * ucj;
      }
    }
    if (i2 == k) break;
    // Lazy batch update of the columns after the block: wt[i2:] += U[i1:i2, i2:]^T (-err).
    const std::size_t rest = k - i2;
    ublk.resize(nb * rest);
    for (std::size_t i = 0; i < nb; ++i)
      std::copy_n(u.data() + (i1 + i) * k + i2, rest, ublk.data() + i * rest);
    gemm_f32(ublk.data(), Layout::transposed, neg_err.data(), Layout::transposed, wt.data() + i2 * nr, rest, nr,
             nb, /*accumulate=*/true);
  }
  return calib::assemble(spec, rows, cols, choice, ts, y.data());
}

}  // namespace lowp::quant
