// `lowp generate`'s sampler (lowp::accuracy::sample_token) draws from softmax(logits / T):
// Pearson's chi-square goodness of fit against the distribution computed here in long double,
// with the critical value from the chi-square distribution (Boost.Math). The draws are
// deterministic (fixed seeds), so each case passes or fails the same way every run; the same
// counts are also checked to reject the distributions a wrong sampler would follow (T ignored,
// T multiplying instead of dividing), so the test has the power to fail.
#include <gtest/gtest.h>

#include <regex>

#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cli/cli_run.hpp"
#include "lowp/accuracy/sample.hpp"
#include "lowp/numerics/error.hpp"

namespace {

using lowp::accuracy::sample_token;

const std::vector<float> kLogits = {1.5f, 1.0f, 0.3f, 0.0f, -0.4f, -1.2f};
constexpr std::size_t kDraws = 20000;
constexpr double kAlpha = 1e-3;  // per case

// softmax(logits * factor) in long double: the oracle.
std::vector<long double> softmax(const std::vector<float>& logits, long double factor) {
  std::vector<long double> p(logits.size());
  long double z = 0;
  for (std::size_t i = 0; i < p.size(); ++i) z += p[i] = std::exp(static_cast<long double>(logits[i]) * factor);
  for (auto& x : p) x /= z;
  return p;
}

double chi_square(const std::vector<std::size_t>& counts, const std::vector<long double>& p) {
  long double x2 = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const long double e = p[i] * kDraws;
    x2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return static_cast<double>(x2);
}

double critical_value(std::size_t bins) {
  const boost::math::chi_squared dist(static_cast<double>(bins - 1));
  return boost::math::quantile(boost::math::complement(dist, kAlpha));
}

// by_position: one seed, positions 0..kDraws-1 (a generated sequence); else position 7, seeds
// 0..kDraws-1 (many runs of `lowp generate --seed S`).
std::vector<std::size_t> draw(double t, bool by_position) {
  std::vector<std::size_t> counts(kLogits.size(), 0);
  for (std::size_t i = 0; i < kDraws; ++i) {
    const int k = by_position ? sample_token(kLogits, t, 12345, i) : sample_token(kLogits, t, i, 7);
    EXPECT_GE(k, 0);
    EXPECT_LT(static_cast<std::size_t>(k), kLogits.size());
    ++counts[static_cast<std::size_t>(k)];
  }
  return counts;
}

class SampleFit : public ::testing::TestWithParam<std::tuple<double, bool>> {};

TEST_P(SampleFit, FollowsSoftmaxOverTemperature) {
  const auto [t, by_position] = GetParam();
  // Every expected count is >= 5 (the smallest, T = 0.5 on the last logit, is ~58).
  const std::vector<std::size_t> counts = draw(t, by_position);
  const double crit = critical_value(kLogits.size());
  const double fit = chi_square(counts, softmax(kLogits, 1.0L / t));
  EXPECT_LT(fit, crit) << "T=" << t;
  // The alternatives a wrong sampler would follow are rejected by the same counts.
  if (t != 1.0) {
    EXPECT_GT(chi_square(counts, softmax(kLogits, 1.0L)), crit) << "T ignored is not rejected at T=" << t;
    EXPECT_GT(chi_square(counts, softmax(kLogits, static_cast<long double>(t))), crit)
        << "logits * T is not rejected at T=" << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Temperatures, SampleFit,
                         ::testing::Combine(::testing::Values(0.5, 1.0, 2.5), ::testing::Bool()));

TEST(Sample, TemperatureZeroIsTheFirstLargestLogit) {
  const std::vector<float> l = {1.0f, 3.0f, 3.0f, 0.0f};
  for (std::uint64_t seed = 0; seed < 4; ++seed) EXPECT_EQ(sample_token(l, 0.0, seed, seed), 1);
}

TEST(Sample, SameSeedSameDrawsOtherSeedOtherDraws) {
  auto sequence = [](std::uint64_t seed) {
    std::vector<int> s;
    for (std::uint64_t pos = 0; pos < 64; ++pos) s.push_back(sample_token(kLogits, 1.0, seed, pos));
    return s;
  };
  EXPECT_EQ(sequence(3), sequence(3));
  EXPECT_NE(sequence(3), sequence(4));
}

TEST(Sample, EmptyRowThrows) { EXPECT_THROW(sample_token({}, 1.0, 1, 0), lowp::Error); }

TEST(Sample, GenerateOutputChangesWithTheSeed) {
  auto gen = [](const char* seed) {
    return lowp::test::lowp_run(
        {"generate", "--model", "shakespeare", "--max-tokens", "40", "--temperature", "1", "--seed", seed});
  };
  const auto a = gen("3"), b = gen("4"), a2 = gen("3");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, a2.out);
  EXPECT_NE(a.out, b.out);
}

// --timing adds one stderr line counting the generated tokens (greedy from BOS: shakespeare's
// model never samples BOS, so all --max-tokens of them) and nothing to stdout.
TEST(Sample, GenerateTimingLine) {
  const auto plain = lowp::test::lowp_run({"generate", "--model", "shakespeare", "--max-tokens", "12"});
  const auto timed = lowp::test::lowp_run({"generate", "--model", "shakespeare", "--max-tokens", "12", "--timing"});
  ASSERT_EQ(timed.code, 0) << timed.err;
  EXPECT_EQ(timed.out, plain.out);
  EXPECT_TRUE(std::regex_match(timed.err, std::regex("generated 12 tokens in [0-9]+\\.[0-9]{3} s: [0-9]+\\.[0-9]{2} tokens/s\n")))
      << timed.err;
}

}  // namespace
