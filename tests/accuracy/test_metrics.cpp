// compare(): every statistic against an oracle computed here in long double from hand-made
// distributions, following the textbook definitions (sample standard deviation / sqrt(n),
// order statistics) rather than the library's formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lowp/accuracy/metrics.hpp"
#include "support/test_support.hpp"

namespace {

using lowp::accuracy::Comparison;
using lowp::accuracy::compare;
using lowp::accuracy::EvalRun;

// A run whose scored rows are log(p) of the given probability rows.
EvalRun make_run(std::size_t vocab, const std::vector<int>& targets, const std::vector<std::vector<double>>& probs) {
  EvalRun r;
  r.vocab = vocab;
  r.targets = targets;
  for (const auto& row : probs) {
    EXPECT_EQ(row.size(), vocab);
    for (double p : row) r.log_probs.push_back(static_cast<float>(std::log(p)));
  }
  return r;
}

// Normalised random probability rows (some peaked, some flat), deterministic from `seed`.
std::vector<std::vector<double>> random_rows(std::size_t n, std::size_t vocab, std::uint64_t seed, double peak) {
  lowp::test::SplitMix g{seed};
  std::vector<std::vector<double>> rows(n, std::vector<double>(vocab));
  for (auto& row : rows) {
    double sum = 0;
    for (double& p : row) {
      p = std::exp(peak * (static_cast<double>(g.next() >> 11) * 0x1.0p-53 - 0.5));
      sum += p;
    }
    for (double& p : row) p /= sum;
  }
  return rows;
}

struct Oracle {
  long double ppl, ppl_se, ref_ppl, ln_ratio, ln_ratio_se, kld_mean, kld_se, kld_max, dp_mean, dp_rms, same_top1;
  std::vector<long double> kld_sorted;
};

long double sample_se(const std::vector<long double>& v) {
  long double mean = 0;
  for (auto x : v) mean += x;
  mean /= v.size();
  long double s2 = 0;
  for (auto x : v) s2 += (x - mean) * (x - mean);
  s2 /= (v.size() - 1);  // sample variance
  return std::sqrt(s2) / std::sqrt(static_cast<long double>(v.size()));
}

long double mean(const std::vector<long double>& v) {
  long double s = 0;
  for (auto x : v) s += x;
  return s / v.size();
}

// From the float32 log-probabilities the runs hold, in long double.
Oracle oracle(const EvalRun& ref, const EvalRun& q) {
  const std::size_t V = ref.vocab;
  std::vector<long double> nq, nr, d, kld, dp;
  long double same = 0;
  for (std::size_t i = 0; i < ref.targets.size(); ++i) {
    const float* lr = &ref.log_probs[i * V];
    const float* lq = &q.log_probs[i * V];
    const auto t = static_cast<std::size_t>(ref.targets[i]);
    nq.push_back(-static_cast<long double>(lq[t]));
    nr.push_back(-static_cast<long double>(lr[t]));
    d.push_back(nq.back() - nr.back());
    long double k = 0;
    for (std::size_t v = 0; v < V; ++v)
      k += std::exp(static_cast<long double>(lr[v])) * (static_cast<long double>(lr[v]) - lq[v]);
    kld.push_back(k);
    dp.push_back(std::exp(static_cast<long double>(lq[t])) - std::exp(static_cast<long double>(lr[t])));
    same += std::max_element(lr, lr + V) - lr == std::max_element(lq, lq + V) - lq;
  }
  Oracle o{};
  o.ppl = std::exp(mean(nq));
  o.ppl_se = o.ppl * sample_se(nq);
  o.ref_ppl = std::exp(mean(nr));
  o.ln_ratio = mean(d);
  o.ln_ratio_se = sample_se(d);
  o.kld_mean = mean(kld);
  o.kld_se = sample_se(kld);
  o.kld_sorted = kld;
  std::sort(o.kld_sorted.begin(), o.kld_sorted.end());
  o.kld_max = o.kld_sorted.back();
  o.dp_mean = mean(dp);
  long double sq = 0;
  for (auto x : dp) sq += x * x;
  o.dp_rms = std::sqrt(sq / dp.size());
  o.same_top1 = 100 * same / kld.size();
  return o;
}

void expect_close(double got, long double want, const char* what) {
  EXPECT_NEAR(got, static_cast<double>(want), 1e-12 * std::max(1.0L, std::fabs(want))) << what;
}

TEST(Metrics, IdenticalRunsHaveZeroKldExactly) {
  const EvalRun r = make_run(50, std::vector<int>(40, 7), random_rows(40, 50, 1, 12.0));
  const Comparison c = compare(r, r);
  EXPECT_EQ(c.kld_mean, 0.0);
  EXPECT_EQ(c.kld_max, 0.0);
  EXPECT_EQ(c.kld_median, 0.0);
  EXPECT_EQ(c.kld_p99, 0.0);
  EXPECT_EQ(c.kld_se, 0.0);
  EXPECT_EQ(c.ln_ppl_ratio, 0.0);
  EXPECT_EQ(c.dp_mean, 0.0);
  EXPECT_EQ(c.dp_rms, 0.0);
  EXPECT_EQ(c.same_top1, 100.0);
  EXPECT_EQ(c.ppl, c.ref_ppl);
  EXPECT_EQ(c.tokens, 40u);
  EXPECT_EQ(c.nonfinite, 0u);
}

TEST(Metrics, HandWorkedTwoPositions) {
  // Position 0: ref (1/2, 1/4, 1/4), quant (1/4, 1/2, 1/4), target 0:
  //   KLD = 1/2 ln 2 + 1/4 ln(1/2) = ln(2) / 4; dp = 1/4 - 1/2 = -1/4; top-1 differs.
  // Position 1: both (1/4, 1/2, 1/4), target 1: KLD 0, dp 0, top-1 same.
  // NLL_q = (ln 4, ln 2), NLL_ref = (ln 2, ln 2): PPL_q = exp(1.5 ln 2) = 2^1.5, PPL_ref = 2,
  // ln ratio = (ln 2 + 0) / 2; KLD mean ln(2)/8, median (n = 2) the midpoint ln(2)/8, max ln(2)/4,
  // p99 at position 0.99 between them: 0.99 ln(2)/4. SE of (a, b) = |a - b| / 2.
  const EvalRun ref = make_run(3, {0, 1}, {{0.5, 0.25, 0.25}, {0.25, 0.5, 0.25}});
  const EvalRun q = make_run(3, {0, 1}, {{0.25, 0.5, 0.25}, {0.25, 0.5, 0.25}});
  const Comparison c = compare(ref, q);
  const double ln2 = std::log(2.0), tol = 1e-7;  // the log-probs are float32
  EXPECT_NEAR(c.ppl, std::pow(2.0, 1.5), tol);
  EXPECT_NEAR(c.ppl_se, std::pow(2.0, 1.5) * ln2 / 2, tol);
  EXPECT_NEAR(c.ref_ppl, 2.0, tol);
  EXPECT_NEAR(c.ref_ppl_se, 0.0, tol);
  EXPECT_NEAR(c.ln_ppl_ratio, ln2 / 2, tol);
  EXPECT_NEAR(c.ln_ppl_ratio_se, ln2 / 2, tol);
  EXPECT_NEAR(c.kld_mean, ln2 / 8, tol);
  EXPECT_NEAR(c.kld_se, ln2 / 8, tol);
  EXPECT_NEAR(c.kld_median, ln2 / 8, tol);
  EXPECT_NEAR(c.kld_p99, 0.99 * ln2 / 4, tol);
  EXPECT_NEAR(c.kld_max, ln2 / 4, tol);
  EXPECT_NEAR(c.dp_mean, -0.125, tol);
  EXPECT_NEAR(c.dp_rms, std::sqrt(0.0625 / 2), tol);
  EXPECT_EQ(c.same_top1, 50.0);
}

TEST(Metrics, MatchesLongDoubleOracle) {
  // 101 positions, so the median is order statistic 50 and p99 order statistic 99 exactly.
  const std::size_t n = 101, V = 64;
  std::vector<int> targets(n);
  lowp::test::SplitMix g{5};
  for (int& t : targets) t = static_cast<int>(g.next() % V);
  auto ref_rows = random_rows(n, V, 11, 8.0);
  auto q_rows = ref_rows;
  lowp::test::SplitMix h{12};
  for (auto& row : q_rows) {  // multiplicative noise, renormalised
    double sum = 0;
    for (double& p : row) {
      p *= std::exp(0.3 * (static_cast<double>(h.next() >> 11) * 0x1.0p-53 - 0.5));
      sum += p;
    }
    for (double& p : row) p /= sum;
  }
  const EvalRun ref = make_run(V, targets, ref_rows), q = make_run(V, targets, q_rows);
  const Comparison c = compare(ref, q);
  const Oracle o = oracle(ref, q);
  expect_close(c.ppl, o.ppl, "ppl");
  expect_close(c.ppl_se, o.ppl_se, "ppl_se");
  expect_close(c.ref_ppl, o.ref_ppl, "ref_ppl");
  expect_close(c.ln_ppl_ratio, o.ln_ratio, "ln ratio");
  expect_close(c.ln_ppl_ratio_se, o.ln_ratio_se, "ln ratio se");
  expect_close(c.kld_mean, o.kld_mean, "kld mean");
  expect_close(c.kld_se, o.kld_se, "kld se");
  expect_close(c.kld_median, o.kld_sorted[50], "kld median");
  expect_close(c.kld_p99, o.kld_sorted[99], "kld p99");
  expect_close(c.kld_max, o.kld_max, "kld max");
  expect_close(c.dp_mean, o.dp_mean, "dp mean");
  expect_close(c.dp_rms, o.dp_rms, "dp rms");
  expect_close(c.same_top1, o.same_top1, "same top1");
  EXPECT_GT(c.kld_mean, 0.0);
  EXPECT_LT(c.same_top1, 100.0);  // the noise changes some top-1 tokens ...
  EXPECT_GT(c.same_top1, 50.0);   // ... but not most
}

TEST(Metrics, NonFiniteRowsAreCountedAndExcluded) {
  const std::size_t n = 30, V = 16;
  const std::vector<int> targets(n, 3);
  const EvalRun ref = make_run(V, targets, random_rows(n, V, 2, 6.0));
  EvalRun q = make_run(V, targets, random_rows(n, V, 3, 6.0));
  // Positions 4 (NaN) and 9 (+Inf) of the quantized run, 20 (-Inf) of the reference.
  EvalRun ref_bad = ref;
  q.log_probs[4 * V + 1] = std::numeric_limits<float>::quiet_NaN();
  q.log_probs[9 * V + 15] = std::numeric_limits<float>::infinity();
  ref_bad.log_probs[20 * V + 0] = -std::numeric_limits<float>::infinity();
  const Comparison c = compare(ref_bad, q);
  EXPECT_EQ(c.tokens, n);
  EXPECT_EQ(c.nonfinite, 3u);
  // The same statistics as on the runs with those positions removed.
  EvalRun ref_kept = ref, q_kept = q;
  ref_kept.targets.clear();
  q_kept.targets.clear();
  ref_kept.log_probs.clear();
  q_kept.log_probs.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (i == 4 || i == 9 || i == 20) continue;
    ref_kept.targets.push_back(targets[i]);
    q_kept.targets.push_back(targets[i]);
    ref_kept.log_probs.insert(ref_kept.log_probs.end(), ref.log_probs.begin() + i * V, ref.log_probs.begin() + (i + 1) * V);
    q_kept.log_probs.insert(q_kept.log_probs.end(), q.log_probs.begin() + i * V, q.log_probs.begin() + (i + 1) * V);
  }
  const Oracle o = oracle(ref_kept, q_kept);
  expect_close(c.kld_mean, o.kld_mean, "kld mean");
  expect_close(c.ppl, o.ppl, "ppl");
  expect_close(c.dp_rms, o.dp_rms, "dp rms");
  EXPECT_TRUE(std::isfinite(c.kld_max));
}

TEST(Metrics, AllRowsNonFiniteGiveNaNNotACrash) {
  EvalRun ref = make_run(4, {1, 2}, {{0.25, 0.25, 0.25, 0.25}, {0.1, 0.2, 0.3, 0.4}});
  EvalRun q = ref;
  for (float& v : q.log_probs) v = std::numeric_limits<float>::quiet_NaN();
  const Comparison c = compare(ref, q);
  EXPECT_EQ(c.tokens, 2u);
  EXPECT_EQ(c.nonfinite, 2u);
  for (double v : {c.ppl, c.ppl_se, c.kld_mean, c.kld_median, c.kld_p99, c.kld_max, c.dp_rms, c.same_top1})
    EXPECT_TRUE(std::isnan(v));
  // One position: means exist, standard errors do not.
  const Comparison one = compare(make_run(2, {0}, {{0.5, 0.5}}), make_run(2, {0}, {{0.25, 0.75}}));
  EXPECT_NEAR(one.ppl, 4.0, 1e-6);
  EXPECT_TRUE(std::isnan(one.ppl_se));
  EXPECT_TRUE(std::isnan(one.kld_se));
}

TEST(Metrics, RunsThatDoNotMatchAreErrors) {
  const EvalRun r = make_run(3, {0, 1}, {{0.5, 0.25, 0.25}, {0.25, 0.5, 0.25}});
  EvalRun other_vocab = make_run(2, {0, 1}, {{0.5, 0.5}, {0.5, 0.5}});
  lowp::test::expect_error([&] { compare(r, other_vocab); }, {"vocabulary 3 vs 2"});
  EvalRun other_targets = r;
  other_targets.targets[1] = 2;
  lowp::test::expect_error([&] { compare(r, other_targets); }, {"position 1", "token 1 vs 2"});
  EvalRun shorter = r;
  shorter.targets.pop_back();
  lowp::test::expect_error([&] { compare(r, shorter); }, {"2 vs 1 scored positions"});
  EvalRun truncated = r;
  truncated.log_probs.pop_back();
  lowp::test::expect_error([&] { compare(r, truncated); }, {"6 and 5 values", "expected 6"});
  EvalRun bad_target = r;
  bad_target.targets[0] = 3;
  lowp::test::expect_error([&] { compare(bad_target, bad_target); }, {"token 3", "vocabulary of 3"});
  EvalRun empty_vocab;
  lowp::test::expect_error([&] { compare(empty_vocab, empty_vocab); }, {"vocabulary size 0"});
}

}  // namespace
