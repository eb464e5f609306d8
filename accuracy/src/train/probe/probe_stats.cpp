#include "train/probe/probe_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lowp/numerics/error.hpp"
#include "train/compare.hpp"

namespace lowp::accuracy::train::probe {

DrawSums& DrawSums::operator+=(const DrawSums& o) {
  rr += o.rr, ee += o.ee, er += o.er, ff += o.ff;
  return *this;
}

BatchSums& BatchSums::operator+=(const BatchSums& o) {
  if (draws.empty()) draws.resize(o.draws.size());
  if (draws.size() != o.draws.size()) throw Error("probe: segments with different draw counts");
  for (std::size_t d = 0; d < draws.size(); ++d) draws[d] += o.draws[d];
  ebar2 += o.ebar2, fbar2 += o.fbar2;
  return *this;
}

void DrawAccumulator::begin(std::size_t n, int draws) {
  if (draws < 2) throw Error("probe: at least 2 draws, not " + std::to_string(draws));
  draws_ = draws;
  e1_.assign(n, 0.0);
  fsum_.assign(n, 0.0);
  sums_.assign(static_cast<std::size_t>(draws), DrawSums{});
}

void DrawAccumulator::add(int d, std::span<const float> estimate, std::span<const float> reference) {
  if (estimate.size() != e1_.size() || reference.size() != e1_.size() || d < 0 || d >= draws_)
    throw Error("probe: a draw of the wrong size");
  DrawSums& s = sums_[static_cast<std::size_t>(d)];
  for (std::size_t i = 0; i < e1_.size(); ++i) {
    const double r = reference[i], e = static_cast<double>(estimate[i]) - r;
    s.rr += r * r;
    s.ee += e * e;
    s.er += e * r;
    if (d == 0) {
      e1_[i] = e;
    } else {
      const double f = e - e1_[i];
      s.ff += f * f;
      fsum_[i] += f;
    }
  }
}

void DrawAccumulator::repeat(int d) {
  if (d <= 0 || d >= draws_) throw Error("probe: draw " + std::to_string(d) + " cannot repeat draw 0");
  // add() would find f = e - e1 = 0 at every element: ff and fsum stay as they are.
  sums_[static_cast<std::size_t>(d)] = {sums_[0].rr, sums_[0].ee, sums_[0].er, 0.0};
}

BatchSums DrawAccumulator::finish() const {
  BatchSums b;
  b.draws = sums_;
  const double D = draws_;
  for (std::size_t i = 0; i < e1_.size(); ++i) {
    const double fbar = fsum_[i] / D, ebar = e1_[i] + fbar;
    b.ebar2 += ebar * ebar;
    b.fbar2 += fbar * fbar;
  }
  return b;
}

BatchFigures batch_figures(const BatchSums& s) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double D = static_cast<double>(s.draws.size());
  double rr = 0, rel = 0, cosine = 0, proj = 0, ff = 0;
  for (const DrawSums& d : s.draws) {
    rr += d.rr / D;
    ff += d.ff;
    if (!(d.rr > 0)) return {nan, nan, nan, nan, nan};
    rel += d.ee / d.rr / D;
    const double dot = d.rr + d.er, est2 = d.rr + 2 * d.er + d.ee;
    cosine += (est2 > 0 ? dot / std::sqrt(d.rr * est2) : 0.0) / D;
    proj += dot / d.rr / D;
  }
  // sum_d |f_d - fbar|^2 = sum_d |f_d|^2 - D |fbar|^2; 0 - 0 when every draw is the same.
  const double V = std::max(0.0, (ff - D * s.fbar2) / (D - 1));
  return {rel, (s.ebar2 - V / D) / rr, V / rr, cosine, proj};
}

Interval interval_over(std::span<const double> v) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::size_t n = v.size();
  if (n == 0) return {nan, nan, nan};
  double mean = 0;
  for (double x : v) mean += x / static_cast<double>(n);
  if (n < 2) return {mean, nan, nan};
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  const double half = t_quantile_975(static_cast<int>(n) - 1) * std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  return {mean, mean - half, mean + half};
}

Figures figures_over(std::span<const BatchSums> batches) {
  std::vector<double> rel, bias2, var, cosine, proj;
  for (const BatchSums& b : batches) {
    const BatchFigures f = batch_figures(b);
    rel.push_back(f.rel_mse), bias2.push_back(f.bias2), var.push_back(f.variance), cosine.push_back(f.cosine), proj.push_back(f.proj);
  }
  return {interval_over(rel), interval_over(bias2), interval_over(var).mean, interval_over(cosine).mean, interval_over(proj).mean};
}

}  // namespace lowp::accuracy::train::probe
