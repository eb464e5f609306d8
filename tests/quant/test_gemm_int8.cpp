// gemm_s8s8_s32 against a scalar triple loop, bit for bit, for every kernel this machine runs;
// gemm_s8s8_f32 against that loop followed by its documented dequantization, written here.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lowp/numerics/cpu.hpp"
#include "lowp/quant/gemm_int8.hpp"
#include "support/test_support.hpp"

namespace {

using lowp::quant::Int8GemmOptions;
using lowp::quant::Int8Kernel;

// The exact sum in 64 bits, reduced modulo 2^32: the documented result of every kernel.
std::vector<std::int32_t> reference(const std::vector<std::int8_t>& A,
                                    const std::vector<std::int8_t>& B, std::size_t M, std::size_t N,
                                    std::size_t K) {
  std::vector<std::int32_t> C(M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      std::int64_t s = 0;
      for (std::size_t k = 0; k < K; ++k)
        s += std::int64_t{A[i * K + k]} * std::int64_t{B[j * K + k]};
      C[i * N + j] =
          static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(s)));
    }
  return C;
}

std::vector<std::int8_t> random_int8(std::size_t n, std::uint64_t seed) {
  lowp::test::SplitMix g{seed};
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(g.next() >> 56);
  return v;
}

std::vector<Int8Kernel> kernels() {
  std::vector<Int8Kernel> ks;
  for (Int8Kernel k : {Int8Kernel::portable, Int8Kernel::avx2, Int8Kernel::vnni, Int8Kernel::amx})
    if (lowp::quant::int8_kernel_available(k)) ks.push_back(k);
  return ks;
}

// Runs every kernel at 1 and 2 threads and compares with the reference; C starts as garbage.
void check_all(const std::vector<std::int8_t>& A, const std::vector<std::int8_t>& B, std::size_t M,
               std::size_t N, std::size_t K) {
  const auto ref = reference(A, B, M, N, K);
  for (Int8Kernel k : kernels())
    for (int threads : {1, 2}) {
      std::vector<std::int32_t> C(M * N, 0x5A5A5A5A);
      lowp::quant::gemm_s8s8_s32(A.data(), B.data(), C.data(), M, N, K,
                                 Int8GemmOptions{k, threads});
      std::size_t bad = 0;
      for (std::size_t i = 0; i < C.size(); ++i) bad += C[i] != ref[i];
      EXPECT_EQ(bad, 0u) << lowp::quant::int8_kernel_name(k) << " threads=" << threads << " M=" << M
                         << " N=" << N << " K=" << K;
    }
}

TEST(GemmInt8, KernelsListed) {
  // The portable kernel is always there; on this x86-64 CI the VNNI one when the CPU has it.
  EXPECT_TRUE(lowp::quant::int8_kernel_available(Int8Kernel::portable));
  EXPECT_EQ(lowp::quant::int8_kernel_name(Int8Kernel::vnni), "avx512-vnni");
  EXPECT_TRUE(lowp::quant::int8_kernel_available(lowp::quant::best_int8_kernel()));
  std::string names;
  for (Int8Kernel k : kernels()) names += std::string(lowp::quant::int8_kernel_name(k)) + " ";
  std::cout << "int8 kernels tested here: " << names << "\n";
}

TEST(GemmInt8, BestKernelHonoursIsaCap) {
  // LOWP_ISA=scalar -> portable, LOWP_ISA=avx2 -> avx2 (no VNNI, no AMX); run the binary with
  // either to check the cap, without it to check the default.
  const Int8Kernel k = lowp::quant::best_int8_kernel();
  switch (lowp::best_isa()) {
    case lowp::Isa::scalar: EXPECT_EQ(k, Int8Kernel::portable); break;
    case lowp::Isa::avx2: EXPECT_EQ(k, Int8Kernel::avx2); break;
    case lowp::Isa::avx512:
      EXPECT_EQ(k, lowp::quant::int8_kernel_available(Int8Kernel::amx)    ? Int8Kernel::amx
                   : lowp::quant::int8_kernel_available(Int8Kernel::vnni) ? Int8Kernel::vnni
                                                                          : Int8Kernel::avx2);
      break;
  }
}

TEST(GemmInt8, RaggedShapesRandom) {
  const std::size_t sizes[] = {1, 3, 17, 63, 64, 65, 129};
  std::uint64_t seed = 1;
  for (std::size_t M : sizes)
    for (std::size_t N : sizes)
      for (std::size_t K : sizes) {
        const auto A = random_int8(M * K, seed++);
        const auto B = random_int8(N * K, seed++);
        check_all(A, B, M, N, K);
      }
}

TEST(GemmInt8, LargerShapesCrossBlocks) {
  // Past the kernels' K blocks (512), C tiles (192 x 256) and AMX tile groups.
  const std::size_t shapes[][3] = {
      {200, 300, 1000}, {193, 257, 513}, {7, 1030, 2051}, {385, 70, 4100}};
  std::uint64_t seed = 1000;
  for (const auto& s : shapes) {
    const auto A = random_int8(s[0] * s[2], seed++);
    const auto B = random_int8(s[1] * s[2], seed++);
    check_all(A, B, s[0], s[1], s[2]);
  }
}

TEST(GemmInt8, ExtremeValues) {
  // -128 * -128 = 2^14 summed 4100 times, and every sign mix: no int16 saturation anywhere
  // (vpmaddubsw-style kernels would saturate pairs of products), no offset mishandling.
  const std::size_t M = 13, N = 70, K = 4100;
  for (int a : {-128, 127})
    for (int b : {-128, 127}) {
      const std::vector<std::int8_t> A(M * K, static_cast<std::int8_t>(a));
      const std::vector<std::int8_t> B(N * K, static_cast<std::int8_t>(b));
      check_all(A, B, M, N, K);
    }
  // Random signs of the extremes.
  lowp::test::SplitMix g{77};
  std::vector<std::int8_t> A(M * K), B(N * K);
  for (auto& x : A) x = (g.next() & 1) ? 127 : -128;
  for (auto& x : B) x = (g.next() & 1) ? 127 : -128;
  check_all(A, B, M, N, K);
}

TEST(GemmInt8, WrapsModulo2To32PastInt32) {
  // 131073 products of 2^14 exceed 2^31: every kernel wraps the same way (modulo 2^32).
  const std::size_t M = 2, N = 3, K = 131073;
  const std::vector<std::int8_t> A(M * K, -128), B(N * K, -128);
  check_all(A, B, M, N, K);
}

TEST(GemmInt8, EmptyAndZeroK) {
  std::vector<std::int8_t> A(12, 1), B(12, 1);
  std::vector<std::int32_t> C(9, 7);
  lowp::quant::gemm_s8s8_s32(A.data(), B.data(), C.data(), 3, 3, 0);
  for (auto c : C) EXPECT_EQ(c, 0);
  lowp::quant::gemm_s8s8_s32(nullptr, nullptr, nullptr, 0, 3, 4);  // nothing to do
}

TEST(GemmInt8, BadArguments) {
  std::vector<std::int8_t> A(4), B(4);
  std::vector<std::int32_t> C(1);
  using lowp::test::expect_error;
  expect_error(
      [&] {
        lowp::quant::gemm_s8s8_s32(A.data(), B.data(), C.data(), 1, 1, 4, {{}, -1});
      },
      {"threads = -1"});
  expect_error([&] { lowp::quant::gemm_s8s8_s32(nullptr, B.data(), C.data(), 1, 1, 4); },
               {"A is null"});
  expect_error([&] { lowp::quant::gemm_s8s8_s32(A.data(), nullptr, C.data(), 1, 1, 4); },
               {"B is null"});
  expect_error([&] { lowp::quant::gemm_s8s8_s32(A.data(), B.data(), nullptr, 1, 1, 4); },
               {"C is null"});
  const std::size_t huge = std::size_t{1} << 40;
  expect_error([&] { lowp::quant::gemm_s8s8_s32(A.data(), B.data(), C.data(), huge, 1, huge); },
               {"overflow"});
  for (Int8Kernel k : {Int8Kernel::avx2, Int8Kernel::vnni, Int8Kernel::amx})
    if (!lowp::quant::int8_kernel_available(k))
      expect_error(
          [&] {
            lowp::quant::gemm_s8s8_s32(A.data(), B.data(), C.data(), 1, 1, 4, {k, 1});
          },
          {std::string(lowp::quant::int8_kernel_name(k)), "not available"});
}

// gemm_s8s8_f32: C[i][j] = (float)acc * (sa[i] * sb[j]), rounded, then + bias[j], rounded
// (the two statements keep the compiler from fusing them).
std::vector<float> reference_f32(const std::vector<std::int32_t>& acc, std::size_t M, std::size_t N,
                                 const std::vector<float>& sa, const std::vector<float>& sb,
                                 const std::vector<float>* bias) {
  std::vector<float> C(M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      volatile float y = static_cast<float>(acc[i * N + j]) * (sa[sa.size() > 1 ? i : 0] * sb[sb.size() > 1 ? j : 0]);
      C[i * N + j] = bias ? y + (*bias)[j] : y;
    }
  return C;
}

std::vector<float> random_scales(std::size_t n, std::uint64_t seed) {
  lowp::test::SplitMix g{seed};
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(static_cast<float>(g.next() >> 40) + 1.0f, -30);  // (0, 2^-6]
  return v;
}

TEST(GemmInt8, DequantizedMatchesTheReferenceBitForBit) {
  // Both layouts of B, scales per row / per tensor on each side, with and without a bias, past
  // the VNNI kernel's K block (512), C tile (192 x 256) and ragged edges; C starts as garbage.
  const std::size_t shapes[][3] = {{193, 257, 516}, {7, 13, 37}, {1, 1, 1}};
  std::uint64_t seed = 5000;
  for (const auto& s : shapes) {
    const std::size_t M = s[0], N = s[1], K = s[2];
    const auto A = random_int8(M * K, seed++);
    const auto B = random_int8(N * K, seed++);
    std::vector<std::int8_t> Bt(N * K);
    for (std::size_t j = 0; j < N; ++j)
      for (std::size_t k = 0; k < K; ++k) Bt[k * N + j] = B[j * K + k];
    const auto acc = reference(A, B, M, N, K);
    const auto bias = random_scales(N, seed++);
    for (const auto [a_rows, b_rows, with_bias] : {std::array<bool, 3>{false, false, false}, {true, false, true},
                                                   {false, true, true}, {true, true, false}}) {
          auto sa = random_scales(a_rows ? M : 1, seed++), sb = random_scales(b_rows ? N : 1, seed++);
          if (a_rows && M > 1) sa[1] = std::numeric_limits<float>::quiet_NaN();  // a non-finite row
          const auto ref = reference_f32(acc, M, N, sa, sb, with_bias ? &bias : nullptr);
          lowp::quant::Int8Dequant dq{sa.data(), a_rows, sb.data(), b_rows, with_bias ? bias.data() : nullptr};
          for (Int8Kernel k : kernels())
            for (int threads : {1, 2})
              for (auto layout : {lowp::quant::Layout::as_is, lowp::quant::Layout::transposed}) {
                std::vector<float> C(M * N, 12345.0f);
                const bool t = layout == lowp::quant::Layout::transposed;
                lowp::quant::gemm_s8s8_f32(A.data(), t ? Bt.data() : B.data(), layout, C.data(), M, N, K, dq,
                                           Int8GemmOptions{k, threads});
                std::size_t bad = 0;
                for (std::size_t i = 0; i < C.size(); ++i)
                  bad += std::isnan(ref[i]) ? !std::isnan(C[i]) : C[i] != ref[i];
                EXPECT_EQ(bad, 0u) << lowp::quant::int8_kernel_name(k) << " threads=" << threads << " M=" << M
                                   << " N=" << N << " K=" << K << " transposed=" << t << " rows " << a_rows
                                   << b_rows << " bias " << with_bias;
              }
        }
  }
}

TEST(GemmInt8, DequantizedBadArguments) {
  std::vector<std::int8_t> A(4), B(4);
  std::vector<float> C(1), s(1, 1.0f);
  using lowp::test::expect_error;
  using lowp::quant::Layout;
  expect_error([&] { lowp::quant::gemm_s8s8_f32(A.data(), B.data(), Layout::as_is, C.data(), 1, 1, 4, {}); },
               {"gemm_s8s8_f32", "null a_scale"});
  expect_error(
      [&] {
        lowp::quant::gemm_s8s8_f32(A.data(), nullptr, Layout::as_is, C.data(), 1, 1, 4, {s.data(), false, s.data()});
      },
      {"gemm_s8s8_f32", "B is null"});
}

}  // namespace
