// The probe's estimators (train/probe): D draws of an estimate of a reference vector, their
// error sums per batch, and the figures with their 95% intervals over the batches.
//
// For draw d the error is e_d = estimate_d - reference_d (both float32, differences in double).
// Draw 1's error is kept and every later draw adds f_d = e_d - e_1, so a deterministic
// estimator (all draws the same bits) has f = 0 and a variance of exactly 0.
//   rel_mse  = mean_d |e_d|^2 / |r_d|^2
//   variance = V / mean_d |r_d|^2,  V = sum_d |f_d - fbar|^2 / (D - 1) (the draws' spread, unbiased)
//   bias2    = (|ebar|^2 - V / D) / mean_d |r_d|^2     (|ebar|^2 overestimates |E e|^2 by tr Cov / D)
//   cosine   = mean_d cos(r_d + e_d, r_d),  proj = mean_d (r_d + e_d).r_d / |r_d|^2
#pragma once
#include <cstddef>
#include <span>
#include <vector>

namespace lowp::accuracy::train::probe {

// One draw's sums over a segment's elements: |r|^2, |e|^2, e.r and |f|^2.
struct DrawSums {
  double rr = 0, ee = 0, er = 0, ff = 0;
  DrawSums& operator+=(const DrawSums& o);
};

// A segment's (a tensor's, a GEMM output's) sums over the draws of one batch; segments add up.
struct BatchSums {
  std::vector<DrawSums> draws;
  double ebar2 = 0, fbar2 = 0;  // |ebar|^2 and |fbar|^2
  BatchSums& operator+=(const BatchSums& o);
};

// The draws of one segment in one batch, element by element.
class DrawAccumulator {
 public:
  // Starts a batch of `draws` (>= 2) draws over n elements.
  void begin(std::size_t n, int draws);
  // Draw d (0, 1, ... in order): its estimate and the reference it is measured against.
  void add(int d, std::span<const float> estimate, std::span<const float> reference);
  // Draw d (> 0) gave draw 0's bits: the same sums as add() of draw 0's estimate, in O(1).
  void repeat(int d);
  // After the last draw.
  BatchSums finish() const;

 private:
  int draws_ = 0;
  std::vector<double> e1_, fsum_;
  std::vector<DrawSums> sums_;
};

// The figures of one batch from its (summed) sums; NaN where |r|^2 is 0.
struct BatchFigures {
  double rel_mse, bias2, variance, cosine, proj;
};
BatchFigures batch_figures(const BatchSums& s);

// A mean over batches with its two-sided 95% Student-t interval (NaN bounds for one batch).
struct Interval {
  double mean, lo, hi;
};
Interval interval_over(std::span<const double> per_batch);

// A segment's figures over the batches: rel_mse and bias2 with their intervals, the rest means.
struct Figures {
  Interval rel_mse, bias2;
  double variance, cosine, proj;
};
Figures figures_over(std::span<const BatchSums> batches);

}  // namespace lowp::accuracy::train::probe
