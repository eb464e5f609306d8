// Kronecker (H_m (x) H_2^k) and block-diagonal transforms against double-precision oracles:
// the explicit n x n matrix for small sizes, and for large ones an independent O(n (m + log n))
// double transform (a textbook FWHT per block, then the +-1 combination of blocks). H_m itself
// is the matrix test_matrix.cpp checks for exact orthogonality.
#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "lowp/hadamard/matrix.hpp"
#include "lowp/hadamard/transform.hpp"
#include "lowp/numerics/cpu.hpp"
#include "lowp/numerics/error.hpp"
#include "support/test_support.hpp"

namespace {

namespace hd = lowp::hadamard;

const int kTransformThreads = omp_get_max_threads();  // restored after tests that change it
using lowp::Isa;

const std::vector<int> kOrders{12, 20, 28, 36, 40, 44, 52, 60, 76, 108, 140, 156, 172};

// Largest error allowed, relative to the 2-norm of the exact result: kTransformC * log2(n) * 2^-24.
// (The largest seen over these tests is 0.36 * log2(n) * 2^-24.)
constexpr double kTransformC = 0.5;

using lowp::test::normal_floats;

int sylvester(std::size_t t, std::size_t u) { return std::popcount(t & u) % 2 ? -1 : 1; }

// y = scale * (H_m (x) H_K) x (or with H_m^T) through the explicit n x n matrix.
std::vector<double> explicit_reference(const std::vector<float>& x, int m, bool transposed,
                                       double scale) {
  const std::size_t n = x.size(), k = n / m;
  const auto h = hd::hadamard_matrix(m);
  std::vector<double> y(n, 0.0);
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t i = r / k, t = r % k;
    double s = 0;
    for (std::size_t c = 0; c < n; ++c) {
      const std::size_t j = c / k, u = c % k;
      const int hm = transposed ? h[j * m + i] : h[i * m + j];
      s += hm * sylvester(t, u) * static_cast<double>(x[c]);
    }
    y[r] = scale * s;
  }
  return y;
}

// The same in O(n (m + log n)): FWHT of each block in double, then the block combination.
std::vector<double> fast_reference(const std::vector<float>& x, int m, bool transposed,
                                   double scale) {
  const std::size_t n = x.size(), k = n / m;
  std::vector<double> z(x.begin(), x.end()), y(n, 0.0);
  for (std::size_t b = 0; b < n; b += k)
    for (std::size_t h = 1; h < k; h *= 2)
      for (std::size_t i = b; i < b + k; i += 2 * h)
        for (std::size_t j = i; j < i + h; ++j) {
          const double a = z[j], c = z[j + h];
          z[j] = a + c;
          z[j + h] = a - c;
        }
  const auto hm = hd::hadamard_matrix(m);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      const double s = transposed ? hm[static_cast<std::size_t>(j) * m + i]
                                  : hm[static_cast<std::size_t>(i) * m + j];
      for (std::size_t t = 0; t < k; ++t) y[i * k + t] += s * z[j * k + t];
    }
  for (double& v : y) v *= scale;
  return y;
}

// ||y - ref|| / ||ref|| in units of log2(n) * 2^-24.
double error_units(const std::vector<float>& y, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    num += (y[i] - ref[i]) * (y[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den) / (std::log2(static_cast<double>(y.size())) * 0x1p-24);
}


TEST(KroneckerTransform, OrderChoice) {
  EXPECT_EQ(hd::kronecker_order(1), 1u);
  EXPECT_EQ(hd::kronecker_order(4096), 1u);
  EXPECT_EQ(hd::kronecker_order(11008), 172u);
  EXPECT_EQ(hd::kronecker_order(13824), 108u);
  EXPECT_EQ(hd::kronecker_order(14336), 28u);
  EXPECT_EQ(hd::kronecker_order(5120), 40u);  // 40 * 128 rather than 20 * 256: the largest
  EXPECT_EQ(hd::kronecker_order(4864), 76u);
  EXPECT_EQ(hd::kronecker_order(18944), 148u);
  EXPECT_EQ(hd::kronecker_order(12), 12u);
  EXPECT_EQ(hd::kronecker_order(6), 0u);          // odd part 3, but 12 does not divide 6
  EXPECT_EQ(hd::kronecker_order(92 * 64), 368u);  // 23 * 2^j: no H_92 or H_184, but H_368
  EXPECT_EQ(hd::kronecker_order(73 * 64), 0u);    // no H_292, H_584 (and 1168 is too large)
  EXPECT_EQ(hd::kronecker_order(0), 0u);
  EXPECT_EQ(hd::largest_power_of_two_block(73 * 64), 64u);
  EXPECT_EQ(hd::largest_power_of_two_block(11008), 256u);
  EXPECT_EQ(hd::largest_power_of_two_block(11), 1u);
}

TEST(KroneckerTransform, FastReferenceMatchesExplicitMatrix) {
  for (int m : {12, 28, 172})
    for (std::size_t k : {1u, 4u}) {
      const auto x = normal_floats(m * k, 7);
      for (bool tr : {false, true}) {
        const auto a = explicit_reference(x, m, tr, 1.0), b = fast_reference(x, m, tr, 1.0);
        for (std::size_t i = 0; i < a.size(); ++i)
          ASSERT_NEAR(a[i], b[i], 1e-9 * std::sqrt(double(a.size())));
      }
    }
}

TEST(KroneckerTransform, EveryOrderAgainstExplicitMatrix) {
  for (int m : kOrders)
    for (std::size_t k : {1u, 2u, 8u, 16u, 32u}) {
      const std::size_t n = m * k;
      if (n > 2800) continue;  // the n^2 reference; larger sizes below
      SCOPED_TRACE("m = " + std::to_string(m) + ", n = " + std::to_string(n));
      // n = 20 * 2^k (k >= 1) goes through H_40, the largest order that fits.
      ASSERT_EQ(hd::kronecker_order(n), m == 20 && k > 1 ? 40u : std::size_t(m));
      const auto x = normal_floats(n, static_cast<std::uint32_t>(n));
      for (bool tr : {false, true}) {
        const float s = hd::orthonormal_scale(n);
        std::vector<float> y = x;
        hd::hadamard_transform(y.data(), n, s, tr);
        EXPECT_LE(
            error_units(y, explicit_reference(x, static_cast<int>(hd::kronecker_order(n)), tr, s)),
            kTransformC);
      }
    }
}

TEST(KroneckerTransform, EveryOrderAndLlamaSizesAgainstFastReference) {
  std::vector<std::size_t> sizes{11008, 13824, 14336, 5120, 4864};
  for (int m : kOrders)
    for (std::size_t k : {64u, 512u}) sizes.push_back(m * k);
  for (std::size_t n : sizes) {
    const int m = static_cast<int>(hd::kronecker_order(n));
    SCOPED_TRACE("n = " + std::to_string(n) + " = " + std::to_string(m) + " * " +
                 std::to_string(n / m));
    const auto x = normal_floats(n, static_cast<std::uint32_t>(n) + 1);
    for (Isa isa : lowp::test::available_isas()) {
      std::vector<float> y = x;
      hd::hadamard_transform_rows_isa(isa, y.data(), 1, n, n, hd::orthonormal_scale(n));
      EXPECT_LE(error_units(y, fast_reference(x, m, false, hd::orthonormal_scale(n))), kTransformC);
    }
    std::vector<float> y = x;
    hd::hadamard_transform(y.data(), n, 1.0f, true);
    EXPECT_LE(error_units(y, fast_reference(x, m, true, 1.0)), kTransformC);
  }
}

TEST(KroneckerTransform, TransposedWithSameScaleInverts) {
  for (std::size_t n : {12u, 11008u, 14336u, 4096u}) {
    const auto x = normal_floats(n, 3);
    std::vector<float> y = x;
    const float s = hd::orthonormal_scale(n);
    hd::hadamard_transform(y.data(), n, s);
    hd::hadamard_transform(y.data(), n, s, true);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n; ++i) {
      num += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      den += double(x[i]) * x[i];
    }
    EXPECT_LE(std::sqrt(num / den), 2 * kTransformC * std::log2(double(n)) * 0x1p-24) << n;
  }
}

// All kernels and thread counts give the same bits, on strided rows, and leave the padding alone.
TEST(KroneckerTransform, KernelsAndThreadsBitwiseEqual) {
  for (auto [m, k] :
       {std::pair{12, 1}, {20, 8}, {28, 16}, {172, 64}, {156, 32}, {44, 512}, {36, 2048}}) {
    const std::size_t n = static_cast<std::size_t>(m) * k, stride = n + 5, rows = 9;
    SCOPED_TRACE("n = " + std::to_string(n));
    const auto x = normal_floats(rows * stride, 11);
    std::vector<float> want = x;
    hd::hadamard_transform_rows_isa(Isa::scalar, want.data(), rows, n, stride, 0.125f);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = n; c < stride; ++c) ASSERT_EQ(want[r * stride + c], x[r * stride + c]);
    for (Isa isa : lowp::test::available_isas())
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        std::vector<float> y = x;
        hd::hadamard_transform_rows_isa(isa, y.data(), rows, n, stride, 0.125f);
        EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
            << lowp::isa_name(isa) << " threads " << threads;
      }
    omp_set_num_threads(kTransformThreads);
  }
  // One long vector (the dense pass split across threads).
  const std::size_t n = 172 * 1024;
  const auto x = normal_floats(n, 5);
  std::vector<float> want = x;
  hd::hadamard_transform_rows_isa(Isa::scalar, want.data(), 1, n, n);
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    std::vector<float> y = x;
    hd::hadamard_transform(y.data(), n);
    EXPECT_EQ(std::memcmp(y.data(), want.data(), n * sizeof(float)), 0) << threads;
  }
  omp_set_num_threads(kTransformThreads);
}

using lowp::test::expect_error;

TEST(KroneckerTransform, BadInputErrors) {
  std::vector<float> x(73 * 64 + 8);
  expect_error([&] { hd::hadamard_transform(x.data(), 73 * 64); },
               {"n = 4672", "block-diagonal", "64"});
  expect_error([&] { hd::hadamard_transform(x.data(), 11); }, {"n = 11", "odd"});
  expect_error([&] { hd::hadamard_transform(x.data(), 0); }, {"n = 0"});
  expect_error([&] { hd::hadamard_transform_rows(x.data(), 2, 12, 11); }, {"stride 11", "n = 12"});
  expect_error([&] { hd::block_hadamard_rows(x.data(), 1, 96, 96, 64); }, {"b = 64", "n = 96"});
  expect_error([&] { hd::block_hadamard_rows(x.data(), 1, 96, 96, 12); }, {"b = 12", "n = 96"});
  expect_error([&] { hd::block_hadamard_rows(x.data(), 1, 96, 96, 0); }, {"b = 0"});
  expect_error([&] { hd::block_hadamard_rows(x.data(), 2, 96, 90, 32); }, {"stride 90"});
  // Zero rows: validated, nothing touched.
  EXPECT_NO_THROW(hd::hadamard_transform_rows(nullptr, 0, 12, 12));
  EXPECT_THROW(hd::hadamard_transform_rows(nullptr, 0, 13, 13), lowp::Error);
}

TEST(KroneckerTransform, NanAndInfStayInTheirRow) {
  const std::size_t n = 172 * 16, rows = 3;
  const auto x = normal_floats(rows * n, 9);
  std::vector<float> clean = x;
  hd::hadamard_transform_rows(clean.data(), rows, n, n);
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> y = x;
    y[n + 77] = bad;
    hd::hadamard_transform_rows(y.data(), rows, n, n);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(y[i], clean[i]);
      ASSERT_EQ(y[2 * n + i], clean[2 * n + i]);
      // Element 77 is in block 4 at t = 13: every output of its row depends on it.
      ASSERT_FALSE(std::isfinite(y[n + i])) << i;
      if (std::isnan(bad)) {
        ASSERT_TRUE(std::isnan(y[n + i]));
      }
    }
  }
}

TEST(BlockDiagonal, MatchesPerBlockReferenceAndBlocksAreIndependent) {
  const std::size_t n = 11008, rows = 3, stride = n + 3;
  for (std::size_t b : {1u, 16u, 32u, 64u, 128u, 256u}) {
    SCOPED_TRACE("b = " + std::to_string(b));
    auto x = normal_floats(rows * stride, 13);
    std::vector<float> y = x;
    const float s = hd::orthonormal_scale(b);
    hd::block_hadamard_rows(y.data(), rows, n, stride, b, s);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t blk = 0; blk < n; blk += b) {
        const float* in = x.data() + r * stride + blk;
        for (std::size_t t = 0; t < b; ++t) {
          double ref = 0;
          for (std::size_t u = 0; u < b; ++u) ref += sylvester(t, u) * static_cast<double>(in[u]);
          ref *= s;
          ASSERT_NEAR(y[r * stride + blk + t], ref,
                      4 * std::log2(2.0 * b) * 0x1p-24 * std::sqrt(double(b)) * 4);
        }
      }
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = n; c < stride; ++c) ASSERT_EQ(y[r * stride + c], x[r * stride + c]);
    // Changing one block changes nothing outside it.
    x[stride + 5 * b] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> z = x;
    hd::block_hadamard_rows(z.data(), rows, n, stride, b, s);
    for (std::size_t i = 0; i < z.size(); ++i) {
      const bool inside = i >= stride + 5 * b && i < stride + 6 * b;
      if (inside)
        ASSERT_TRUE(std::isnan(z[i]));
      else
        ASSERT_EQ(std::memcmp(&z[i], &y[i], sizeof(float)), 0) << i;
    }
  }
}

}  // namespace
