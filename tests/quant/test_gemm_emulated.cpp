// gemm_emulated against an independent Boost.Multiprecision accumulator (lowp::oracle), a
// plain float32 loop, and the DeepSeek-V3 promotion effect.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "lowp/numerics/oracle.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/gemm.hpp"
#include "support/test_support.hpp"

namespace {

using lowp::Round;
using lowp::quant::Accumulation;
using Real = lowp::oracle::Real;
namespace mp = boost::multiprecision;
// The oracle's 128 bits do not hold the exact sum of terms 2^160 apart: 1024 bits do.
using Big = mp::number<mp::cpp_bin_float<1024, mp::digit_base_2, void, std::int32_t, -30000, 30000>,
                       mp::et_off>;

// lowp::oracle::bracket for a Big (same floor-based method); its neighbours fit a Real.
lowp::oracle::Bracket big_bracket(int precision, int emin, const Big& x) {
  lowp::oracle::Bracket b;
  b.negative = x < 0;
  const Big a = abs(x);
  if (a == 0) return b;
  int fe = 0;
  frexp(a, &fe);
  const int qexp = std::max(fe - 1, emin) - (precision - 1);
  const Big t = ldexp(a, -qexp);
  const Big k = floor(t), frac = t - k;
  b.lo = Real(ldexp(k, qexp));
  b.exact = frac == 0;
  b.hi = b.exact ? b.lo : Real(ldexp(k + 1, qexp));
  b.cmp_half = frac < 0.5 ? -1 : (frac == 0.5 ? 0 : 1);
  b.frac32 = static_cast<std::uint32_t>(floor(ldexp(frac, 32)));
  b.lo_odd = floor(ldexp(k, -1)) != ldexp(k, -1);  // precision >= 2: the code's parity
  return b;
}

// The documented semantics, written from scratch: exact products, the running sum rounded to
// (man_bits + 1) significant bits with IEEE exponent range after every addition (decided by
// lowp::oracle::round_magnitude), promotion into a float32 total every `promote_every`.
float oracle_dot(const float* a, const float* b, std::size_t K, const Accumulation& acc,
                 std::uint64_t first_index) {
  const int emax = (1 << (acc.exp_bits - 1)) - 1;
  const Real max = ldexp(Real(2) - ldexp(Real(1), -acc.man_bits), emax);
  const auto key = lowp::rng_key(acc.seed);
  float total = 0.0f;
  Real part = 0;
  std::size_t count = 0;
  for (std::size_t k = 0; k < K; ++k) {
    const Big exact = Big(part) + Big(a[k]) * Big(b[k]);
    const auto br = big_bracket(acc.man_bits + 1, 1 - emax, exact);
    Real mag =
        lowp::oracle::round_magnitude(br, acc.round, lowp::random_bits(key, first_index + k));
    EXPECT_LE(mag, max) << "test inputs are meant to stay in range";
    part = br.negative ? Real(-mag) : mag;
    if (acc.promote_every && ++count == acc.promote_every) {
      total += part.convert_to<float>();
      part = 0;
      count = 0;
    }
  }
  return acc.promote_every ? (count ? total + part.convert_to<float>() : total)
                           : part.convert_to<float>();
}

// Values spread over 2^[lo, hi] with random signs, so that alignment, cancellation and (with
// 5 exponent bits) subnormal sums all occur.
// `bits` significant bits: 24 for general values, 3 to make exact ties frequent.
std::vector<float> spread(std::size_t n, int lo, int hi, int bits, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<std::uint32_t> m(1u << (bits - 1), (1u << bits) - 1);
  std::uniform_int_distribution<int> e(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = std::ldexp(static_cast<float>(m(g)), e(g) - bits + 1) * ((g() & 1) ? -1.0f : 1.0f);
  return v;
}

TEST(GemmEmulated, MatchesMultiprecisionOracle) {
  const std::size_t M = 3, N = 4, K = 40;
  const Round modes[] = {Round::nearest_even, Round::nearest_away, Round::toward_zero,
                         Round::toward_pos,   Round::toward_neg,   Round::stochastic,
                         Round::odd};
  std::uint32_t seed = 5;
  for (int exp_bits : {5, 8})
    for (int man_bits : {1, 3, 10, 13, 23})
      for (Round mode : modes)
        for (std::size_t promote : {std::size_t{0}, std::size_t{7}})
          for (int bits : {24, 3}) {
            // 5 exponent bits: products within 2^[-24, 4] (sums stay below 65504, some underflow);
            // 8: products 2^160 apart, far beyond the sum's 128-bit window.
            const int lo = exp_bits == 5 ? -12 : -40, hi = exp_bits == 5 ? 1 : 40;
            const auto A = spread(M * K, lo, hi, bits, seed++);
            const auto B = spread(N * K, lo, hi, bits, seed++);
            Accumulation acc{man_bits, exp_bits, mode, promote, seed};
            std::vector<float> C(M * N);
            lowp::quant::gemm_emulated(A.data(), B.data(), C.data(), M, N, K, acc);
            std::size_t bad = 0;
            for (std::size_t i = 0; i < M; ++i)
              for (std::size_t j = 0; j < N; ++j) {
                const float want = oracle_dot(&A[i * K], &B[j * K], K, acc, (i * N + j) * K);
                bad += !(C[i * N + j] == want);
              }
            EXPECT_EQ(bad, 0u) << "e" << exp_bits << "m" << man_bits << " "
                               << lowp::round_name(mode) << " promote " << promote << " input bits "
                               << bits;
          }
}

TEST(GemmEmulated, TinyTermStillRoundsDirected) {
  // 1 + 2^-120: inexact, so toward +inf gives the next value up and odd sets the last bit.
  const float a[] = {1.0f, 0x1p-60f}, b[] = {1.0f, 0x1p-60f};
  float c = 0;
  lowp::quant::gemm_emulated(a, b, &c, 1, 1, 2, {10, 8, Round::toward_pos, 0, 0});
  EXPECT_EQ(c, 1.0f + 0x1p-10f);
  lowp::quant::gemm_emulated(a, b, &c, 1, 1, 2, {10, 8, Round::odd, 0, 0});
  EXPECT_EQ(c, 1.0f + 0x1p-10f);
  lowp::quant::gemm_emulated(a, b, &c, 1, 1, 2, {10, 8, Round::toward_neg, 0, 0});
  EXPECT_EQ(c, 1.0f);
}

TEST(GemmEmulated, Float32NearestIsSequentialFma) {
  // 23 mantissa bits, 8 exponent bits, nearest-even: exactly a float32 fused multiply-add
  // loop, in order; and with products exact in float32 (12-bit significands), the naive
  // s += a * b loop.
  const std::size_t M = 5, N = 6, K = 1000;
  const auto A = lowp::test::normal_floats(M * K, 31), B = lowp::test::normal_floats(N * K, 32);
  std::vector<float> A12(A), B12(B);
  for (auto* v : {&A12, &B12})
    for (auto& x : *v) x = std::ldexp(std::round(std::ldexp(x, 8)), -8);  // |x| < 2^4: <= 12 bits
  Accumulation acc{23, 8, Round::nearest_even, 0, 0};
  std::vector<float> C(M * N), C12(M * N);
  lowp::quant::gemm_emulated(A.data(), B.data(), C.data(), M, N, K, acc);
  lowp::quant::gemm_emulated(A12.data(), B12.data(), C12.data(), M, N, K, acc);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      float s = 0.0f, t = 0.0f;
      for (std::size_t k = 0; k < K; ++k) {
        s = std::fma(A[i * K + k], B[j * K + k], s);
        t += A12[i * K + k] * B12[j * K + k];
      }
      EXPECT_EQ(std::bit_cast<std::uint32_t>(C[i * N + j]), std::bit_cast<std::uint32_t>(s));
      EXPECT_EQ(std::bit_cast<std::uint32_t>(C12[i * N + j]), std::bit_cast<std::uint32_t>(t));
    }
}

TEST(GemmEmulated, PromotionRecoversAccuracyOnLongK) {
  // DeepSeek-V3: FP8 tensor cores keep ~14 bits; summing 4096 positive products with
  // truncation loses several percent, promoting every 128 products to float32 recovers most.
  const std::size_t M = 2, N = 3, K = 4096;
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> A(M * K), B(N * K);
  for (auto& x : A) x = u(g);
  for (auto& x : B) x = u(g);
  Accumulation plain{13, 8, Round::toward_zero, 0, 0}, promoted{13, 8, Round::toward_zero, 128, 0};
  std::vector<float> Cp(M * N), Cq(M * N);
  lowp::quant::gemm_emulated(A.data(), B.data(), Cp.data(), M, N, K, plain);
  lowp::quant::gemm_emulated(A.data(), B.data(), Cq.data(), M, N, K, promoted);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double exact = 0;
      for (std::size_t k = 0; k < K; ++k) exact += double{A[i * K + k]} * double{B[j * K + k]};
      const double err_plain = std::fabs(Cp[i * N + j] - exact) / exact;
      const double err_promoted = std::fabs(Cq[i * N + j] - exact) / exact;
      // Truncation loses about half an ulp per addition: ~8% at sums near 1000 (ulp 2^-3),
      // ~0.3% for partial sums below 32 (ulp 2^-8) promoted every 128 products.
      EXPECT_GT(err_plain, 3e-2);
      EXPECT_LT(err_promoted, 5e-3);
      EXPECT_LT(err_promoted * 10, err_plain);
    }
}

TEST(GemmEmulated, OverflowAndSpecials) {
  // e5m10: 256 * 256 = 65536 exceeds the largest finite 65504.
  const float a[] = {256.0f}, b[] = {256.0f};
  float c = 0;
  lowp::quant::gemm_emulated(a, b, &c, 1, 1, 1, {10, 5, Round::nearest_even, 0, 0});
  EXPECT_EQ(c, std::numeric_limits<float>::infinity());
  lowp::quant::gemm_emulated(a, b, &c, 1, 1, 1, {10, 5, Round::toward_zero, 0, 0});
  EXPECT_EQ(c, 65504.0f);
  const float inf = std::numeric_limits<float>::infinity();
  const float x[] = {1.0f, inf, 2.0f}, y[] = {1.0f, 1.0f, 1.0f}, z[] = {1.0f, 0.0f, 1.0f};
  lowp::quant::gemm_emulated(x, y, &c, 1, 1, 3, {});
  EXPECT_EQ(c, inf);
  lowp::quant::gemm_emulated(x, z, &c, 1, 1, 3, {});
  EXPECT_TRUE(std::isnan(c));
}

TEST(GemmEmulated, BadArguments) {
  float a = 1, c = 0;
  using lowp::test::expect_error;
  expect_error(
      [&] {
        lowp::quant::gemm_emulated(&a, &a, &c, 1, 1, 1, {0, 8, Round::nearest_even, 0, 0});
      },
      {"man_bits = 0"});
  expect_error(
      [&] {
        lowp::quant::gemm_emulated(&a, &a, &c, 1, 1, 1, {24, 8, Round::nearest_even, 0, 0});
      },
      {"man_bits = 24"});
  expect_error(
      [&] {
        lowp::quant::gemm_emulated(&a, &a, &c, 1, 1, 1, {10, 9, Round::nearest_even, 0, 0});
      },
      {"exp_bits = 9"});
  expect_error([&] { lowp::quant::gemm_emulated(nullptr, &a, &c, 1, 1, 1, {}); }, {"A is null"});
}

}  // namespace
