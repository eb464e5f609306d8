// The float32 GEMM kernels: each instruction set's tile bit for bit against an fma chain
// written here (the documented order: blocks of 256 products along K, each summed by fused
// multiply-adds from 0 and then added into C), operands laid out either way round, and B
// stored as bf16 / f16 / a custom block type widened inside the GEMM.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../../quant/src/gemm/gemm_f32_kernels.hpp"
#include "../../quant/src/gemm/gemv_f32_kernels.hpp"
#include "lowp/numerics/half.hpp"
#include "lowp/quant/gemm.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

// C = A B^T (+ C0) as the kernels promise to compute it, A: M x K, B: N x K.
std::vector<float> oracle(const std::vector<float>& A, const std::vector<float>& B, const std::vector<float>& C0,
                          std::size_t M, std::size_t N, std::size_t K, bool accumulate) {
  std::vector<float> C(M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      float c = accumulate ? C0[i * N + j] : 0.0f;
      for (std::size_t k0 = 0; k0 < K; k0 += 256) {
        float acc = 0.0f;
        for (std::size_t k = k0; k < std::min(K, k0 + 256); ++k) acc = std::fma(A[i * K + k], B[j * K + k], acc);
        c = (k0 == 0 && !accumulate) ? acc : c + acc;
      }
      C[i * N + j] = c;
    }
  return C;
}

std::vector<float> transposed(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  std::vector<float> t(x.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  return t;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// With two threads the row blocks of a column panel, which share its packed B, are split
// between the threads ({200, 520, 600}: two row blocks, three K blocks). The last four sit at
// the driver's blocking boundaries: a row count of a few slivers, where two threads split each
// column panel into runs of B slivers; N past one column panel of 4096 (two panels, the last
// sliver partial); M past two row blocks of up to 144 rows, the last row sliver partial.
const std::size_t kShapes[][3] = {{1, 1, 1},      {13, 33, 7},    {12, 32, 256},  {25, 70, 257},
                                  {7, 300, 600},  {130, 17, 513}, {49, 260, 100}, {200, 520, 600},
                                  {3, 300, 300},  {5, 70, 20},    {9, 4200, 17},  {301, 40, 260}};

TEST(GemmF32Kernels, EveryIsaMatchesTheFmaOracleBitwise) {
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512})
    if (!isa_available(isa))
      // Not "[  SKIPPED ]": CTest would then report the whole test skipped though the others ran.
      std::printf("[   NOTE   ] %s kernels not checked: not available on this CPU (the others are)\n",
                  std::string(isa_name(isa)).c_str());
  // The operands and the oracle once per shape and mode, every kernel, layout and thread count
  // against them.
  for (const auto& s : kShapes)
    for (bool acc : {false, true}) {
      const std::size_t M = s[0], N = s[1], K = s[2];
      const auto A = test::normal_floats(M * K, 31), B = test::normal_floats(N * K, 32);
      const auto C0 = test::normal_floats(M * N, 33);
      const auto At = transposed(A, M, K), Bt = transposed(B, N, K);
      const auto want = oracle(A, B, C0, M, N, K, acc);
      for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        if (!isa_available(isa)) continue;
        const auto& kern = detail::gemm_f32_kernel(isa);
        for (int layout = 0; layout < 3; ++layout)  // 0: plain, 1: A transposed, 2: B transposed
          for (int threads : {1, 2}) {
            detail::GemmF32Args g;
            if (layout == 1) {
              g.a = At.data();
              g.a_rs = 1;
              g.a_cs = M;
            } else {
              g.a = A.data();
              g.a_rs = K;
            }
            if (layout == 2)
              g.b_t = Bt.data();
            else
              g.b = {StoredType::f32, B.data(), N, K};
            std::vector<float> C = C0;
            g.c = C.data();
            g.M = M;
            g.N = N;
            g.K = K;
            g.accumulate = acc;
            detail::gemm_f32_run(g, kern, threads);
            EXPECT_TRUE(same_bits(C, want)) << isa_name(isa) << " M=" << M << " N=" << N << " K=" << K
                                            << " accumulate=" << acc << " layout=" << layout
                                            << " threads=" << threads;
          }
      }
    }
}

// Each instruction set's packing of slivers against its definition: out[k * width + r] = row r's
// element k, zeros for the rows past n, nothing written past kc * width; widths of every
// kernel's mr and nr, row counts from 0 to the width, kc around the 8 x 8 squares, rows at byte
// offsets that no float alignment shares.
TEST(GemmF32Kernels, PackRowsIsTheTransposeOfTheRows) {
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!isa_available(isa)) continue;
    const detail::PackRowsFn pack = detail::gemm_f32_kernel(isa).pack_rows;
    for (std::size_t width : {3, 4, 6, 7, 12, 16, 32})
      for (std::size_t n = 0; n <= width; ++n)
        for (std::size_t kc : {1, 7, 8, 9, 16, 23, 256}) {
          const auto vals = test::normal_floats(width * kc, static_cast<std::uint32_t>(width * 1000 + kc));
          std::vector<std::uint8_t> store(width * (kc * 4 + 3));
          std::vector<const void*> rows(width);
          for (std::size_t r = 0; r < width; ++r) {  // row r at byte offset r % 4 of its slot
            std::uint8_t* p = store.data() + r * (kc * 4 + 3) + r % 4;
            std::memcpy(p, vals.data() + r * kc, kc * 4);
            rows[r] = p;
          }
          std::vector<float> out(kc * width + 8, -7.0f), want(kc * width + 8, -7.0f);
          for (std::size_t k = 0; k < kc; ++k)
            for (std::size_t r = 0; r < width; ++r) want[k * width + r] = r < n ? vals[r * kc + k] : 0.0f;
          pack(rows.data(), n, width, kc, out.data());
          EXPECT_TRUE(same_bits(out, want)) << isa_name(isa) << " width=" << width << " n=" << n << " kc=" << kc;
        }
  }
}

// Each instruction set's packing of a transposed operand against its definition: out[k * width +
// c] = src[k * ld + c] for c < n, zeros up to the width, nothing written past kc * width and
// nothing read past column n of a row (the source ends right after the last row's n floats).
TEST(GemmF32Kernels, PackColsCopiesTheRowsOfEachK) {
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!isa_available(isa)) continue;
    const detail::PackColsFn pack = detail::gemm_f32_kernel(isa).pack_cols;
    for (std::size_t width : {3, 4, 6, 12, 16, 17, 32})
      for (std::size_t n = 0; n <= width; ++n)
        for (std::size_t kc : {1, 7, 256})
          for (std::size_t ld : {width, width + 5}) {
            const std::size_t size = (kc - 1) * ld + n;  // a vector of exactly that many: ASan sees past it
            const auto vals = test::normal_floats(size + 1, static_cast<std::uint32_t>(width * 1000 + kc + ld));
            const std::vector<float> src(vals.begin(), vals.begin() + static_cast<std::ptrdiff_t>(size));
            std::vector<float> out(kc * width + 8, -7.0f), want(kc * width + 8, -7.0f);
            for (std::size_t k = 0; k < kc; ++k)
              for (std::size_t c = 0; c < width; ++c) want[k * width + c] = c < n ? src[k * ld + c] : 0.0f;
            pack(src.data(), ld, n, width, kc, out.data());
            EXPECT_TRUE(same_bits(out, want)) << isa_name(isa) << " width=" << width << " n=" << n << " kc=" << kc
                                              << " ld=" << ld;
          }
  }
}

// The public gemm_f32 with operands laid out either way round: the oracle's bits every time.
TEST(GemmF32Kernels, LayoutsGiveTheBitsOfTheTransposedCopies) {
  for (const auto& s : kShapes) {
    const std::size_t M = s[0], N = s[1], K = s[2];
    const auto A = test::normal_floats(M * K, 51), B = test::normal_floats(N * K, 52), C0 = test::normal_floats(M * N, 53);
    const auto At = transposed(A, M, K), Bt = transposed(B, N, K);
    const auto want = oracle(A, B, C0, M, N, K, true);
    for (Layout la : {Layout::as_is, Layout::transposed})
      for (Layout lb : {Layout::as_is, Layout::transposed})
        for (int threads : {1, 2}) {
          std::vector<float> C = C0;
          gemm_f32(la == Layout::as_is ? A.data() : At.data(), la, lb == Layout::as_is ? B.data() : Bt.data(), lb,
                   C.data(), M, N, K, true, threads);
          EXPECT_TRUE(same_bits(C, want)) << "M=" << M << " N=" << N << " K=" << K << " A "
                                          << (la == Layout::as_is ? "as is" : "transposed") << ", B "
                                          << (lb == Layout::as_is ? "as is" : "transposed") << " threads=" << threads;
        }
  }
}

// Custom stored type for the test: blocks of 32 int8 codes after a float scale (a Q8_0-like
// layout written here), decoded by the callback.
struct Q8Ctx {
  int calls = 0, lane_calls = 0, dot_calls = 0;
};
float q8_at(const void* row, std::size_t k) {  // element k of a row of that type
  const auto* p = static_cast<const std::uint8_t*>(row) + k / 32 * 36;
  float d;
  std::memcpy(&d, p, 4);
  return d * static_cast<float>(static_cast<std::int8_t>(p[4 + k % 32]));
}
void widen_q8(const void* ctx, const void* row, std::size_t k0, std::size_t n, float* out) {
  ++const_cast<Q8Ctx*>(static_cast<const Q8Ctx*>(ctx))->calls;
  for (std::size_t i = 0; i < n; ++i) out[i] = q8_at(row, k0 + i);
}
// The same type decoded 8 rows at a time into lanes (StoredMatrix::widen_lanes).
void widen_q8_lanes(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, float* out,
                    std::size_t ld) {
  ++const_cast<Q8Ctx*>(static_cast<const Q8Ctx*>(ctx))->lane_calls;
  EXPECT_TRUE(k0 % 32 == 0 && n % 32 == 0 && ld >= 8) << k0 << " " << n << " " << ld;
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t k = 0; k < n; ++k) out[k * ld + r] = q8_at(rows[r], k0 + k);
}
// The same type's decode and dot in one pass, 64 rows at once (StoredMatrix::dot_lanes).
void dot_q8_lanes(const void* ctx, const void* const* rows, std::size_t k0, std::size_t n, const float* x,
                  float* acc) {
  ++const_cast<Q8Ctx*>(static_cast<const Q8Ctx*>(ctx))->dot_calls;
  EXPECT_TRUE(k0 % 32 == 0 && n % 32 == 0) << k0 << " " << n;
  for (std::size_t r = 0; r < 64; ++r)
    for (std::size_t k = 0; k < n; ++k) acc[r] = std::fma(x[k], q8_at(rows[r], k0 + k), acc[r]);
}

// B (N x K) stored every way gemm_f32 reads it (f32, bf16, f16, rows through row_map, the Q8-like
// custom type when K is a multiple of 32), each with the float32 values it stands for.
struct StoredCase {
  std::string name;
  StoredMatrix m;
  std::vector<float> widened;
};
struct StoredCases {
  std::vector<std::uint16_t> b16, h16, b16r;
  std::vector<std::uint32_t> rev;
  std::vector<std::uint8_t> q8;
  std::vector<float> f32;
  mutable Q8Ctx ctx;
  std::vector<StoredCase> cases;
  StoredCases(std::size_t N, std::size_t K, std::uint32_t seed) : f32(test::normal_floats(N * K, seed)) {
    b16.resize(N * K);
    h16.resize(N * K);
    std::vector<float> wb(N * K), wh(N * K);
    for (std::size_t i = 0; i < N * K; ++i) {
      b16[i] = f32_to_bf16(f32[i]);
      h16[i] = f32_to_f16(f32[i]);
      wb[i] = bf16_to_f32(b16[i]);
      wh[i] = f16_to_f32(h16[i]);
    }
    rev.resize(N);
    b16r.resize(N * K);
    for (std::size_t r = 0; r < N; ++r) {
      rev[r] = static_cast<std::uint32_t>(N - 1 - r);
      std::memcpy(&b16r[(N - 1 - r) * K], &b16[r * K], K * 2);
    }
    cases.push_back({"f32", {StoredType::f32, f32.data(), N, K}, f32});
    cases.push_back({"bf16", {StoredType::bf16, b16.data(), N, K}, wb});
    cases.push_back({"f16", {StoredType::f16, h16.data(), N, K}, wh});
    cases.push_back({"bf16 row_map", {StoredType::bf16, b16r.data(), N, K, rev.data()}, wb});
    if (K % 32 == 0) {  // the Q8-like custom type: blocks of 32
      q8.resize(N * (K / 32) * 36);
      std::vector<float> wq(N * K);
      for (std::size_t r = 0; r < N; ++r)
        for (std::size_t b = 0; b < K / 32; ++b) {
          const float d = 0.01f * static_cast<float>(b + 1);
          std::uint8_t* blk = &q8[(r * (K / 32) + b) * 36];
          std::memcpy(blk, &d, 4);
          for (std::size_t i = 0; i < 32; ++i) {
            const auto q = static_cast<std::int8_t>(
                std::lround(std::clamp(f32[r * K + b * 32 + i] * 40.0f, -127.0f, 127.0f)));
            blk[4 + i] = static_cast<std::uint8_t>(q);
            wq[r * K + b * 32 + i] = d * static_cast<float>(q);
          }
        }
      cases.push_back(
          {"custom q8", {StoredType::custom, q8.data(), N, K, nullptr, (K / 32) * 36, 32, &widen_q8, &ctx}, wq});
      StoredMatrix lanes = cases.back().m;
      lanes.widen_lanes = &widen_q8_lanes;
      cases.push_back({"custom q8 lanes", lanes, wq});
      lanes.dot_lanes = &dot_q8_lanes;  // preferred to widen_lanes
      cases.push_back({"custom q8 dot lanes", lanes, wq});
      lanes.dot_columns = 32;  // eight calls per K block, each continuing the chains
      cases.push_back({"custom q8 dot lanes, 32 columns a call", lanes, wq});
    }
  }
};

TEST(GemmF32Kernels, StoredWeightsWidenInsideTheGemm) {
  // K: two full K blocks and a part, 17 blocks of 32; M: enough work for gemm_f32 to take two
  // threads, which then share one packed (widened) B.
  const std::size_t M = 240, N = 70, K = 544;
  const auto A = test::normal_floats(M * K, 41);
  const StoredCases sc(N, K, 42);
  const std::vector<float> zero(M * N);
  for (const auto& c : sc.cases)
    for (int threads : {1, 2}) {
      std::vector<float> C(M * N);
      gemm_f32(A.data(), c.m, C.data(), M, false, threads);
      EXPECT_TRUE(same_bits(C, oracle(A, c.widened, zero, M, N, K, false))) << c.name << " threads=" << threads;
      std::vector<float> rows(3 * K);
      widen_rows(c.m, 5, 3, rows.data());
      EXPECT_EQ(std::memcmp(rows.data(), c.widened.data() + 5 * K, rows.size() * 4), 0) << c.name;
    }
  EXPECT_GT(sc.ctx.calls, 0);
}

TEST(GemmF32Kernels, StoredMatrixBadArguments) {
  std::vector<float> A(4), C(4);
  std::vector<std::uint16_t> b(4);
  using test::expect_error;
  StoredMatrix m{StoredType::custom, b.data(), 2, 2, nullptr, 4, 3, nullptr, nullptr};
  expect_error([&] { gemm_f32(A.data(), m, C.data(), 2); }, {"custom stored matrix", "block 3"});
  expect_error([&] { widen_rows({StoredType::bf16, b.data(), 2, 2}, 1, 2, A.data()); }, {"rows [1, 3)", "of 2"});
  expect_error([&] { gemm_f32(A.data(), StoredMatrix{StoredType::bf16, nullptr, 2, 2}, C.data(), 2); }, {"B is null"});
  m.block = 2;
  m.widen = [](const void*, const void*, std::size_t, std::size_t, float*) {};
  m.dot_lanes = [](const void*, const void* const*, std::size_t, std::size_t, const float*, float*) {};
  m.dot_columns = 48;
  expect_error([&] { gemm_f32(A.data(), m, C.data(), 2); }, {"dot_columns 48", "multiple of 32"});
  m.dot_columns = 32;
  m.grouped_rows = 64;
  m.grouped_type = StoredType::custom;  // a group's elements must be plain floats
  expect_error([&] { gemm_f32(A.data(), m, C.data(), 2); }, {"grouped rows", "float32, f16 or bf16"});
  StoredMatrix plain{StoredType::f32, A.data(), 2, 2};
  plain.grouped_rows = 64;  // only a custom matrix says how its rows are laid
  expect_error([&] { gemm_f32(A.data(), plain, C.data(), 2); }, {"grouped rows"});
}


// ---- The one-row GEMM (gemv_f32_kernels.hpp), which gemm_f32 runs when M = 1.

// N x K: row counts around each kernel's rows (4, 16, 32, and the 32 of the lanes path) and K
// around its squares and the K block of 256, so that both the kernels' tails and the driver's
// last rows run.
const std::size_t kGemvShapes[][2] = {{1, 1},   {3, 5},    {16, 16},  {17, 31},  {33, 256},
                                      {70, 257}, {48, 544}, {100, 600}, {37, 1000}, {100, 640}};

TEST(GemvF32Kernels, EveryIsaAndStoredTypeMatchesTheFmaOracleBitwise) {
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!isa_available(isa)) {
      // Not "[  SKIPPED ]": CTest would then report the whole test skipped though the others ran.
      std::printf("[   NOTE   ] %s kernels not checked: not available on this CPU (the others are)\n",
                  std::string(isa_name(isa)).c_str());
      continue;
    }
    const auto& kern = detail::gemv_f32_kernel(isa);
    for (const auto& s : kGemvShapes) {
      const std::size_t N = s[0], K = s[1];
      const StoredCases sc(N, K, 61);
      const auto x = test::normal_floats(K, 62), y0 = test::normal_floats(N, 63);
      // y0 (+)= x B^T by the kernel, B stored as `m` or, when bt is set, transposed (K x N).
      const auto gemv = [&](const StoredMatrix& m, const float* bt, bool acc, int threads) {
        detail::GemmF32Args g;
        g.a = x.data();
        g.a_rs = K;
        g.b = m;
        g.b_t = bt;
        std::vector<float> y = y0;
        g.c = y.data();
        g.M = 1;
        g.N = N;
        g.K = K;
        g.accumulate = acc;
        detail::gemv_f32_run(g, kern, threads);
        return y;
      };
      const auto Bt = transposed(sc.f32, N, K);
      for (bool acc : {false, true})
        for (int threads : {1, 2, 3}) {
          for (const auto& c : sc.cases)
            EXPECT_TRUE(same_bits(gemv(c.m, nullptr, acc, threads), oracle(x, c.widened, y0, 1, N, K, acc)))
                << isa_name(isa) << " " << c.name << " N=" << N << " K=" << K << " accumulate=" << acc
                << " threads=" << threads;
          EXPECT_TRUE(same_bits(gemv({}, Bt.data(), acc, threads), oracle(x, sc.f32, y0, 1, N, K, acc)))
              << isa_name(isa) << " B transposed N=" << N << " K=" << K << " accumulate=" << acc
              << " threads=" << threads;
        }
      if (K % 32 == 0) {
        EXPECT_GT(sc.ctx.lane_calls, 0) << "N=" << N << " K=" << K;  // the lanes paths ran
        EXPECT_GT(sc.ctx.dot_calls, 0) << "N=" << N << " K=" << K;
      }
    }
  }
}

// The public gemm_f32 with M = 1 runs the GEMV: row i of an M-row product computed by the
// packed GEMM has the bits of the one-row product of row i (the decode step relies on it).
TEST(GemvF32Kernels, OneRowOfTheGemmIsTheGemv) {
  const std::size_t M = 96, N = 300, K = 600;  // enough work for the GEMM to take both threads
  const StoredCases sc(N, K, 71);
  const auto A = test::normal_floats(M * K, 72);
  for (const auto& c : sc.cases) {
    std::vector<float> C(M * N), y(N);
    gemm_f32(A.data(), c.m, C.data(), M, false, 2);
    for (std::size_t i : {std::size_t{0}, std::size_t{37}, M - 1}) {
      gemm_f32(A.data() + i * K, c.m, y.data(), 1, false, 2);
      EXPECT_EQ(std::memcmp(y.data(), C.data() + i * N, N * sizeof(float)), 0) << c.name << " row " << i;
    }
  }
}

TEST(GemvF32Kernels, TeamSpeedsSplitTheRowGroupsAndLearnFromTimes) {
  detail::TeamSpeeds s;
  std::size_t ends[3];
  s.split(2, 10, ends);
  EXPECT_EQ(ends[0], 5u);
  EXPECT_EQ(ends[1], 10u);
  s.set(0, 3.0f);  // 7.5 of 10 rounds to 8
  s.split(2, 10, ends);
  EXPECT_EQ(ends[0], 8u);
  s.set(0, 100.0f);  // clamped to 4: 10 * 4 / 5 = 8 again
  EXPECT_EQ(s.speed(0), 4.0f);
  s.set(1, 0.0f);  // clamped to 1/4: 10 * 4 / 4.25 = 9.41
  s.split(2, 10, ends);
  EXPECT_EQ(ends[0], 9u);
  s.set(0, 1.0f);
  s.set(1, 0.25f);
  s.set(2, 1.0f);
  s.split(3, 9, ends);  // 9 * 1 / 2.25 = 4, 9 * 1.25 / 2.25 = 5
  EXPECT_EQ(ends[0], 4u);
  EXPECT_EQ(ends[1], 5u);
  EXPECT_EQ(ends[2], 9u);
  // Units 5 and 5 in 1 s and 2 s: rates 5 and 2.5 over a mean of 3.75, so each speed moves a
  // fifth of the way from 1 to 4/3 and 2/3.
  detail::TeamSpeeds l;
  const std::size_t units[2] = {5, 5};
  const double seconds[2] = {1.0, 2.0}, unmeasured[2] = {1.0, 0.0};
  l.learn(2, units, unmeasured);
  EXPECT_EQ(l.speed(0), 1.0f);
  l.learn(2, units, seconds);
  EXPECT_NEAR(l.speed(0), 1.0 + 0.2 / 3, 1e-6);
  EXPECT_NEAR(l.speed(1), 1.0 - 0.2 / 3, 1e-6);
}

TEST(GemvF32Kernels, UnevenTeamSpeedsKeepEveryRowsBits) {
  // The process's speeds skewed both ways: each thread's share changes, no row's bits do.
  // (Two threads: gemv_f32 takes a second one from 2^17 weights.)
  const std::size_t K = 1088;
  const StoredCases a(300, K, 91), b(130, K, 92);
  const auto x = test::normal_floats(K, 93);
  detail::TeamSpeeds& speeds = detail::gemv_team_speeds();
  for (const auto& [s0, s1] : {std::pair{4.0f, 0.25f}, std::pair{0.25f, 4.0f}, std::pair{1.0f, 3.0f}}) {
    for (const StoredCases* sc : {&a, &b})
      for (const auto& cs : sc->cases) {
        speeds.set(0, s0);
        speeds.set(1, s1);
        std::vector<float> y(cs.m.rows, -1.0f);
        std::vector<float*> out{y.data()};
        gemv_f32(x.data(), std::span(&cs.m, 1), out, 2);
        const std::vector<float> zero(cs.m.rows);
        EXPECT_TRUE(same_bits(y, oracle(x, cs.widened, zero, 1, cs.m.rows, K, false)))
            << cs.name << " rows " << cs.m.rows << " speeds " << s0 << " " << s1;
      }
  }
  speeds.set(0, 1.0f);
  speeds.set(1, 1.0f);
}

// run_shares (work_share.hpp), which both one-row GEMMs split their units with, runs every unit
// exactly once whatever the team and the speeds' split: runs that go on through their share
// while Ahead lets them and runs that stop after one unit (whose threads then steal the others'
// units from the back), a team as large as the units. The mutants in mind: a steal that takes
// the unit before the back one (b - 2), an Ahead::go() that lets a run go on without claiming.
TEST(GemvF32Kernels, RunSharesRunsEveryUnitOnce) {
  detail::TeamSpeeds& speeds = detail::gemv_team_speeds();
  for (const std::size_t team : {1u, 2u, 3u})
    for (const std::size_t total : {1u, 2u, 3u, 7u, 64u})
      for (const bool go_on : {false, true})
        for (const float s0 : {0.25f, 1.0f, 4.0f}) {
          if (team > total) continue;
          speeds.set(0, s0);
          std::vector<std::atomic<int>> runs(total);
          std::atomic<int> past_end = 0;
          detail::run_shares(team, total, [&](std::size_t u, std::size_t end, const detail::Ahead& ahead) {
            if (u >= end) ++past_end;
            ++runs[u];
            for (std::size_t v = u + 1; go_on && v < end && ahead.go(); ++v) ++runs[v];
          });
          EXPECT_EQ(past_end.load(), 0);
          for (std::size_t u = 0; u < total; ++u)
            ASSERT_EQ(runs[u].load(), 1) << "unit " << u << " of " << total << ", team " << team << ", going on " << go_on
                                         << ", speed " << s0;
        }
  for (std::size_t t = 0; t < 3; ++t) speeds.set(t, 1.0f);
}

// gemv_f32 on several matrices of one x (a decode step's [q | k | v]) gives each matrix the fma
// oracle's bits, whatever the thread count: every stored type at once, of unequal row counts
// (an empty one among them), so that thread runs cross from one matrix into the next. The
// mutant in mind: a run's rows offset from the start of all the matrices' rows, not its own.
TEST(GemvF32Kernels, SeveralMatricesInOneCallAreEachTheFmaOracle) {
  const std::size_t K = 544;
  const StoredCases a(70, K, 81), b(33, K, 82), c(130, K, 83);
  const auto x = test::normal_floats(K, 84);
  std::vector<StoredMatrix> mats;
  std::vector<const std::vector<float>*> want_b;
  for (const StoredCases* sc : {&a, &b, &c})
    for (const auto& cs : sc->cases) {
      mats.push_back(cs.m);
      want_b.push_back(&cs.widened);
    }
  mats.insert(mats.begin() + 3, StoredMatrix{StoredType::f32, nullptr, 0, K});  // no rows
  want_b.insert(want_b.begin() + 3, nullptr);
  for (int threads : {1, 2, 3, 5}) {
    std::vector<std::vector<float>> ys(mats.size());
    std::vector<float*> outs;
    for (std::size_t i = 0; i < mats.size(); ++i) {
      ys[i].assign(mats[i].rows, -1.0f);
      outs.push_back(ys[i].data());
    }
    gemv_f32(x.data(), mats, outs, threads);
    for (std::size_t i = 0; i < mats.size(); ++i) {
      if (!want_b[i]) continue;
      const std::vector<float> zero(mats[i].rows);
      EXPECT_TRUE(same_bits(ys[i], oracle(x, *want_b[i], zero, 1, mats[i].rows, K, false)))
          << "matrix " << i << " threads=" << threads;
    }
  }
  EXPECT_GT(c.ctx.dot_calls, 0);
  using test::expect_error;
  std::vector<float> y(70);
  std::vector<float*> one{y.data()}, none;
  expect_error([&] { gemv_f32(x.data(), std::span(mats).first(2), one); }, {"2 matrices and 1 outputs"});
  const StoredMatrix wide{StoredType::f32, x.data(), 1, K - 32};
  std::vector<StoredMatrix> two{mats[0], wide};
  std::vector<float*> outs2{y.data(), y.data()};
  expect_error([&] { gemv_f32(x.data(), two, outs2); }, {"matrix 1 has 512 columns, matrix 0 544"});
  std::vector<float*> null_out{nullptr};
  expect_error([&] { gemv_f32(x.data(), std::span(mats).first(1), null_out); }, {"output 0 is null"});
}

}  // namespace
}  // namespace lowp::quant
