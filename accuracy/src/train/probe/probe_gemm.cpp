#include "train/probe/probe_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lowp/quant/gemm.hpp"

namespace lowp::accuracy::train::probe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// log2 of each group's amax in operand L (rows x cols, reduction along cols; L = src^T when
// `transposed`) under the spec's granularity; zero groups are left out. Empty for one scale.
std::vector<double> group_log2_amax(const float* src, std::size_t rows, std::size_t cols, bool transposed,
                                    const quant::QuantSpec& spec) {
  using quant::Granularity;
  const std::size_t b = std::max<std::size_t>(spec.block, 1), cb = (cols + b - 1) / b;
  std::size_t groups = 0;
  switch (spec.granularity) {
    case Granularity::tensor: return {};
    case Granularity::row: groups = rows; break;
    case Granularity::column: groups = cols; break;
    case Granularity::block: groups = rows * cb; break;
    case Granularity::tile: groups = ((rows + b - 1) / b) * cb; break;
  }
  // Group of L(i, j) = part_i[i] + part_j[j]; the source is read in its own memory order.
  std::vector<std::size_t> part_i(rows), part_j(cols);
  for (std::size_t i = 0; i < rows; ++i)
    part_i[i] = spec.granularity == Granularity::row ? i : spec.granularity == Granularity::block ? i * cb
              : spec.granularity == Granularity::tile ? (i / b) * cb : 0;
  for (std::size_t j = 0; j < cols; ++j) part_j[j] = spec.granularity == Granularity::column ? j : spec.granularity == Granularity::row ? 0 : j / b;
  std::vector<float> amax(groups, 0.0f);
  const std::size_t outer = transposed ? cols : rows, inner = transposed ? rows : cols;
  for (std::size_t p = 0; p < outer; ++p) {
    const float* src_row = src + p * inner;
    for (std::size_t q = 0; q < inner; ++q) {
      const std::size_t g = transposed ? part_i[q] + part_j[p] : part_i[p] + part_j[q];
      amax[g] = std::max(amax[g], std::fabs(src_row[q]));
    }
  }
  std::vector<double> out;
  for (float a : amax)
    if (a > 0 && std::isfinite(a)) out.push_back(std::log2(static_cast<double>(a)));
  return out;
}

double sd(const std::vector<double>& v) {
  if (v.size() < 2) return kNaN;
  double m = 0, ss = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

// The wider of the two operands' block-scale spreads (NaN: neither has several scales, or the
// GEMM rotates or uses a special quantizer, whose scales are of data the probe does not see).
double gemm_scale_sd(const quant::GemmRecipe& g, const float* a, std::size_t ar, std::size_t ac, bool at, const float* b,
                     std::size_t br, std::size_t bc, bool bt) {
  if (g.rotation != hadamard::RotationKind::none || g.a_special != quant::SpecialQuant::none ||
      g.b_special != quant::SpecialQuant::none)
    return kNaN;
  double s = kNaN;
  if (g.a) s = sd(group_log2_amax(a, ar, ac, at, *g.a));
  if (g.b) {
    const double t = sd(group_log2_amax(b, br, bc, bt, *g.b));
    if (!(s >= t)) s = t;
  }
  return s;
}

void gather_rows(const float* src, std::size_t rows, std::size_t cols, std::vector<float>& dst) {
  const std::size_t s = kGemmRowStride, m = (rows + s - 1) / s;
  dst.resize(m * cols);
  for (std::size_t i = 0; i < m; ++i) std::copy(src + i * s * cols, src + (i * s + 1) * cols, dst.begin() + static_cast<std::ptrdiff_t>(i * cols));
}

}  // namespace

void GemmMeasure::observe(const TrainLlama::GemmView& v, int draw) {
  const std::vector<float>& W = v.lin->weight();
  const std::size_t M = v.rows, K = v.in, N = v.out_features, s = kGemmRowStride;
  const quant::LinearRecipe& r = v.lin->recipe();
  const int key = (v.layer < 0 ? kClassifierLayer : v.layer) * 16 + v.linear;
  if (!v.dy) {  // fwd: Y = X W^T
    const std::size_t m = (M + s - 1) / s;
    gather_rows(v.x, M, K, xs_);
    ref_.resize(m * N);
    quant::gemm_f32(xs_.data(), W.data(), ref_.data(), m, N, K, false, threads_);
    gather_rows(v.out, M, N, est_);
    add(key, 0, draw, m * N, draw == 0 ? gemm_scale_sd(r.fwd, v.x, M, K, false, W.data(), N, K, false) : kNaN);
    return;
  }
  {  // dgrad: dX = dY W
    const std::size_t m = (M + s - 1) / s;
    gather_rows(v.dy, M, N, xs_);
    ref_.resize(m * K);
    quant::gemm_f32(xs_.data(), quant::Layout::as_is, W.data(), quant::Layout::transposed, ref_.data(), m, K, N, false,
                    threads_);
    gather_rows(v.out, M, K, est_);
    add(key, 1, draw, m * K, draw == 0 ? gemm_scale_sd(r.dgrad, v.dy, M, N, false, W.data(), K, N, true) : kNaN);
  }
  {  // wgrad: dW = dY^T X, rows n of dW from columns n of dY
    const std::size_t n = (N + s - 1) / s;
    xs_.resize(n * M);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t t = 0; t < M; ++t) xs_[i * M + t] = v.dy[t * N + i * s];
    ref_.resize(n * K);
    quant::gemm_f32(xs_.data(), quant::Layout::as_is, v.x, quant::Layout::transposed, ref_.data(), n, K, M, false,
                    threads_);
    gather_rows(v.dw, N, K, est_);
    add(key, 2, draw, n * K, draw == 0 ? gemm_scale_sd(r.wgrad, v.dy, N, M, true, v.x, K, M, true) : kNaN);
  }
}

void GemmMeasure::repeat(int draw) {
  for (auto& [k, g] : segs_) g.acc.repeat(draw);
}

void GemmMeasure::end_batch() {
  for (auto& [k, g] : segs_) g.batches.push_back(g.acc.finish());
}

void GemmMeasure::add(int key, int gemm, int draw, std::size_t n, double scale_sd) {
  GemmSeg& g = segs_[{key, gemm}];
  if (draw == 0) {
    g.acc.begin(n, draws_);
    g.scale_sd.push_back(scale_sd);
  }
  g.acc.add(draw, est_, ref_);
}

}  // namespace lowp::accuracy::train::probe
