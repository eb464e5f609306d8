// The counter-based generator: (seed, i) fixes the bits, seeds and indices decorrelate, and
// 2^20 outputs pass bit-balance and chi-square tests at 5 sigma.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "lowp/numerics/rng.hpp"

namespace lowp {
namespace {

constexpr int kN = 1 << 20;

static_assert(random_bits(rng_key(1), 5) == random_bits(rng_key(1), 5));

TEST(Rng, SameSeedAndIndexSameBits) {
  for (std::uint64_t seed : {0ull, 1ull, 0xdeadbeefull, ~0ull}) {
    const RngKey a = rng_key(seed), b = rng_key(seed);
    EXPECT_EQ(a.k0, b.k0);
    EXPECT_EQ(a.k1, b.k1);
    for (std::uint64_t i : {0ull, 1ull, 1ull << 32, (1ull << 40) + 3})
      EXPECT_EQ(random_bits(a, i), random_bits(b, i));
  }
}

TEST(Rng, SeedsAndIndicesDiffer) {
  std::set<std::vector<std::uint32_t>> streams;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    std::vector<std::uint32_t> s;
    for (std::uint64_t i = 0; i < 8; ++i) s.push_back(random_bits(rng_key(seed), i));
    streams.insert(s);
  }
  EXPECT_EQ(streams.size(), 1000u);
  // The high half of a 64-bit index matters too.
  const RngKey k = rng_key(9);
  int same = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) same += random_bits(k, i) == random_bits(k, i + (1ull << 32));
  EXPECT_LE(same, 1);
}

// Each of the 32 bits is set in half of the outputs, within 5 sigma (sigma = sqrt(N)/2).
void expect_balanced(const std::vector<std::uint32_t>& v) {
  std::array<int, 32> ones{};
  for (std::uint32_t x : v)
    for (int b = 0; b < 32; ++b) ones[b] += (x >> b) & 1;
  const double sigma = std::sqrt(static_cast<double>(v.size())) / 2;
  for (int b = 0; b < 32; ++b) EXPECT_NEAR(ones[b], v.size() / 2.0, 5 * sigma) << "bit " << b;
}

// Chi-square of the byte at `shift` over 256 cells: 255 degrees of freedom, mean 255,
// standard deviation sqrt(510); accept within 5 of them.
void expect_uniform_bytes(const std::vector<std::uint32_t>& v, int shift) {
  std::array<double, 256> n{};
  for (std::uint32_t x : v) n[(x >> shift) & 0xff] += 1;
  const double e = v.size() / 256.0;
  double chi2 = 0;
  for (double c : n) chi2 += (c - e) * (c - e) / e;
  EXPECT_NEAR(chi2, 255, 5 * std::sqrt(510.0)) << "byte at bit " << shift;
}

TEST(Rng, BalancedAndUniformOverIndices) {
  for (std::uint64_t seed : {0ull, 12345ull}) {
    std::vector<std::uint32_t> v(kN);
    const RngKey k = rng_key(seed);
    for (int i = 0; i < kN; ++i) v[i] = random_bits(k, static_cast<std::uint64_t>(i));
    expect_balanced(v);
    for (int shift : {0, 8, 16, 24}) expect_uniform_bytes(v, shift);
    // Successive outputs are not correlated: the xor of neighbours is balanced too.
    std::vector<std::uint32_t> x(kN - 1);
    for (int i = 0; i + 1 < kN; ++i) x[i] = v[i] ^ v[i + 1];
    expect_balanced(x);
  }
}

TEST(Rng, BalancedAndUniformOverSeeds) {
  std::vector<std::uint32_t> v(kN);
  for (int s = 0; s < kN; ++s) v[s] = random_bits(rng_key(static_cast<std::uint64_t>(s)), 0);
  expect_balanced(v);
  for (int shift : {0, 8, 16, 24}) expect_uniform_bytes(v, shift);
}

}  // namespace
}  // namespace lowp
