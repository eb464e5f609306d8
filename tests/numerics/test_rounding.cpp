// round_shift against the exact oracle (lowp/numerics/oracle.hpp) for random significands,
// shifts 0..80, every mode, both signs, random stochastic bits and code-parity offsets; the
// oracle itself on hand-worked cases; parse_round / round_name; the overflow rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "lowp/numerics/oracle.hpp"
#include "lowp/numerics/rounding.hpp"
#include "support/test_support.hpp"

namespace lowp {
namespace {

using oracle::Real;

constexpr Round kModes[] = {Round::nearest_even, Round::nearest_away, Round::toward_zero, Round::toward_pos,
                            Round::toward_neg,   Round::stochastic,   Round::odd};

using lowp::test::SplitMix;

// The oracle's answer for round_shift(sig, shift, mode, negative, rand, odd_base).
Real expected(std::uint64_t sig, int shift, Round mode, bool negative, std::uint32_t rand, bool odd_base) {
  Real x = ldexp(Real(sig), -shift);
  if (negative) x = -x;
  oracle::Bracket b = oracle::bracket(oracle::System::integers(), x);
  b.lo_odd = b.lo_odd != odd_base;  // the code's parity is the result's xor odd_base
  return oracle::round_magnitude(b, mode, rand);
}

std::string describe(std::uint64_t sig, int shift, Round mode, bool neg, std::uint32_t rand, bool odd_base) {
  return "sig=" + std::to_string(sig) + " shift=" + std::to_string(shift) + " mode=" +
         std::string(round_name(mode)) + " neg=" + std::to_string(neg) + " rand=" + std::to_string(rand) +
         " odd_base=" + std::to_string(odd_base);
}

TEST(RoundShift, RandomCasesMatchOracle) {
  SplitMix rng{1};
  int failures = 0;
  for (int i = 0; i < 300000 && failures < 10; ++i) {
    const int len = static_cast<int>(rng.next() % 65);  // significand bit length 0..64
    const std::uint64_t sig = len == 0 ? 0 : rng.next() >> (64 - len);
    const int shift = static_cast<int>(rng.next() % 81);
    const bool neg = rng.next() & 1, odd_base = rng.next() & 1;
    const auto rand = static_cast<std::uint32_t>(rng.next());
    for (Round m : kModes) {
      const std::uint64_t got = round_shift(sig, shift, m, neg, rand, odd_base);
      if (Real(got) != expected(sig, shift, m, neg, rand, odd_base)) {
        ADD_FAILURE() << describe(sig, shift, m, neg, rand, odd_base) << " gives " << got;
        ++failures;
      }
    }
  }
}

// Exact ties, values one unit off a tie, and the stochastic threshold rand = 2^32 - floor(f*2^32).
TEST(RoundShift, TiesAndThresholdsMatchOracle) {
  SplitMix rng{2};
  for (int shift = 1; shift <= 80; ++shift)
    for (int k = 0; k < 60; ++k) {
      const std::uint64_t q = rng.next() >> std::min(shift + 1, 63);
      std::uint64_t sig = shift < 64 ? (q << shift) : 0;
      if (shift <= 64) sig |= std::uint64_t{1} << (shift - 1);  // exactly half
      for (std::uint64_t delta : {std::uint64_t{0}, std::uint64_t{1}, ~std::uint64_t{0}}) {
        const std::uint64_t s = sig + delta;
        for (bool neg : {false, true})
          for (bool odd_base : {false, true}) {
            const std::uint32_t f32 = sr_fraction32(s & (shift >= 64 ? ~0ull : (1ull << shift) - 1), shift);
            const std::uint32_t threshold = 0u - f32;  // 2^32 - f32: the smallest rand that rounds up
            for (std::uint32_t rand : {0u, 0xffffffffu, threshold, threshold - 1u})
              for (Round m : kModes) {
                const std::uint64_t got = round_shift(s, shift, m, neg, rand, odd_base);
                ASSERT_EQ(Real(got), expected(s, shift, m, neg, rand, odd_base))
                    << describe(s, shift, m, neg, rand, odd_base);
              }
          }
      }
    }
}

TEST(RoundShift, NonPositiveShiftIsExact) {
  for (Round m : kModes) {
    EXPECT_EQ(round_shift(12345, 0, m, false, 7), 12345u);
    EXPECT_EQ(round_shift(5, -3, m, true, 7), 40u);
  }
}

// sr_fraction32 is floor(f * 2^32) of the discarded fraction, as the oracle computes it.
TEST(RoundShift, StochasticFractionMatchesOracle) {
  SplitMix rng{3};
  for (int i = 0; i < 100000; ++i) {
    const int shift = 1 + static_cast<int>(rng.next() % 80);
    const std::uint64_t rem = shift >= 64 ? rng.next() : rng.next() & ((std::uint64_t{1} << shift) - 1);
    const oracle::Bracket b = oracle::bracket(oracle::System::integers(), ldexp(Real(rem), -shift));
    ASSERT_EQ(sr_fraction32(rem, shift), b.frac32) << rem << " >> " << shift;
  }
}

// The oracle on cases worked by hand (it is the reference for everything else).
TEST(Oracle, HandWorkedCases) {
  using oracle::System;
  const auto ints = System::integers();
  auto r = [](const System& s, Real x, Round m, std::uint32_t u = 0) {
    return oracle::round_magnitude(oracle::bracket(s, x), m, u);
  };
  EXPECT_EQ(r(ints, 2.5, Round::nearest_even), 2);
  EXPECT_EQ(r(ints, 3.5, Round::nearest_even), 4);
  EXPECT_EQ(r(ints, 2.5, Round::nearest_away), 3);
  EXPECT_EQ(r(ints, -2.5, Round::toward_neg), 3);  // a magnitude: -2.5 down is -3
  EXPECT_EQ(r(ints, -2.5, Round::toward_pos), 2);
  EXPECT_EQ(r(ints, 2.25, Round::odd), 3);
  EXPECT_EQ(r(ints, 3.25, Round::odd), 3);
  EXPECT_EQ(r(ints, 2.25, Round::stochastic, 0xC0000000u), 3);  // 2^30 + 3*2^30 = 2^32
  EXPECT_EQ(r(ints, 2.25, Round::stochastic, 0xBFFFFFFFu), 2);
  // E4M3 (p = 4, emin = -6): 1.0625 is the tie between 1 and 1.125; subnormal quantum 2^-9.
  const auto e4m3 = System::floating(4, -6, true);
  EXPECT_EQ(r(e4m3, 1.0625, Round::nearest_even), 1);
  EXPECT_EQ(r(e4m3, 1.1875, Round::nearest_even), 1.25);
  EXPECT_EQ(r(e4m3, 0x1p-10, Round::nearest_even), 0);
  EXPECT_EQ(r(e4m3, 0x1.8p-9, Round::nearest_even), 0x1p-8);
  EXPECT_EQ(r(e4m3, 0x1p-30, Round::toward_pos), 0x1p-9);
  EXPECT_EQ(r(e4m3, 464, Round::nearest_even), 448);  // unbounded above: 480 is the next value
  EXPECT_EQ(r(e4m3, 465, Round::nearest_even), 480);
  // E8M0 (p = 1, emin = -127, no subnormals): ties go to the even exponent field.
  const auto e8m0 = System::floating(1, -127, false);
  EXPECT_EQ(r(e8m0, 1.5, Round::nearest_even), 2);  // fields 127 (odd) and 128
  EXPECT_EQ(r(e8m0, 3, Round::nearest_even), 2);    // fields 128 and 129 (odd)
  EXPECT_EQ(r(e8m0, 3, Round::odd), 4);
  EXPECT_EQ(r(e8m0, 0x1.8p-130, Round::nearest_even), 0x1p-129);  // unbounded below
  // p = 1 with subnormals (e.g. e3m0): 0, 2^emin, 2^(emin+1)...: codes 0, 1, 2.
  const auto e3m0 = System::floating(1, -2, true);
  EXPECT_EQ(r(e3m0, 0x1.8p-2, Round::nearest_even), 0.5);  // codes 1 (odd) and 2
  EXPECT_EQ(r(e3m0, 0x1p-3, Round::nearest_even), 0);      // codes 0 and 1
  EXPECT_EQ(r(e3m0, 0x1p-3, Round::odd), 0.25);
  const auto b = oracle::bracket(e4m3, Real(0x1.0000000000001p0));
  EXPECT_EQ(b.frac32, 0u);
  EXPECT_EQ(b.cmp_half, -1);
  EXPECT_FALSE(b.exact);
}

TEST(RoundNames, ParseAndPrint) {
  const std::pair<const char*, Round> kNames[] = {
      {"nearest", Round::nearest_even}, {"away", Round::nearest_away}, {"zero", Round::toward_zero},
      {"up", Round::toward_pos},        {"down", Round::toward_neg},   {"stochastic", Round::stochastic},
      {"odd", Round::odd}};
  for (auto [name, mode] : kNames) {
    EXPECT_EQ(parse_round(name), mode);
    EXPECT_EQ(round_name(mode), name);
  }
  for (const char* bad : {"", "Nearest", "even", "nearest ", "rne", "sr"}) EXPECT_FALSE(parse_round(bad)) << bad;
}

TEST(RoundShift, OverflowDirection) {
  for (bool neg : {false, true}) {
    EXPECT_TRUE(overflows_to_infinity(Round::nearest_even, neg));
    EXPECT_TRUE(overflows_to_infinity(Round::nearest_away, neg));
    EXPECT_TRUE(overflows_to_infinity(Round::stochastic, neg));
    EXPECT_FALSE(overflows_to_infinity(Round::toward_zero, neg));
    EXPECT_FALSE(overflows_to_infinity(Round::odd, neg));
    EXPECT_EQ(overflows_to_infinity(Round::toward_pos, neg), !neg);
    EXPECT_EQ(overflows_to_infinity(Round::toward_neg, neg), neg);
  }
}

}  // namespace
}  // namespace lowp
