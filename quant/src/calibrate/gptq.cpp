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

namespace {

constexpr std::size_t kPanel = 128;  // panel width of the blocked factorisations

// dst (rows x cols, leading dimension ld) -= a (rows x r) * b^T for b stored r x cols
// (b_transposed) or cols x r; a and b contiguous. With `lower`, only the columns
// j <= row + diag_offset of each row are written (the lower triangle of a trailing update).
void subtract_product(const float* a, const float* b, bool b_transposed, std::size_t rows, std::size_t cols,
                      std::size_t r, float* dst, std::size_t ld, bool lower, std::size_t diag_offset,
                      std::vector<float>& tmp) {
  tmp.resize(rows * cols);
  gemm_f32(a, Layout::as_is, b, b_transposed ? Layout::transposed : Layout::as_is, tmp.data(), rows, cols, r);
  for (std::size_t i = 0; i < rows; ++i) {
    const std::size_t n = lower ? std::min(cols, i + diag_offset + 1) : cols;
    float* d = dst + i * ld;
    const float* t = tmp.data() + i * cols;
    for (std::size_t j = 0; j < n; ++j) d[j] -= t[j];
  }
}

// Lower Cholesky factor of the row-major k x k a, in place (its strict upper part zeroed).
// Right-looking by panels: Eigen factors each diagonal block and solves the panel below it;
// the trailing update, 2/3 of the k^3 / 3 multiply-adds, runs on gemm_f32.
bool cholesky_in_place(float* data, std::size_t k) {
  const auto kk = static_cast<Eigen::Index>(k);
  Eigen::Map<RowMatrix> a(data, kk, kk);
  std::vector<float> p, tmp;
  for (std::size_t c0 = 0; c0 < k; c0 += kPanel) {
    const std::size_t w = std::min(kPanel, k - c0), c1 = c0 + w, m = k - c1;
    const auto e0 = static_cast<Eigen::Index>(c0), ew = static_cast<Eigen::Index>(w);
    Eigen::Ref<RowMatrix> a11 = a.block(e0, e0, ew, ew);
    Eigen::LLT<Eigen::Ref<RowMatrix>> llt(a11);
    if (llt.info() != Eigen::Success) return false;
    if (m == 0) break;
    auto a21 = a.block(static_cast<Eigen::Index>(c1), e0, static_cast<Eigen::Index>(m), ew);
    a11.triangularView<Eigen::Lower>().transpose().solveInPlace<Eigen::OnTheRight>(a21);  // L21 = A21 L11^-T
    p.resize(m * w);
    Eigen::Map<RowMatrix>(p.data(), static_cast<Eigen::Index>(m), ew) = a21;
    // A22 -= L21 L21^T, lower triangle, in bands of rows.
    const std::size_t band = 256;
    for (std::size_t r0 = 0; r0 < m; r0 += band) {
      const std::size_t r1 = std::min(m, r0 + band);
      subtract_product(p.data() + r0 * w, p.data(), false, r1 - r0, r1, w, data + (c1 + r0) * k + c1, k, true, r0,
                       tmp);
    }
  }
  a.triangularView<Eigen::StrictlyUpper>().setZero();
  return true;
}

// L^-1 of the lower-triangular row-major k x k l, by blocked forward substitution on L X = I:
// each block row is solved by Eigen against its diagonal block, then subtracted from the rows
// below with gemm_f32 (only the columns left of the block are nonzero: k^3 / 3 multiply-adds).
std::vector<float> lower_inverse(const float* l, std::size_t k) {
  const auto kk = static_cast<Eigen::Index>(k);
  Eigen::Map<const RowMatrix> lm(l, kk, kk);
  std::vector<float> x(k * k, 0.0f), a, b, tmp;
  for (std::size_t i = 0; i < k; ++i) x[i * k + i] = 1.0f;
  Eigen::Map<RowMatrix> xm(x.data(), kk, kk);
  for (std::size_t i0 = 0; i0 < k; i0 += kPanel) {
    const std::size_t w = std::min(kPanel, k - i0), i1 = i0 + w, m = k - i1;
    const auto e0 = static_cast<Eigen::Index>(i0), ew = static_cast<Eigen::Index>(w);
    auto xi = xm.block(e0, 0, ew, static_cast<Eigen::Index>(i1));
    lm.block(e0, e0, ew, ew).triangularView<Eigen::Lower>().solveInPlace(xi);
    if (m == 0) break;
    a.resize(m * w);
    for (std::size_t r = 0; r < m; ++r) std::copy_n(l + (i1 + r) * k + i0, w, a.data() + r * w);
    b.resize(w * i1);
    for (std::size_t r = 0; r < w; ++r) std::copy_n(x.data() + (i0 + r) * k, i1, b.data() + r * i1);
    subtract_product(a.data(), b.data(), true, m, i1, w, x.data() + i1 * k, k, false, 0, tmp);
  }
  return x;
}

}  // namespace

std::vector<float> inverse_upper_cholesky(std::vector<float> h, std::size_t k) {
  // H = J A J with J the reversal and A = L L^T (lower Cholesky); then H = (J L J)(J L J)^T
  // with J L J upper, so H^-1 = U^T U for U = (J L J)^-1 = J L^-1 J, upper with a positive
  // diagonal: the unique upper Cholesky factor of H^-1 (GPTQ's cholesky(inverse(H), upper)),
  // for one factorisation and one triangular inverse. J M J of a row-major k x k matrix is its
  // flat array reversed.
  std::reverse(h.begin(), h.end());
  if (!cholesky_in_place(h.data(), k))
    throw Error("gptq: the damped Hessian is not positive definite (raise the damping)");
  std::vector<float> u = lower_inverse(h.data(), k);
  std::reverse(u.begin(), u.end());
  return u;
}

}  // namespace calib

std::vector<float> gptq_hessian(const float* x, std::size_t n, std::size_t k) {
  calib::check_finite("gptq", x, n * k, "activation");
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
  calib::check_finite("gptq", hessian.data(), hessian.size(), "Hessian");
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
