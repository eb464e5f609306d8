// The Rotation API: the row-vector convention checked against R built explicitly in double
// from its documented definition, (X R)(W R)^T = X W^T and apply_inverse(apply(X)) = X to
// float32 rounding for every kind, determinism, block independence, errors, NaN/Inf.
#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../hadamard/src/transform_kernels.hpp"
#include "lowp/hadamard/fwht.hpp"
#include "lowp/hadamard/matrix.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/hadamard/transform.hpp"
#include "lowp/numerics/error.hpp"
#include "support/test_support.hpp"
#include "lowp/numerics/rng.hpp"

namespace {

namespace hd = lowp::hadamard;

const int kRotationThreads = omp_get_max_threads();  // restored after tests that change it
using hd::Rotation;
using hd::RotationKind;

// Float32 rounding allowance, relative to the norms involved: kRotationC * log2(n) * 2^-24.
constexpr double kRotationC = 1.0;

double tolerance(std::size_t n) { return kRotationC * std::log2(static_cast<double>(n)) * 0x1p-24; }

std::vector<float> random_matrix(std::size_t rows, std::size_t stride, std::uint32_t seed) {
  return lowp::test::normal_floats(rows * stride, seed);
}

std::vector<Rotation> all_kinds() {
  return {{RotationKind::none, 96},
          {RotationKind::hadamard, 4096},
          {RotationKind::hadamard, 11008},
          {RotationKind::hadamard, 5120},
          {RotationKind::randomized, 4096, 0, 1},
          {RotationKind::randomized, 14336, 0, 2},
          {RotationKind::randomized, 4864, 0, 3},
          {RotationKind::block_diagonal, 4096, 16},
          {RotationKind::block_diagonal, 4096, 32},
          {RotationKind::block_diagonal, 11008, 64},
          {RotationKind::block_diagonal, 11008, 128},
          {RotationKind::block_diagonal, 256, 256}};
}

// R as an explicit n x n double matrix, straight from the definitions in rotation.hpp.
std::vector<double> explicit_rotation(const Rotation& r) {
  const std::size_t n = r.size;
  std::vector<double> R(n * n, 0.0);
  auto sylvester = [](std::size_t a, std::size_t b) {
    return std::popcount(a & b) % 2 ? -1.0 : 1.0;
  };
  switch (r.kind) {
    case RotationKind::none:
      for (std::size_t i = 0; i < n; ++i) R[i * n + i] = 1;
      break;
    case RotationKind::block_diagonal: {
      const double s = hd::orthonormal_scale(r.block);
      for (std::size_t b0 = 0; b0 < n; b0 += r.block)
        for (std::size_t i = 0; i < r.block; ++i)
          for (std::size_t j = 0; j < r.block; ++j) R[(b0 + i) * n + b0 + j] = s * sylvester(i, j);
      break;
    }
    case RotationKind::hadamard:
    case RotationKind::randomized: {
      const std::size_t m = hd::kronecker_order(n), k = n / m;
      const auto hm = hd::hadamard_matrix(static_cast<int>(m));
      const double s = hd::orthonormal_scale(n);
      const lowp::RngKey key = lowp::rng_key(r.seed);
      for (std::size_t a = 0; a < n; ++a)  // R[a][b] = s d_a H[b][a]
        for (std::size_t b = 0; b < n; ++b) {
          const double h = hm[(b / k) * m + a / k] * sylvester(b % k, a % k);
          const double d =
              (r.kind == RotationKind::randomized && (lowp::random_bits(key, a) >> 31)) ? -1 : 1;
          R[a * n + b] = s * d * h;
        }
      break;
    }
  }
  return R;
}

TEST(Rotation, RowVectorConventionMatchesExplicitMatrix) {
  const std::vector<Rotation> small{{RotationKind::none, 24},
                                    {RotationKind::hadamard, 64},
                                    {RotationKind::hadamard, 48},
                                    {RotationKind::hadamard, 172},
                                    {RotationKind::randomized, 64, 0, 9},
                                    {RotationKind::randomized, 40 * 8, 0, 10},
                                    {RotationKind::block_diagonal, 96, 32}};
  for (const Rotation& r : small) {
    SCOPED_TRACE(r.describe());
    const std::size_t n = r.size, rows = 3, stride = n + 2;
    const auto x = random_matrix(rows, stride, 4);
    const auto R = explicit_rotation(r);
    std::vector<float> y = x, z = x;
    r.apply(y.data(), rows, stride);
    r.apply_inverse(z.data(), rows, stride);
    for (std::size_t i = 0; i < rows; ++i) {
      double num_y = 0, num_z = 0, den = 0;
      for (std::size_t b = 0; b < n; ++b) {
        double xr = 0, xrt = 0;  // (x R)_b and (x R^T)_b
        for (std::size_t a = 0; a < n; ++a) {
          xr += x[i * stride + a] * R[a * n + b];
          xrt += x[i * stride + a] * R[b * n + a];
        }
        num_y += (y[i * stride + b] - xr) * (y[i * stride + b] - xr);
        num_z += (z[i * stride + b] - xrt) * (z[i * stride + b] - xrt);
        den += xr * xr;
      }
      EXPECT_LE(std::sqrt(num_y / den), tolerance(n)) << "row " << i;
      EXPECT_LE(std::sqrt(num_z / den), tolerance(n)) << "row " << i;
      for (std::size_t c = n; c < stride; ++c) ASSERT_EQ(y[i * stride + c], x[i * stride + c]);
    }
  }
}

// (X R)(W R)^T = X W^T for a linear layer y = x W^T, entry by entry relative to |x| |w|.
TEST(Rotation, FoldedLinearLayerKeepsItsOutput) {
  for (const Rotation& r : all_kinds()) {
    SCOPED_TRACE(r.describe());
    const std::size_t n = r.size, rows = 4, out = 5, sx = n + 3, sw = n + 1;
    const auto x = random_matrix(rows, sx, 1), w = random_matrix(out, sw, 2);
    std::vector<float> xr = x, wr = w;
    r.apply(xr.data(), rows, sx);
    r.fold_into_weight(wr.data(), out, sw);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < out; ++j) {
        double ref = 0, got = 0, nx = 0, nw = 0;
        for (std::size_t c = 0; c < n; ++c) {
          ref += double(x[i * sx + c]) * w[j * sw + c];
          got += double(xr[i * sx + c]) * wr[j * sw + c];
          nx += double(x[i * sx + c]) * x[i * sx + c];
          nw += double(w[j * sw + c]) * w[j * sw + c];
        }
        EXPECT_LE(std::abs(got - ref), 2 * tolerance(n) * std::sqrt(nx * nw)) << i << "," << j;
      }
  }
}

TEST(Rotation, InverseUndoesApply) {
  for (const Rotation& r : all_kinds()) {
    SCOPED_TRACE(r.describe());
    const std::size_t n = r.size, rows = 3, stride = n + 7;
    const auto x = random_matrix(rows, stride, 3);
    std::vector<float> y = x;
    r.apply(y.data(), rows, stride);
    r.apply_inverse(y.data(), rows, stride);
    for (std::size_t i = 0; i < rows; ++i) {
      double num = 0, den = 0;
      for (std::size_t c = 0; c < n; ++c) {
        num += (double(y[i * stride + c]) - x[i * stride + c]) *
               (double(y[i * stride + c]) - x[i * stride + c]);
        den += double(x[i * stride + c]) * x[i * stride + c];
      }
      EXPECT_LE(std::sqrt(num / den), 2 * tolerance(n));
      for (std::size_t c = n; c < stride; ++c) ASSERT_EQ(y[i * stride + c], x[i * stride + c]);
    }
  }
}

// The sign flips of randomized rotations: every kernel equals an explicit flip in the test
// followed by the (separately tested) transform, bit for bit, before and after.
TEST(Rotation, SignFlipsEveryKernelBitwise) {
  for (std::size_t n : {4096u, 172u * 64u, 12u * 4u, 40u * 16u}) {
    const std::size_t rows = 5, stride = n + 1;
    const auto x = random_matrix(rows, stride, 12);
    std::vector<std::uint32_t> mask(n);
    for (std::size_t i = 0; i < n; ++i) mask[i] = (i * 2654435761u) & 0x80000000u;
    auto flipped = [&](std::vector<float> v) {
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t i = 0; i < n; ++i)
          if (mask[i]) v[r * stride + i] = -v[r * stride + i];
      return v;
    };
    std::vector<float> pre_want = flipped(x), post_want = x;
    hd::hadamard_transform_rows(pre_want.data(), rows, n, stride, 0.5f);
    hd::hadamard_transform_rows(post_want.data(), rows, n, stride, 0.5f, true);
    post_want = flipped(post_want);
    for (lowp::Isa isa : {lowp::Isa::scalar, lowp::Isa::avx2, lowp::Isa::avx512}) {
      if (!lowp::isa_available(isa)) continue;
      SCOPED_TRACE(std::string(lowp::isa_name(isa)) + " n = " + std::to_string(n));
      std::vector<float> a = x, b = x;
      hd::detail::transform_rows("test", isa, a.data(), rows, n, stride, 0.5f, false, mask.data(),
                                 nullptr);
      hd::detail::transform_rows("test", isa, b.data(), rows, n, stride, 0.5f, true, nullptr,
                                 mask.data());
      EXPECT_EQ(std::memcmp(a.data(), pre_want.data(), a.size() * sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(b.data(), post_want.data(), b.size() * sizeof(float)), 0);
    }
  }
}

TEST(Rotation, NoneLeavesDataAlone) {
  const auto x = random_matrix(2, 40, 5);
  std::vector<float> y = x;
  Rotation{RotationKind::none, 40}.apply(y.data(), 2, 40);
  EXPECT_EQ(y, x);
}

TEST(Rotation, RandomizedIsDeterministicPerSeedAndThreadCount) {
  const std::size_t n = 11008, rows = 16;
  const auto x = random_matrix(rows, n, 6);
  auto run = [&](std::uint64_t seed, int threads) {
    omp_set_num_threads(threads);
    std::vector<float> y = x;
    Rotation{RotationKind::randomized, n, 0, seed}.apply(y.data(), rows, n);
    omp_set_num_threads(kRotationThreads);
    return y;
  };
  const auto a = run(7, 1), b = run(7, 2), c = run(8, 2);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != c[i];
  EXPECT_GT(differ, a.size() / 2);
  // And it differs from the plain Hadamard rotation (the signs do something).
  std::vector<float> h = x;
  Rotation{RotationKind::hadamard, n}.apply(h.data(), rows, n);
  differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != h[i];
  EXPECT_GT(differ, a.size() / 2);
}

TEST(Rotation, BlockDiagonalBlocksAreIndependent) {
  const Rotation r{RotationKind::block_diagonal, 4096, 32};
  const auto x = random_matrix(2, 4096, 8);
  std::vector<float> y = x, z = x;
  z[4096 + 32 * 7 + 3] += 1.0f;  // row 1, block 7
  r.apply(y.data(), 2, 4096);
  r.apply(z.data(), 2, 4096);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const bool inside = i >= 4096 + 32 * 7 && i < 4096 + 32 * 8;
    if (inside)
      EXPECT_NE(y[i], z[i]) << i;
    else
      ASSERT_EQ(y[i], z[i]) << i;
  }
}

using lowp::test::expect_error;

TEST(Rotation, BadInputErrors) {
  std::vector<float> x(73 * 64 * 2);
  expect_error([&] { Rotation{RotationKind::hadamard, 0}.apply(x.data(), 1, 8); }, {"n = 0"});
  expect_error(
      [&] {
        Rotation{RotationKind::hadamard, 4672}.apply(x.data(), 1, 4672);
      },
      {"n = 4672", "block_diagonal with block 64"});
  expect_error([&] { Rotation{RotationKind::randomized, 4672, 0, 1}.validate(); }, {"n = 4672"});
  expect_error([&] { Rotation{RotationKind::randomized, 99, 0, 1}.validate(); }, {"n = 99", "odd"});
  expect_error(
      [&] {
        Rotation{RotationKind::block_diagonal, 96, 64}.validate();
      },
      {"b = 64", "n = 96"});
  expect_error(
      [&] {
        Rotation{RotationKind::block_diagonal, 96, 48}.validate();
      },
      {"b = 48", "n = 96"});
  expect_error([&] { Rotation{RotationKind::block_diagonal, 96, 0}.validate(); }, {"b = 0"});
  expect_error(
      [&] {
        Rotation{RotationKind::hadamard, 64}.apply(x.data(), 2, 63);
      },
      {"stride 63", "n = 64"});
  expect_error(
      [&] {
        Rotation{RotationKind::block_diagonal, 64, 16}.fold_into_weight(x.data(), 2, 60);
      },
      {"stride 60"});
  expect_error([&] { Rotation{RotationKind::hadamard, 64}.apply(nullptr, 2, 64); }, {"null"});
  expect_error([&] { Rotation{static_cast<RotationKind>(9), 64}.validate(); }, {"kind 9"});
  EXPECT_NO_THROW((Rotation{RotationKind::hadamard, 64}.apply(nullptr, 0, 64)));
  EXPECT_NO_THROW((Rotation{RotationKind::block_diagonal, 11008, 256}.validate()));
}

TEST(Rotation, NanAndInfPropagateWithinRowOrBlock) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (const Rotation& r :
       {Rotation{RotationKind::hadamard, 11008}, Rotation{RotationKind::randomized, 4096, 0, 5},
        Rotation{RotationKind::block_diagonal, 4096, 128}})
    for (float bad : {nan, inf}) {
      SCOPED_TRACE(r.describe());
      const std::size_t n = r.size;
      const auto x = random_matrix(3, n, 10);
      std::vector<float> clean = x, y = x;
      y[n + 200] = bad;
      r.apply(clean.data(), 3, n);
      r.apply(y.data(), 3, n);
      const std::size_t lo = r.kind == RotationKind::block_diagonal ? n + 128 : n;
      const std::size_t hi = r.kind == RotationKind::block_diagonal ? n + 256 : 2 * n;
      for (std::size_t i = 0; i < 3 * n; ++i) {
        if (i >= lo && i < hi) {
          ASSERT_FALSE(std::isfinite(y[i])) << i;
        } else {
          ASSERT_EQ(std::memcmp(&y[i], &clean[i], sizeof(float)), 0) << i;
        }
      }
    }
}

TEST(Rotation, Describe) {
  EXPECT_EQ((Rotation{RotationKind::randomized, 11008, 0, 7}.describe()),
            "randomized n=11008 (H_172 x H_64) seed=7");
  EXPECT_EQ((Rotation{RotationKind::hadamard, 4096}.describe()), "hadamard n=4096");
  EXPECT_EQ((Rotation{RotationKind::block_diagonal, 4096, 32}.describe()),
            "block_diagonal n=4096 b=32");
}

}  // namespace
