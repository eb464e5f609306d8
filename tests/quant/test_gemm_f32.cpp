// gemm_f32 against a double-precision triple loop, and its independence of the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "lowp/quant/gemm.hpp"
#include "support/test_support.hpp"

namespace {

// |computed - exact| <= gamma_n * sum |a_k b_k| (Higham, any summation order), n = K (+1 when
// adding into C), gamma_n = n u / (1 - n u), u = 2^-24; the double reference is exact enough.
void check_against_double(std::size_t M, std::size_t N, std::size_t K, bool accumulate,
                          int threads) {
  const auto A = lowp::test::normal_floats(M * K, 11);
  const auto B = lowp::test::normal_floats(N * K, 12);
  const auto C0 = lowp::test::normal_floats(M * N, 13);
  std::vector<float> C = C0;
  lowp::quant::gemm_f32(A.data(), B.data(), C.data(), M, N, K, accumulate, threads);
  const double u = std::ldexp(1.0, -24);
  const double n = static_cast<double>(K + (accumulate ? 1 : 0));
  const double gamma = n * u / (1 - n * u);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double s = accumulate ? C0[i * N + j] : 0.0,
             abs_sum = accumulate ? std::fabs(C0[i * N + j]) : 0.0;
      for (std::size_t k = 0; k < K; ++k) {
        const double p = double{A[i * K + k]} * double{B[j * K + k]};
        s += p;
        abs_sum += std::fabs(p);
      }
      bad += !(std::fabs(C[i * N + j] - s) <= gamma * abs_sum);
    }
  EXPECT_EQ(bad, 0u) << "M=" << M << " N=" << N << " K=" << K << " accumulate=" << accumulate;
}

TEST(GemmF32, MatchesDoubleReference) {
  const std::size_t shapes[][3] = {{1, 1, 1},    {3, 17, 5},     {17, 3, 65},
                                   {64, 65, 63}, {129, 33, 300}, {5, 200, 1000}};
  for (const auto& s : shapes)
    for (bool acc : {false, true}) check_against_double(s[0], s[1], s[2], acc, 0);
}

TEST(GemmF32, ZeroK) {
  std::vector<float> C(6, 3.0f);
  lowp::quant::gemm_f32(nullptr, nullptr, C.data(), 2, 3, 0, true);
  for (float c : C) EXPECT_EQ(c, 3.0f);
  lowp::quant::gemm_f32(nullptr, nullptr, C.data(), 2, 3, 0, false);
  for (float c : C) EXPECT_EQ(c, 0.0f);
}

TEST(GemmF32, BadArguments) {
  std::vector<float> A(4), B(4), C(1);
  using lowp::test::expect_error;
  expect_error([&] { lowp::quant::gemm_f32(A.data(), B.data(), C.data(), 1, 1, 4, false, -2); },
               {"threads = -2"});
  expect_error([&] { lowp::quant::gemm_f32(nullptr, B.data(), C.data(), 1, 1, 4); }, {"A is null"});
  expect_error([&] { lowp::quant::gemm_f32(A.data(), B.data(), nullptr, 1, 1, 4); }, {"C is null"});
}

TEST(GemmF32, SameBitsAtOneAndTwoThreads) {
  // Shapes past the K block (256) and the column panel (256) in both directions, and thin ones;
  // {1030, 64, 1500} and {512, 512, 512} have B small enough for a team to pack every K block
  // at once (kWholeB in gemm_f32.cpp: 2^18 floats, the second exactly), the others not.
  const std::size_t shapes[][3] = {{300, 500, 700}, {64, 1030, 1500}, {1030, 64, 1500},
                                   {1, 2000, 3000}, {2000, 1, 3000},  {97, 101, 2049},
                                   {512, 512, 512}};
  for (const auto& s : shapes) {
    const std::size_t M = s[0], N = s[1], K = s[2];
    const auto A = lowp::test::normal_floats(M * K, 21);
    const auto B = lowp::test::normal_floats(N * K, 22);
    for (bool acc : {false, true}) {
      std::vector<float> C1 = lowp::test::normal_floats(M * N, 23), C2 = C1;
      lowp::quant::gemm_f32(A.data(), B.data(), C1.data(), M, N, K, acc, 1);
      lowp::quant::gemm_f32(A.data(), B.data(), C2.data(), M, N, K, acc, 2);
      EXPECT_EQ(std::memcmp(C1.data(), C2.data(), C1.size() * sizeof(float)), 0)
          << "M=" << M << " N=" << N << " K=" << K << " accumulate=" << acc;
    }
  }
}

// Asked for two threads inside a team (where a nested region would have one), the GEMM and the
// one-row GEMV run on the calling thread: the bits of a top-level call at two threads (C starts
// as NaN: an element skipped shows).
TEST(GemmF32, InsideATeamTheBitsOfATopLevelCall) {
  for (const std::size_t M : {std::size_t{1}, std::size_t{300}}) {
    const std::size_t N = 500, K = 700;
    const auto A = lowp::test::normal_floats(M * K, 31);
    const auto B = lowp::test::normal_floats(N * K, 32);
    std::vector<float> top(M * N), inside(M * N, std::nanf(""));
    lowp::quant::gemm_f32(A.data(), B.data(), top.data(), M, N, K, false, 2);
#pragma omp parallel num_threads(2)
    {
#pragma omp master
      lowp::quant::gemm_f32(A.data(), B.data(), inside.data(), M, N, K, false, 2);
    }
    EXPECT_EQ(std::memcmp(top.data(), inside.data(), top.size() * sizeof(float)), 0) << "M=" << M;
  }
}

}  // namespace
