// compare(): llama.cpp's `perplexity --kl-divergence` statistics of a run against the reference.
#include "lowp/accuracy/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct MeanSe {
  double mean = kNaN, se = kNaN;
};

// Mean and its standard error sqrt(population variance / (n - 1)), llama.cpp's estimate;
// two passes so that a tiny variance is not lost in E[x^2] - E[x]^2.
MeanSe mean_se(const std::vector<double>& v) {
  MeanSe r;
  if (v.empty()) return r;
  double sum = 0;
  for (double x : v) sum += x;
  r.mean = sum / static_cast<double>(v.size());
  if (v.size() < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.se = std::sqrt(ss / static_cast<double>(v.size()) / static_cast<double>(v.size() - 1));
  return r;
}

// Linear interpolation between sorted values at position q (n - 1).
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  if (lo + 1 >= sorted.size()) return sorted.back();
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

bool finite_row(const float* row, std::size_t n) {
  for (std::size_t v = 0; v < n; ++v)
    if (!std::isfinite(row[v])) return false;
  return true;
}

// The first index of the largest value (rows are finite here).
std::size_t argmax(const float* row, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t v = 1; v < n; ++v)
    if (row[v] > row[best]) best = v;
  return best;
}

void check_same_tokens(const EvalRun& ref, const EvalRun& q) {
  const auto fail = [](const std::string& why) { return Error("compare: runs do not match: " + why); };
  if (ref.vocab == 0) throw Error("compare: the reference run has vocabulary size 0");
  if (ref.vocab != q.vocab)
    throw fail("vocabulary " + std::to_string(ref.vocab) + " vs " + std::to_string(q.vocab));
  if (ref.targets.size() != q.targets.size())
    throw fail(std::to_string(ref.scored()) + " vs " + std::to_string(q.scored()) + " scored positions");
  for (std::size_t i = 0; i < ref.targets.size(); ++i) {
    if (ref.targets[i] != q.targets[i])
      throw fail("position " + std::to_string(i) + " targets token " + std::to_string(ref.targets[i]) +
                 " vs " + std::to_string(q.targets[i]));
    if (ref.targets[i] < 0 || static_cast<std::size_t>(ref.targets[i]) >= ref.vocab)
      throw Error("compare: position " + std::to_string(i) + " targets token " + std::to_string(ref.targets[i]) +
                  ", outside the vocabulary of " + std::to_string(ref.vocab));
  }
  const std::size_t want = ref.scored() * ref.vocab;
  if (ref.log_probs.size() != want || q.log_probs.size() != want)
    throw fail("log-probabilities hold " + std::to_string(ref.log_probs.size()) + " and " +
               std::to_string(q.log_probs.size()) + " values, expected " + std::to_string(want) +
               " (scored positions x vocabulary)");
}

}  // namespace

void PositionStats::append(const PositionStats& next) {
  for (auto [to, from] : {std::pair{&nll_q, &next.nll_q}, std::pair{&nll_ref, &next.nll_ref},
                          std::pair{&kld, &next.kld}, std::pair{&dp, &next.dp}})
    to->insert(to->end(), from->begin(), from->end());
  tokens += next.tokens;
  nonfinite += next.nonfinite;
  same_top1 += next.same_top1;
}

PositionStats position_stats(const EvalRun& ref, const EvalRun& quant) {
  check_same_tokens(ref, quant);
  const std::size_t V = ref.vocab, n = ref.scored();
  PositionStats s;
  s.tokens = n;
  for (auto* v : {&s.nll_q, &s.nll_ref, &s.kld, &s.dp}) v->reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float* lr = ref.log_probs.data() + i * V;
    const float* lq = quant.log_probs.data() + i * V;
    if (!finite_row(lr, V) || !finite_row(lq, V)) {
      ++s.nonfinite;
      continue;
    }
    const auto t = static_cast<std::size_t>(ref.targets[i]);
    s.nll_q.push_back(-static_cast<double>(lq[t]));
    s.nll_ref.push_back(-static_cast<double>(lr[t]));
    // Identical rows give exactly 0: every term is p * (a - a).
    double k = 0;
    for (std::size_t v = 0; v < V; ++v)
      k += std::exp(static_cast<double>(lr[v])) * (static_cast<double>(lr[v]) - static_cast<double>(lq[v]));
    s.kld.push_back(k);
    s.dp.push_back(std::exp(static_cast<double>(lq[t])) - std::exp(static_cast<double>(lr[t])));
    s.same_top1 += argmax(lr, V) == argmax(lq, V);
  }
  return s;
}

Comparison summarize(PositionStats s) {
  Comparison c;
  c.tokens = s.tokens;
  c.nonfinite = s.nonfinite;
  const std::size_t m = s.kld.size();
  std::vector<double> diff(m);
  for (std::size_t i = 0; i < m; ++i) diff[i] = s.nll_q[i] - s.nll_ref[i];
  const MeanSe q = mean_se(s.nll_q), r = mean_se(s.nll_ref), d = mean_se(diff), k = mean_se(s.kld), p = mean_se(s.dp);
  c.ppl = std::exp(q.mean);
  c.ppl_se = c.ppl * q.se;
  c.ref_ppl = std::exp(r.mean);
  c.ref_ppl_se = c.ref_ppl * r.se;
  c.ln_ppl_ratio = d.mean;
  c.ln_ppl_ratio_se = d.se;
  c.kld_mean = k.mean;
  c.kld_se = k.se;
  std::sort(s.kld.begin(), s.kld.end());
  c.kld_median = percentile(s.kld, 0.5);
  c.kld_p99 = percentile(s.kld, 0.99);
  c.kld_max = m ? s.kld.back() : kNaN;
  c.dp_mean = p.mean;
  double sq = 0;
  for (double x : s.dp) sq += x * x;
  c.dp_rms = m ? std::sqrt(sq / static_cast<double>(m)) : kNaN;
  c.same_top1 = m ? 100.0 * static_cast<double>(s.same_top1) / static_cast<double>(m) : kNaN;
  return c;
}

Comparison compare(const EvalRun& ref, const EvalRun& quant) { return summarize(position_stats(ref, quant)); }

}  // namespace lowp::accuracy
