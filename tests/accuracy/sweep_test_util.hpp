// Helpers of the model-sweep tests (test_sweep_split.cpp, test_sweep_prefix.cpp): exact
// comparison of metrics, and a sweep split into rank shares run in one process.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "dist/comm.hpp"
#include "lowp/accuracy/metrics.hpp"
#include "sweep/split.hpp"

namespace lowp::test {

inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline void expect_same(const accuracy::Comparison& a, const accuracy::Comparison& b, const std::string& what) {
  const double x[] = {a.ppl, a.ppl_se, a.ref_ppl, a.ref_ppl_se, a.ln_ppl_ratio, a.ln_ppl_ratio_se, a.kld_mean,
                      a.kld_se, a.kld_median, a.kld_p99, a.kld_max, a.dp_mean, a.dp_rms, a.same_top1};
  const double y[] = {b.ppl, b.ppl_se, b.ref_ppl, b.ref_ppl_se, b.ln_ppl_ratio, b.ln_ppl_ratio_se, b.kld_mean,
                      b.kld_se, b.kld_median, b.kld_p99, b.kld_max, b.dp_mean, b.dp_rms, b.same_top1};
  for (std::size_t i = 0; i < std::size(x); ++i)
    EXPECT_TRUE(same_bits(x[i], y[i])) << what << " value " << i << ": " << x[i] << " vs " << y[i];
  EXPECT_EQ(a.tokens, b.tokens) << what;
  EXPECT_EQ(a.nonfinite, b.nonfinite) << what;
}

// Each of `ranks` shares run on its own and shipped through pack/unpack, as under mpirun.
inline accuracy::ModelSweep split_sweep(const accuracy::detail::SweepJob& job, int ranks) {
  namespace d = accuracy::detail;
  std::vector<d::SweepUnit> all;
  for (int r = 0; r < ranks; ++r) {
    const accuracy::dist::Range s = accuracy::dist::share(job.units(), r, ranks);
    for (auto& u : d::unpack(d::pack(d::run_units(job, s.begin, s.end, {})))) all.push_back(std::move(u));
  }
  return d::assemble(job, std::move(all));
}

}  // namespace lowp::test
