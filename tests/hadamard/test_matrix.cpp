// Explicit Hadamard matrices: every entry +-1 and H H^T = m I checked exactly in integer
// arithmetic for every order the library offers; the finite fields behind Paley; the stored
// Goethals-Seidel sequences against an independent autocorrelation check and against a rerun
// of the search that produced them.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../../hadamard/src/matrix_build.hpp"
#include "lowp/hadamard/matrix.hpp"
#include "lowp/numerics/error.hpp"

namespace {

namespace hd = lowp::hadamard;

const std::vector<int> kRequired{12, 20, 28, 36, 40, 44, 52, 60, 76, 108, 140, 156, 172};

// H H^T == m I with plain int32 dot products; returns the first failure or "".
std::string check_hadamard_int(std::span<const std::int8_t> h, int m) {
  if (h.size() != static_cast<std::size_t>(m) * m) return "size";
  for (std::size_t k = 0; k < h.size(); ++k)
    if (h[k] != 1 && h[k] != -1) return "entry " + std::to_string(k) + " is not +-1";
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      std::int32_t dot = 0;
      for (int k = 0; k < m; ++k) dot += h[i * m + k] * h[j * m + k];
      if (dot != (i == j ? m : 0))
        return "row " + std::to_string(i) + " . row " + std::to_string(j) + " = " +
               std::to_string(dot);
    }
  return "";
}

// The same check with rows as bit vectors: dot(i, j) = m - 2 popcount(r_i xor r_j).
std::string check_hadamard_bits(std::span<const std::int8_t> h, int m) {
  const int words = (m + 63) / 64;
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(m) * words, 0);
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < m; ++k) {
      const std::int8_t e = h[static_cast<std::size_t>(i) * m + k];
      if (e != 1 && e != -1) return "entry not +-1";
      if (e < 0) bits[static_cast<std::size_t>(i) * words + k / 64] |= std::uint64_t{1} << (k % 64);
    }
  for (int i = 0; i < m; ++i)
    for (int j = i; j < m; ++j) {
      int diff = 0;
      for (int w = 0; w < words; ++w)
        diff += std::popcount(bits[static_cast<std::size_t>(i) * words + w] ^
                              bits[static_cast<std::size_t>(j) * words + w]);
      if (m - 2 * diff != (i == j ? m : 0))
        return "rows " + std::to_string(i) + ", " + std::to_string(j) + " not orthogonal";
    }
  return "";
}

TEST(HadamardMatrix, RequiredOrdersAreHadamardExactly) {
  for (int m : kRequired) {
    SCOPED_TRACE("m = " + std::to_string(m) + ": " + hd::hadamard_construction(m));
    ASSERT_TRUE(hd::has_hadamard_matrix(m));
    EXPECT_EQ(check_hadamard_int(hd::hadamard_matrix(m), m), "");
  }
}

TEST(HadamardMatrix, ConstructionsAreTheDocumentedOnes) {
  EXPECT_EQ(hd::hadamard_construction(12), "Paley I over GF(11)");
  EXPECT_EQ(hd::hadamard_construction(28), "Paley I over GF(3^3)");
  EXPECT_EQ(hd::hadamard_construction(36), "Paley II over GF(17)");
  EXPECT_EQ(hd::hadamard_construction(40), "H_2 (x) H_20");
  EXPECT_EQ(hd::hadamard_construction(52), "Paley II over GF(5^2)");
  EXPECT_EQ(hd::hadamard_construction(76), "Paley II over GF(37)");
  EXPECT_EQ(hd::hadamard_construction(156), "Goethals-Seidel array of four circulants of order 39");
  EXPECT_EQ(hd::hadamard_construction(172), "Goethals-Seidel array of four circulants of order 43");
  EXPECT_EQ(hd::hadamard_construction(64), "Sylvester");
}

TEST(HadamardMatrix, EverySupportedOrderIsHadamardExactly) {
  const auto orders = hd::supported_orders();
  for (int m : kRequired) EXPECT_TRUE(std::binary_search(orders.begin(), orders.end(), m)) << m;
  EXPECT_TRUE(std::is_sorted(orders.begin(), orders.end()));
  std::set<int> odd_parts;
  for (int m : orders) {
    SCOPED_TRACE("m = " + std::to_string(m) + ": " + hd::hadamard_construction(m));
    EXPECT_EQ(m % 4, 0);
    EXPECT_LE(m, hd::kMaxKroneckerOrder);
    EXPECT_EQ(check_hadamard_bits(hd::hadamard_matrix(m), m), "");
    odd_parts.insert(m >> std::countr_zero(static_cast<unsigned>(m)));
  }
  // Odd parts the Llama / Mistral / Qwen sizes need, plus 37 (Qwen2-7B's 18944 = 148 * 128).
  for (int o : {3, 5, 7, 9, 11, 13, 15, 19, 27, 35, 37, 39, 43})
    EXPECT_TRUE(odd_parts.count(o)) << o;
}

TEST(HadamardMatrix, MoreConstructionsAndBitCheckAgreeWithIntCheck) {
  // Doubling of non-Sylvester factors, Paley I over GF(3^5), larger orders.
  for (int m : {24, 48, 144, 164, 244, 400}) {
    SCOPED_TRACE("m = " + std::to_string(m) + ": " + hd::hadamard_construction(m));
    ASSERT_TRUE(hd::has_hadamard_matrix(m));
    EXPECT_EQ(check_hadamard_int(hd::hadamard_matrix(m), m), "");
  }
  EXPECT_EQ(hd::hadamard_construction(144), "H_2 (x) H_72");
  EXPECT_EQ(hd::hadamard_construction(164), "Paley I over GF(163)");
  EXPECT_EQ(hd::hadamard_construction(400), "H_2 (x) H_200");
  EXPECT_EQ(hd::hadamard_construction(244), "Paley I over GF(3^5)");
  // A +-1 matrix that is not Hadamard fails both checks.
  std::vector<std::int8_t> bad(hd::hadamard_matrix(12).begin(), hd::hadamard_matrix(12).end());
  bad[5 * 12 + 7] = static_cast<std::int8_t>(-bad[5 * 12 + 7]);
  EXPECT_NE(check_hadamard_int(bad, 12), "");
  EXPECT_NE(check_hadamard_bits(bad, 12), "");
}

TEST(HadamardMatrix, SylvesterMatchesClosedForm) {
  for (int m : {1, 2, 4, 32, 256}) {
    const auto h = hd::hadamard_matrix(m);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j)
        ASSERT_EQ(h[static_cast<std::size_t>(i) * m + j],
                  (std::popcount(unsigned(i & j)) % 2) ? -1 : 1);
  }
}

TEST(HadamardMatrix, UnsupportedOrdersThrowNamingM) {
  for (int m : {0, -4, 6, 10, 92, 4100}) {
    EXPECT_FALSE(hd::has_hadamard_matrix(m)) << m;
    try {
      hd::hadamard_matrix(m);
      ADD_FAILURE() << "no error for m = " << m;
    } catch (const lowp::Error& e) {
      EXPECT_NE(std::string(e.what()).find("m = " + std::to_string(m)), std::string::npos)
          << e.what();
    }
  }
}

TEST(HadamardMatrix, CacheIsThreadSafeAndStable) {
  std::vector<const std::int8_t*> seen(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&seen, t] { seen[t] = hd::hadamard_matrix(140).data(); });
  for (auto& th : threads) th.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(seen[t], seen[0]);
}

TEST(HadamardMatrix, GaloisFieldsAreFields) {
  for (int q : {7, 9, 25, 27, 49, 81, 125}) {
    SCOPED_TRACE("q = " + std::to_string(q));
    const lowp::hadamard::detail::GaloisField f(q);
    const auto chi = f.quadratic_character();
    EXPECT_EQ(std::count(chi.begin(), chi.end(), 1), (q - 1) / 2);
    for (int a = 0; a < q; ++a) {
      EXPECT_EQ(f.sub(a, a), 0);
      bool has_inverse = a == 0;
      for (int b = 0; b < q; ++b) {
        ASSERT_EQ(f.mul(a, b), f.mul(b, a));
        if (a != 0 && b != 0) {
          ASSERT_NE(f.mul(a, b), 0);  // no zero divisors
        }
        if (f.mul(a, b) == 1) has_inverse = true;
        // a*b - a*c == a*(b - c) for one c per pair keeps this quadratic.
        const int c = (a + 2 * b) % q;
        ASSERT_EQ(f.sub(f.mul(a, b), f.mul(a, c)), f.mul(a, f.sub(b, c)));
      }
      EXPECT_TRUE(has_inverse);
    }
    // chi is multiplicative.
    for (int a = 1; a < q; ++a)
      for (int b = 1; b < q; b += 3) ASSERT_EQ(chi[f.mul(a, b)], chi[a] * chi[b]);
  }
}

// Sum of periodic autocorrelations of the four sequences at every nonzero shift.
bool autocorrelations_cancel(const std::array<std::vector<std::int8_t>, 4>& s) {
  const std::size_t v = s[0].size();
  for (std::size_t shift = 1; shift < v; ++shift) {
    int total = 0;
    for (const auto& a : s) {
      if (a.size() != v) return false;
      for (std::size_t i = 0; i < v; ++i) total += a[i] * a[(i + shift) % v];
    }
    if (total != 0) return false;
  }
  return true;
}

TEST(HadamardMatrix, StoredGoethalsSeidelSequencesAreWhatTheSearchFinds) {
  for (auto [v, h] : {std::pair{39, 16}, std::pair{43, 6}}) {
    SCOPED_TRACE("v = " + std::to_string(v));
    const auto stored = lowp::hadamard::detail::stored_sequences(v);
    EXPECT_TRUE(autocorrelations_cancel(stored));
    const auto found = hd::find_supplementary_difference_sets(v, h);
    EXPECT_TRUE(autocorrelations_cancel(found));
    EXPECT_EQ(found, stored);
  }
}

TEST(HadamardMatrix, SearchFindsSmallCasesAndRejectsBadInput) {
  // Any solution the search returns must satisfy the defining identity and make a Hadamard
  // matrix through the Goethals-Seidel array.
  for (auto [v, h] : {std::pair{5, 1}, std::pair{7, 2}, std::pair{13, 3}, std::pair{31, 5}}) {
    SCOPED_TRACE("v = " + std::to_string(v));
    const auto s = hd::find_supplementary_difference_sets(v, h);
    ASSERT_FALSE(s[0].empty());
    EXPECT_TRUE(autocorrelations_cancel(s));
    EXPECT_EQ(check_hadamard_int(lowp::hadamard::detail::goethals_seidel(s), 4 * v), "");
  }
  EXPECT_THROW(hd::find_supplementary_difference_sets(40, 3), lowp::Error);
  EXPECT_THROW(hd::find_supplementary_difference_sets(39, 3), lowp::Error);  // 3 | 39
  EXPECT_THROW(hd::find_supplementary_difference_sets(61, 1), lowp::Error);  // 61 orbits
}

}  // namespace
