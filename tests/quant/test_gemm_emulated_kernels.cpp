// gemm_emulated's fast paths (the scalar fast step and each SIMD ISA this CPU runs) against its
// exact 128-bit definition, bitwise, over random shapes, every Accumulation setting and data
// made to hit the fast step's fallbacks. (The exact step itself is checked against
// Boost.Multiprecision in test_gemm_emulated.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../../quant/src/gemm/gemm_emulated_kernels.hpp"
#include "lowp/numerics/cpu.hpp"

namespace {

using lowp::Round;
using lowp::quant::Accumulation;
using lowp::quant::detail::EmuPath;

const Round kModes[] = {Round::nearest_even, Round::nearest_away, Round::toward_zero, Round::toward_pos,
                        Round::toward_neg,   Round::stochastic,   Round::odd};

std::vector<EmuPath> fast_paths() {
  std::vector<EmuPath> p{EmuPath::scalar, EmuPath::fast};
  if (lowp::isa_available(lowp::Isa::avx2)) p.push_back(EmuPath::avx2);
  if (lowp::isa_available(lowp::Isa::avx512)) p.push_back(EmuPath::avx512);
  return p;
}

const char* path_name(EmuPath p) {
  switch (p) {
    case EmuPath::exact: return "exact";
    case EmuPath::scalar: return "scalar";
    case EmuPath::avx2: return "avx2";
    case EmuPath::avx512: return "avx512";
    case EmuPath::fast: return "fast";
  }
  return "?";
}

// Values around the accumulator's range (products near its subnormals, its largest values and
// beyond), few-bit values whose sums land on grid points and midpoints, factors 1 +- 2^-23
// whose products are 47 bits long (sums inexact in double), exact negations (cancellation),
// tiny terms after large ones, zeros of both signs, float subnormals and, when `specials`,
// infinities and NaNs.
struct Gen {
  std::mt19937 g;
  int lo, hi;  // exponent range of the operands
  bool specials;

  float value() {
    const std::uint32_t c = g() % 100;
    const float sign = (g() & 1) ? -1.0f : 1.0f;
    const int e = lo + static_cast<int>(g() % static_cast<std::uint32_t>(hi - lo + 1));
    if (c < 35) {  // 1..24 random significant bits
      const int bits = 1 + static_cast<int>(g() % 24);
      const auto m = (g() >> (32 - bits)) | (1u << (bits - 1));
      return sign * std::ldexp(static_cast<float>(m), e - bits + 1);
    }
    if (c < 50) return sign * std::ldexp(static_cast<float>(1 + g() % 4), e);  // grid-ish
    if (c < 62) return sign * std::ldexp(1.0f + ((g() & 1) ? 0x1p-23f : -0x1p-24f), e);
    if (c < 70) return sign * 0.0f;
    if (c < 76) return sign * std::ldexp(1.0f, lo - 30 - static_cast<int>(g() % 40));  // tiny
    if (c < 80) return sign * std::ldexp(static_cast<float>(1 + g() % 255), -149);     // subnormal
    if (c < 82) return sign * std::ldexp(1.0f, hi + static_cast<int>(g() % 8));        // large
    if (specials && c < 84) {
      const std::uint32_t s = g() % 3;
      return s == 0   ? sign * std::numeric_limits<float>::infinity()
             : s == 1 ? std::numeric_limits<float>::quiet_NaN()
                      : sign * std::numeric_limits<float>::max();
    }
    return sign * std::ldexp(static_cast<float>(1 + g() % 8), e);
  }
  std::vector<float> matrix(std::size_t rows, std::size_t K) {
    std::vector<float> v(rows * K);
    for (auto& x : v) x = value();
    return v;
  }
};

// Products k, k+1 cancel exactly in a random subset of pairs: a[k+1] = a[k], b[k+1] = -b[k].
void add_cancellation(std::vector<float>& A, std::vector<float>& B, std::size_t M, std::size_t N,
                      std::size_t K, std::mt19937& g) {
  for (std::size_t k = 0; k + 1 < K; k += 2) {
    if (g() % 3) continue;
    for (std::size_t i = 0; i < M; ++i) A[i * K + k + 1] = A[i * K + k];
    for (std::size_t j = 0; j < N; ++j) B[j * K + k + 1] = -B[j * K + k];
  }
}

// Bitwise equality, except that any NaN equals any NaN: which operand's NaN an IEEE addition
// returns (its sign, its payload) depends on the operand order the compiler picks.
// `first` describes the first difference.
std::size_t mismatches(const std::vector<float>& x, const std::vector<float>& y, std::string* first) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::bit_cast<std::uint32_t>(x[i]) != std::bit_cast<std::uint32_t>(y[i]) &&
        !(std::isnan(x[i]) && std::isnan(y[i])) && bad++ == 0) {
      std::ostringstream os;
      os << std::hexfloat << "element " << i << ": " << x[i] << " vs " << y[i];
      *first = os.str();
    }
  return bad;
}

TEST(GemmEmulatedKernels, FastPathsMatchExactBitwise) {
  const auto paths = fast_paths();
  std::mt19937 shapes(2024);
  std::uint32_t seed = 1;
  std::size_t cases = 0, nonfinite = 0;
  for (int exp_bits = 2; exp_bits <= 8; ++exp_bits)
    for (int man_bits = 1; man_bits <= 23; ++man_bits)
      for (Round mode : kModes)
        for (std::size_t promote : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{128}}) {
          const std::size_t M = 1 + shapes() % 6, N = 1 + shapes() % 13, K = 1 + shapes() % 150;
          const int emax = (1 << (exp_bits - 1)) - 1, emin = 1 - emax;
          // Operand exponents so that products span the format's subnormals to past its top.
          Gen gen{std::mt19937(seed++), (emin - man_bits - 4) / 2 - 1, (emax + 2) / 2, seed % 4 == 0};
          auto A = gen.matrix(M, K), B = gen.matrix(N, K);
          add_cancellation(A, B, M, N, K, gen.g);
          const Accumulation acc{man_bits, exp_bits, mode, promote, seed};
          std::vector<float> want(M * N), got(M * N);
          lowp::quant::detail::gemm_emulated_path(EmuPath::exact, A.data(), B.data(), want.data(), M, N, K,
                                                  acc);
          for (float w : want) nonfinite += !std::isfinite(w);
          for (EmuPath p : paths) {
            lowp::quant::detail::gemm_emulated_path(p, A.data(), B.data(), got.data(), M, N, K, acc);
            std::string first;
            EXPECT_EQ(mismatches(want, got, &first), 0u)
                << first << " " << path_name(p) << " e" << exp_bits << "m" << man_bits << " "
                << lowp::round_name(mode) << " promote " << promote << " shape " << M << "x" << N << "x" << K;
          }
          ++cases;
        }
  EXPECT_GT(nonfinite, 0u);  // overflow, Inf and NaN did occur
  EXPECT_EQ(cases, 7u * 23u * 7u * 4u);
}

// One product into a given accumulator value, on every path: the cases the fast step hands to
// the exact step (s a format value or a midpoint with the double sum inexact), with results
// worked out by hand.
float one_step(EmuPath p, float a0, float b0, float a1, float b1, const Accumulation& acc) {
  const float A[] = {a0, a1}, B[] = {b0, b1};
  float c = 0;
  lowp::quant::detail::gemm_emulated_path(p, A, B, &c, 1, 1, 2, acc);
  return c;
}

TEST(GemmEmulatedKernels, FallbackCasesOnEveryPath) {
  for (EmuPath p : fast_paths()) {
    SCOPED_TRACE(path_name(p));
    for (int mb : {6, 10, 13, 20}) {
      const float ulp = std::ldexp(1.0f, -mb);
      // 1 - 2^-120: the double sum is 1 (a format value), the exact sum just below.
      const float t = 0x1p-60f;
      EXPECT_EQ(one_step(p, 1, 1, t, -t, {mb, 8, Round::toward_zero, 0, 0}), 1 - ulp / 2);
      EXPECT_EQ(one_step(p, 1, 1, t, -t, {mb, 8, Round::toward_neg, 0, 0}), 1 - ulp / 2);
      EXPECT_EQ(one_step(p, 1, 1, t, -t, {mb, 8, Round::toward_pos, 0, 0}), 1.0f);
      EXPECT_EQ(one_step(p, 1, 1, t, -t, {mb, 8, Round::odd, 0, 0}), 1 - ulp / 2);
      EXPECT_EQ(one_step(p, 1, 1, t, t, {mb, 8, Round::toward_pos, 0, 0}), 1 + ulp);
      EXPECT_EQ(one_step(p, 1, 1, t, t, {mb, 8, Round::odd, 0, 0}), 1 + ulp);
      EXPECT_EQ(one_step(p, 1, 1, t, t, {mb, 8, Round::nearest_even, 0, 0}), 1.0f);
      // 1 + (ulp/2)(1 - 2^-46): the double sum is the midpoint 1 + ulp/2, the exact sum below it.
      const float h = ulp / 2 * (1 + 0x1p-23f), d = 1 - 0x1p-23f;
      if (mb >= 7) {
        EXPECT_EQ(one_step(p, 1, 1, h, d, {mb, 8, Round::nearest_away, 0, 0}), 1.0f);
        EXPECT_EQ(one_step(p, 1, 1, h, d, {mb, 8, Round::nearest_even, 0, 0}), 1.0f);
        // 1 + ulp + the same: midpoint 1 + 3ulp/2, exact sum below it, round down to 1 + ulp.
        EXPECT_EQ(one_step(p, 1 + ulp, 1, h, d, {mb, 8, Round::nearest_even, 0, 0}), 1 + ulp);
      }
    }
  }
}

TEST(GemmEmulatedKernels, ZeroSignsAndSpecials) {
  const float inf = std::numeric_limits<float>::infinity();
  for (EmuPath p : fast_paths()) {
    SCOPED_TRACE(path_name(p));
    for (Round r : kModes) {
      const Accumulation acc{10, 5, r, 0, 0};
      const bool down = r == Round::toward_neg;
      // The accumulator starts at +0. +0 + -0 and an exact cancellation give -0 only when
      // rounding toward -inf; -0 + -0 is -0.
      EXPECT_EQ(std::signbit(one_step(p, 0.0f, 1, -0.0f, 1, acc)), down);
      EXPECT_EQ(std::signbit(one_step(p, 3, 1, -3, 1, acc)), down);
      EXPECT_EQ(std::signbit(one_step(p, -0.0f, 1, -0.0f, 1, acc)), down);
      const float m0[] = {-0.0f}, one[] = {1.0f};
      float c = 0;
      lowp::quant::detail::gemm_emulated_path(p, m0, one, &c, 1, 1, 1, acc);
      EXPECT_EQ(std::signbit(c), down);  // +0 + -0
      lowp::quant::detail::gemm_emulated_path(p, m0, one, &c, 1, 1, 1, {10, 5, r, 1, 0});
      EXPECT_FALSE(std::signbit(c));  // promoted: the float32 total +0 plus that, to nearest
      EXPECT_EQ(one_step(p, inf, 1, 5, 1, acc), inf);
      EXPECT_TRUE(std::isnan(one_step(p, inf, 1, -inf, 1, acc)));
      EXPECT_TRUE(std::isnan(one_step(p, inf, 0, 1, 1, acc)));
    }
  }
}

}  // namespace

namespace {

TEST(GemmEmulatedKernels, SameBitsAtOneAndTwoThreadsAndAsExact) {
  // 2^21 products: the fast paths split them over two threads.
  const std::size_t M = 61, N = 131, K = 263;
  Gen gen{std::mt19937(99), -8, 6, false};
  const auto A = gen.matrix(M, K), B = gen.matrix(N, K);
  const Accumulation acc{13, 8, Round::toward_zero, 128, 0};
  std::vector<float> want(M * N), got(M * N);
  lowp::quant::detail::gemm_emulated_path(EmuPath::exact, A.data(), B.data(), want.data(), M, N, K, acc, 1);
  for (EmuPath p : fast_paths())
    for (int threads : {1, 2}) {
      std::fill(got.begin(), got.end(), -1.0f);
      lowp::quant::detail::gemm_emulated_path(p, A.data(), B.data(), got.data(), M, N, K, acc, threads);
      std::string first;
      EXPECT_EQ(mismatches(want, got, &first), 0u) << first << " " << path_name(p) << " threads " << threads;
    }
}

}  // namespace

namespace {

using lowp::quant::detail::EmuFormat;
using lowp::quant::detail::EmuKernel;

std::vector<const EmuKernel*> simd_kernels() {
  std::vector<const EmuKernel*> k;
  if (lowp::isa_available(lowp::Isa::avx2)) k.push_back(&lowp::quant::detail::kEmuAvx2);
  if (lowp::isa_available(lowp::Isa::avx512)) k.push_back(&lowp::quant::detail::kEmuAvx512);
  return k;
}

// Operands whose every product is a multiple of 2^-126 and whose sums stay far below 2^127, the
// range the truncating tile is allowed: E4M3 values times a random float scale, 24-bit random
// values, exact negations of the previous product (cancellation), and after a large value a tiny
// one (2^-25..2^-34 of it) of either sign, so that the double sum is inexact and lies just below
// or above a format value: rounding it to nearest instead of toward zero gives the next value.
float safe_value(std::mt19937& g, float scale) {
  const float sign = (g() & 1) ? -1.0f : 1.0f;
  switch (g() % 4) {
    case 0: return sign * scale * std::ldexp(1.0f + static_cast<float>(g() % 8) / 8, -6 + static_cast<int>(g() % 15));
    case 1: return sign * std::ldexp(static_cast<float>((g() >> 8) | 0x800000u), -23 - static_cast<int>(g() % 20));
    case 2: return sign * std::ldexp(1.0f, -25 - static_cast<int>(g() % 10));
    default: return sign * static_cast<float>(1 + g() % 3);
  }
}

// The truncating tile alone against the exact step, one chain per output: a scalar reference
// beside the SIMD kernel, every man_bits.
TEST(GemmEmulatedKernels, TruncatingTileIsTheExactStepTowardZero) {
  const auto kernels = simd_kernels();
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 on this CPU: the truncating tile cannot run";
  std::mt19937 g(7);
  std::size_t differs_from_nearest = 0;
  for (const EmuKernel* kern : kernels)
    for (int man_bits = 1; man_bits <= 23; ++man_bits) {
      const EmuFormat f = lowp::quant::detail::emu_format({man_bits, 8, Round::toward_zero, 0, 0});
      const EmuFormat fn = lowp::quant::detail::emu_format({man_bits, 8, Round::nearest_even, 0, 0});
      const std::size_t len = 1 + g() % 200, mr = kern->mr, nr = kern->nr;
      std::vector<float> ap(len * mr), bp(len * nr);
      const float sa = 0.01f + static_cast<float>(g() % 1000) / 7, sb = 0.003f + static_cast<float>(g() % 999) / 13;
      for (std::size_t k = 0; k < len; ++k) {
        for (std::size_t r = 0; r < mr; ++r) ap[k * mr + r] = safe_value(g, sa);
        for (std::size_t l = 0; l < nr; ++l) bp[k * nr + l] = safe_value(g, sb);
        if (k > 0 && g() % 4 == 0) {  // cancel the previous product
          for (std::size_t r = 0; r < mr; ++r) ap[k * mr + r] = ap[(k - 1) * mr + r];
          for (std::size_t l = 0; l < nr; ++l) bp[k * nr + l] = -bp[(k - 1) * nr + l];
        }
      }
      std::vector<float> got(mr * nr);
      kern->truncate(ap.data(), bp.data(), len, f, got.data());
      for (std::size_t r = 0; r < mr; ++r)
        for (std::size_t l = 0; l < nr; ++l) {
          double want = 0, nearest = 0;
          for (std::size_t k = 0; k < len; ++k) {
            const float a = ap[k * mr + r], b = bp[k * nr + l];
            want = lowp::quant::detail::emu_step_exact(want, a, b, f, 0);
            nearest = lowp::quant::detail::emu_step_exact(nearest, a, b, fn, 0);
          }
          differs_from_nearest += want != nearest;
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[r * nr + l]), std::bit_cast<std::uint32_t>(static_cast<float>(want)))
              << std::hexfloat << got[r * nr + l] << " vs " << want << " m" << man_bits << " row " << r
              << " column " << l << " len " << len;
        }
    }
  EXPECT_GT(differs_from_nearest, 0u);  // the data tells toward-zero from nearest
}

// The GEMM on DeepSeek-V3-like operands (E4M3 times a float scale per row, 13-bit accumulator
// promoted every 128 products: the blocks run on the truncating tile) with the same tiny terms,
// plus blocks past the tile's range on either side, by hand: a sum of 2^-127 (1 + 2^-13), below
// the smallest normal, truncates to the subnormal grid (2^-139) and keeps 2^-127; a product
// 2^128, beyond the largest value, saturates toward zero to it.
TEST(GemmEmulatedKernels, TruncatingBlocksAndTheirRangeLimits) {
  std::mt19937 g(11);
  const std::size_t M = 37, N = 45, K = 300;
  std::vector<float> A(M * K), B(N * K);
  for (std::size_t i = 0; i < M; ++i) {
    const float s = 0.001f * static_cast<float>(1 + g() % 997);
    for (std::size_t k = 0; k < K; ++k) A[i * K + k] = safe_value(g, s);
  }
  for (std::size_t j = 0; j < N; ++j) {
    const float s = 0.002f * static_cast<float>(1 + g() % 991);
    for (std::size_t k = 0; k < K; ++k) B[j * K + k] = safe_value(g, s);
  }
  const Accumulation acc{13, 8, Round::toward_zero, 128, 0};
  std::vector<float> want(M * N), got(M * N);
  lowp::quant::detail::gemm_emulated_path(EmuPath::exact, A.data(), B.data(), want.data(), M, N, K, acc, 1);
  for (EmuPath p : fast_paths()) {
    lowp::quant::detail::gemm_emulated_path(p, A.data(), B.data(), got.data(), M, N, K, acc, 2);
    std::string first;
    EXPECT_EQ(mismatches(want, got, &first), 0u) << first << " " << path_name(p);
  }
  const float tmin = 0x1p-126f, fmax = std::ldexp(2.0f - 0x1p-13f, 127);  // e8m13
  for (EmuPath p : fast_paths()) {
    SCOPED_TRACE(path_name(p));
    EXPECT_EQ(one_step(p, 0x1p-64f * (1 + 0x1p-13f), 0x1p-63f, 0, 0, {13, 8, Round::toward_zero, 0, 0}), tmin / 2);
    EXPECT_EQ(one_step(p, 0x1p64f, 0x1p64f, 0, 0, {13, 8, Round::toward_zero, 0, 0}), fmax);
  }
}

}  // namespace
