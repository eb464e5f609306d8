// Comparing a quantized run with the float32 reference on the same tokens, with the
// definitions of llama.cpp's `perplexity --kl-divergence` (docs/sweep.md):
//   NLL_i = -log p(target_i); PPL = exp(mean NLL), SE(PPL) = PPL * SE(mean NLL);
//   ln(PPL_Q / PPL_ref) = mean(NLL_Q,i - NLL_ref,i), SE from the per-token differences;
//   KLD_i = sum_v p_ref(v) (log p_ref(v) - log p_Q(v)); dp_i = p_Q(target_i) - p_ref(target_i);
//   SE(mean of x) = sqrt(population variance / (n - 1)); percentiles interpolate linearly
//   between sorted values at position q (n - 1).
// Sums run in double, serially, so results do not depend on the thread count.
#pragma once
#include <cstddef>
#include <vector>

#include "lowp/accuracy/eval.hpp"

namespace lowp::accuracy {

struct Comparison {
  std::size_t tokens = 0;              // scored positions, the nonfinite ones included
  double ppl = 0, ppl_se = 0;          // of the quantized run
  double ref_ppl = 0, ref_ppl_se = 0;  // of the reference, on the same (finite) positions
  double ln_ppl_ratio = 0, ln_ppl_ratio_se = 0;  // mean ln(PPL_Q / PPL_ref)
  double kld_mean = 0, kld_se = 0, kld_median = 0, kld_p99 = 0, kld_max = 0;
  double dp_mean = 0, dp_rms = 0;      // change in p(actual next token)
  double same_top1 = 0;                // percent
  std::size_t nonfinite = 0;           // positions with NaN/Inf (excluded and counted)
};

// Every statistic is over the positions where both log-probability rows are finite; with none
// left they are NaN, and a standard error needs two positions (NaN otherwise).
// Throws lowp::Error when the runs do not cover the same tokens (vocab, targets, row sizes)
// or a target lies outside the vocabulary.
Comparison compare(const EvalRun& ref, const EvalRun& quant);

// compare() in two steps: the per-position values (each position's own, so the values of
// consecutive windows appended in window order are those of the whole run, whoever computed
// each window), then the statistics over them. compare(r, q) == summarize(position_stats(r, q)).
struct PositionStats {
  std::vector<double> nll_q, nll_ref, kld, dp;  // one entry per finite position, in order
  std::size_t tokens = 0, nonfinite = 0, same_top1 = 0;
  void append(const PositionStats& next);
};
PositionStats position_stats(const EvalRun& ref, const EvalRun& quant);  // throws as compare()
Comparison summarize(PositionStats stats);

}  // namespace lowp::accuracy
