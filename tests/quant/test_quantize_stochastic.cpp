// Stochastic rounding through the scales (unbiased on average) and determinism: the same
// codes, scales and fake-quant values at one and at two OpenMP threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "lowp/quant/quantize.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

// Mean over seeds of fake_quant(x) converges to x: the bias is far below the rounding step.
// (Checked on the elements that lie between two representable values, not on clipped ones.)
TEST(QuantizeStochastic, QuantizeDequantizeMeanIsUnbiased) {
  for (const char* base : {"e4m3:row:stochastic", "mxfp4:stochastic", "nvfp4:stochastic", "int8:b32:int:stochastic"}) {
    SCOPED_TRACE(base);
    const std::size_t rows = 4, cols = 64, n = rows * cols;
    std::vector<float> x = test::normal_floats(n, 9);
    const QuantSpec spec = parse_quant_spec(base);
    std::vector<double> mean(n, 0.0), nearest_err(n, 0.0);
    const int seeds = 400;
    double step_sum = 0;  // the mean distance between the two candidates, for the tolerance
    for (int s = 0; s < seeds; ++s) {
      QuantSpec sp = spec;
      sp.seed = static_cast<std::uint64_t>(s) * 7919 + 1;
      std::vector<float> f = x;
      fake_quant(sp, f.data(), rows, cols);
      for (std::size_t i = 0; i < n; ++i) mean[i] += f[i];
    }
    QuantSpec up = spec, down = spec;
    up.cast.round = Round::toward_pos;
    down.cast.round = Round::toward_neg;
    std::vector<float> hi = x, lo = x;
    fake_quant(up, hi.data(), rows, cols);
    fake_quant(down, lo.data(), rows, cols);
    double bias = 0;
    for (std::size_t i = 0; i < n; ++i) {
      mean[i] /= seeds;
      const double step = static_cast<double>(hi[i]) - lo[i];
      // Elements beyond the largest value are clipped (MX's floor rule, NVFP4's rounded block
      // scale): saturation is biased by design, so only elements with two candidates count.
      if (step == 0) continue;
      step_sum += step;
      // Per element: within 5 standard deviations of a Bernoulli mean (sd <= step / 2 / sqrt(N)).
      EXPECT_LE(std::fabs(mean[i] - x[i]), 5 * step / 2 / std::sqrt(seeds) + 1e-6 * std::fabs(x[i])) << i;
      bias += mean[i] - x[i];
    }
    // Averaged over elements too: the bias is a small fraction of the average step.
    EXPECT_LT(std::fabs(bias / n), 0.02 * step_sum / n);
    EXPECT_GT(step_sum, 0.0);
  }
}

TEST(QuantizeStochastic, DifferentSeedsGiveDifferentCodes) {
  const std::vector<float> x = test::normal_floats(1024, 10);
  QuantSpec a = parse_quant_spec("mxfp4:stochastic"), b = a;
  a.seed = 1;
  b.seed = 2;
  EXPECT_NE(quantize(a, x.data(), 8, 128).codes, quantize(b, x.data(), 8, 128).codes);
  EXPECT_EQ(quantize(a, x.data(), 8, 128).codes, quantize(a, x.data(), 8, 128).codes);
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

TEST(QuantizeStochastic, SameResultsAtOneAndTwoThreads) {
  // 384 x 640 = 245760 elements: parallel amax, scale and cast passes, several pieces.
  const std::size_t rows = 384, cols = 640;
  const std::vector<float> x = test::normal_floats(rows * cols, 12);
  const int saved = omp_get_max_threads();
  for (const char* s : {"mxfp4:stochastic", "nvfp4:stochastic", "e4m3:tensor:stochastic", "e4m3:col:stochastic",
                        "e5m2:row", "e4m3:t128:stochastic", "e2m3:b32:rceil:stochastic", "e2m1:b64:mse", "bf16:stochastic"}) {
    SCOPED_TRACE(s);
    QuantSpec spec = parse_quant_spec(s);
    spec.seed = 99;
    std::vector<QuantizedTensor> q;
    std::vector<std::vector<float>> fq;
    for (const int threads : {1, 2}) {
      omp_set_num_threads(threads);
      q.push_back(quantize(spec, x.data(), rows, cols));
      fq.push_back(x);
      fake_quant(spec, fq.back().data(), rows, cols);
    }
    omp_set_num_threads(saved);
    EXPECT_EQ(q[0].codes, q[1].codes);
    EXPECT_TRUE(bitwise_equal(q[0].scales, q[1].scales));
    EXPECT_TRUE(bitwise_equal(q[0].multipliers, q[1].multipliers));
    EXPECT_EQ(q[0].tensor_scale, q[1].tensor_scale);
    EXPECT_TRUE(bitwise_equal(fq[0], fq[1]));
    // And fake_quant is dequantize(quantize), bit for bit.
    std::vector<float> d(x.size());
    dequantize(q[0], d.data());
    EXPECT_TRUE(bitwise_equal(d, fq[0]));
  }
}

}  // namespace
}  // namespace lowp::quant
