// The training recipes' backward quantizers against independent implementations written here,
// element by element with the same counter-based random stream (lowp/numerics/rng.hpp):
// Quartet II's MS-EDEN (per-block <x,x>/<x,q> correction folded into a stochastically rounded
// UE4M3 scale), Quartet's backward quantizer (2^floor(log2 amax) / 3 scales, stochastic E2M1),
// and at layer level quartet-fp4's whole backward (block-32 Hadamard with one sign vector per
// backward pass, re-quantizing the forward's QuEST operands) and nvfp4-train's wgrad with
// TransformerEngine's fixed sign vector.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

#include "../../quant/src/linear/linear_operand.hpp"
#include "lowp/hadamard/rotation.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/rng.hpp"
#include "lowp/quant/linear.hpp"
#include "test_linear_support.hpp"

namespace lowp::quant {
namespace {

using test::LinearProblem;
using test::e2m1_rne;
using test::make_problem;
using test::rel_frob;
using test::transposed;

// Stochastic rounding of a magnitude a >= 0 between adjacent grid points lo <= a < hi, with
// lowp's rule (numerics/rounding.hpp): up iff floor(f * 2^32) + u >= 2^32 for the discarded
// fraction f = (a - lo) / (hi - lo) (exact here: hi - lo is a power of two).
double sr_between(double a, double lo, double hi, std::uint32_t u) {
  if (a == lo) return lo;
  const double f = (a - lo) / (hi - lo);
  const auto F = static_cast<std::uint64_t>(std::floor(std::ldexp(f, 32)));
  return F + u >= (std::uint64_t{1} << 32) ? hi : lo;
}

// E2M1 stochastic rounding of |y| <= 6.
double e2m1_sr(double y, std::uint32_t u) {
  static const double grid[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const double a = std::fabs(y);
  if (a >= 6) return std::copysign(6.0, y);
  int i = 0;
  while (grid[i + 1] <= a) ++i;
  return std::copysign(sr_between(a, grid[i], grid[i + 1], u), y);
}

// UE4M3 (quantum 2^(e-3) for 2^e <= v < 2^(e+1), e >= -6; subnormal quantum 2^-9; largest
// 448), to nearest even, or stochastically with bits u; both saturate at 448.
double ue4m3_round(double v, bool stochastic, std::uint32_t u) {
  if (!(v > 0)) return 0;
  if (v >= 448) return 448;
  const int e = std::max(std::ilogb(v), -6);
  const double q = std::ldexp(1.0, e - 3);
  const double lo = std::floor(v / q) * q;
  if (stochastic) return std::min(448.0, sr_between(v, lo, lo + q, u));
  return std::min(448.0, std::nearbyint(v / q) * q);
}

// Matrices with rows of very different magnitudes (and one zero block), so that block scales
// spread over many UE4M3 / E8M0 values.
std::vector<float> spread_matrix(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::vector<float> x = test::normal_floats(rows * cols, seed);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) x[r * cols + c] *= std::ldexp(1.0f, static_cast<int>(r % 13) - 6);
  for (std::size_t c = 0; c < 32 && c < cols; ++c) x[c] = 0.0f;
  return x;
}

// Quartet II's MS-EDEN, element by element, as its eden_fp4 kernel (kernels/csrc/
// round_eden_fp4.cu) computes it: val_max = 6 / override with override (17/16) * 0.93
// (quartet2/linear.py); tensor scale amax / 255.99 / val_max; per 16-block the E4M3 scale of
// (block amax / val_max) / tensor scale (nearest, saturating, 1 if it is 0); E2M1 codes of
// x * (1 / (scale * tensor scale)) to nearest; then the scale times <x, x> / <x, q> (code
// domain, sums in double) rounded stochastically to E4M3 with the bits of the block's index;
// the values code * (tensor scale * corrected scale).
// (One chunk, and 20 chunks of 4096 run in parallel.)
class MsEdenShapes : public ::testing::TestWithParam<std::pair<std::size_t, std::size_t>> {};
INSTANTIATE_TEST_SUITE_P(LinearRecipes, MsEdenShapes,
                         ::testing::Values(std::pair<std::size_t, std::size_t>{48, 64},
                                           std::pair<std::size_t, std::size_t>{320, 256}));

TEST_P(MsEdenShapes, MsEdenAgainstIndependentImplementation) {
  const auto [rows, cols] = GetParam();
  const std::size_t G = 16;
  const std::uint64_t seed = 0x5eed;
  const std::vector<float> x = spread_matrix(rows, cols, 91);
  std::vector<float> got = x;
  detail::ms_eden_quantize(got.data(), rows, cols, seed);

  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float override_ = static_cast<float>(17.0 / 16.0 * 0.93);
  const float val_max = 6.0f / override_;
  const float ts = amax / 255.99f / val_max;
  const RngKey key = rng_key(seed);
  std::size_t corrected = 0, rounded_up = 0, rounded_down = 0;
  for (std::size_t g = 0; g < rows * cols / G; ++g) {
    const float* v = x.data() + g * G;
    float bmax = 0;
    for (std::size_t i = 0; i < G; ++i) bmax = std::max(bmax, std::fabs(v[i]));
    float s = static_cast<float>(ue4m3_round(bmax / val_max / ts, false, 0));
    if (s == 0) s = 1;
    const float factor = 1.0f / (s * ts);
    double q[G], xx = 0, xq = 0;
    for (std::size_t i = 0; i < G; ++i) {
      const float y = v[i] * factor;
      q[i] = e2m1_rne(y);
      xx += double(y) * y;
      xq += double(y) * q[i];
    }
    const double c = xq != 0 ? xx / xq : 1.0;
    const float s2 = static_cast<float>(ue4m3_round(double(s) * c, true, random_bits(key, g)));
    corrected += s2 != s;
    if (c != 1.0) (s2 * 1.0 > double(s) * c ? rounded_up : rounded_down) += 1;
    for (std::size_t i = 0; i < G; ++i) {
      const float want = static_cast<float>(q[i]) * (ts * s2);
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[g * G + i]), std::bit_cast<std::uint32_t>(want))
          << "block " << g << " element " << i << ": " << got[g * G + i] << " vs " << want;
    }
  }
  // The check can fail: the correction moved scales, and the stochastic rounding went both ways.
  EXPECT_GT(corrected, rows * cols / G / 8);
  EXPECT_GT(rounded_up, 10u);
  EXPECT_GT(rounded_down, 10u);
}

// 4-over-6 on 20 chunks of 4096 (run in parallel) against an independent quantizer: tensor
// scale amax / (6 * 256); per 16-block the UE4M3 scales (nearest) for a block maximum of 6 and
// of 4, E2M1 codes to nearest of x / (tensor scale * scale), the candidate with the smaller
// squared error (ties keep 6); `saturated` counts the elements beyond 6 * the chosen scale.
TEST(LinearRecipes, FourOverSixAgainstIndependentQuantizerOnManyChunks) {
  const std::size_t rows = 320, cols = 256, G = 16;
  const std::vector<float> x = spread_matrix(rows, cols, 17);
  std::vector<float> got = x;
  std::size_t saturated = 0;
  detail::four_over_six_quantize(got.data(), rows, cols, &saturated);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float ts = amax / (6.0f * 256.0f);
  std::size_t fours = 0, want_saturated = 0;
  for (std::size_t g = 0; g < rows * cols / G; ++g) {
    const float* v = x.data() + g * G;
    float bmax = 0;
    for (std::size_t i = 0; i < G; ++i) bmax = std::max(bmax, std::fabs(v[i]));
    float best[G], best_mult = 0;
    double best_err = 0;
    for (float top : {6.0f, 4.0f}) {
      const float mult = ts * static_cast<float>(ue4m3_round(bmax / (top * ts), false, 0));
      float q[G];
      double err = 0;
      for (std::size_t i = 0; i < G; ++i) {
        q[i] = mult > 0 ? static_cast<float>(e2m1_rne(v[i] / mult)) : 0.0f;
        err += std::pow(double(q[i] * mult) - v[i], 2);
      }
      if (top == 6.0f || err < best_err) {
        best_err = err, best_mult = mult;
        std::copy(q, q + G, best);
        fours += top == 4.0f;
      }
    }
    for (std::size_t i = 0; i < G; ++i) {
      want_saturated += best_mult > 0 && std::fabs(v[i]) > 6.0f * best_mult;
      const float want = best[i] * best_mult;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[g * G + i]), std::bit_cast<std::uint32_t>(want))
          << "block " << g << " element " << i << ": " << got[g * G + i] << " vs " << want;
    }
  }
  EXPECT_GT(fours, rows * cols / G / 20);  // both candidates were chosen
  EXPECT_EQ(saturated, want_saturated);
}

// MS-EDEN on one block worked out by hand (not through the algorithm): x = (6, 5, 0, ..., 0).
// With NVFP4's tensor scale amax / (448 * 6) the block scale is 448 and the codes are x itself
// but 5 -> 4 (a tie, to even), so <x,x>/<x,q> = 61/56: the corrected scale 488 would clip to
// 448, a 8% bias. Quartet II's code: val_max = 6 / 0.988125 = 6.072106..., tensor scale
// t = 6 / 255.99 / val_max, block scale E4M3(255.99) = 256, so x * (1 / (256 t)) = r * x with
// r = val_max * 255.99 / 1536 = 1.0119782...: (6.0719, 5.0599) -> codes (6, 6); the correction
// is r^2 * 61 / (r * 66) = 0.935313... and the corrected scale 256 * that = 239.440..., which
// rounds stochastically to 224 or 240 (E4M3's step in [128, 256) is 16), never near 448, with
// mean 239.44: P(240) = 15.44 / 16.
TEST(LinearRecipes, MsEdenFollowsQuartet2OnAHandWorkedBlock) {
  std::vector<float> block(16, 0.0f);
  block[0] = 6.0f;
  block[1] = 5.0f;
  const double r = 6.0 / (17.0 / 16.0 * 0.93) * 255.99 / 1536.0;
  const double t = 6.0 / 255.99 / (6.0 / (17.0 / 16.0 * 0.93));
  EXPECT_NEAR(r, 1.0119782, 1e-7);
  const double fixed = 256.0 * r * 61.0 / 66.0;
  EXPECT_NEAR(fixed, 239.4402, 1e-3);
  double sum = 0;
  const int draws = 4000;
  for (int k = 0; k < draws; ++k) {
    std::vector<float> y = block;
    detail::ms_eden_quantize(y.data(), 1, 16, 1000 + static_cast<std::uint64_t>(k));
    // Both nonzero elements carry code 6; the zeros stay zero.
    ASSERT_FLOAT_EQ(y[0], y[1]);
    for (std::size_t i = 2; i < 16; ++i) ASSERT_EQ(y[i], 0.0f);
    const double s2 = y[0] / (6.0 * t);  // the corrected scale, to float32 rounding of t
    const bool lo = std::fabs(s2 - 224.0) < 1e-3, hi = std::fabs(s2 - 240.0) < 1e-3;
    ASSERT_TRUE(lo || hi) << s2;
    sum += s2;
  }
  // The mean of a two-point draw 16 apart: standard deviation at most 8 / sqrt(4000) = 0.127;
  // 0.65 is five of them.
  EXPECT_NEAR(sum / draws, fixed, 0.65);
}

// Quartet's backward quantizer: per 32-group 2^e = 2^floor(log2 amax), the element
// x / 2^e * 3 (float) rounded stochastically to E2M1 with the bits of its index in the
// matrix, the value code * 2^e / 3 (float).
TEST(LinearRecipes, QuartetBackwardQuantizerAgainstIndependentImplementation) {
  const std::size_t rows = 40, cols = 96, G = 32;
  const std::uint64_t seed = 77;
  const std::vector<float> x = spread_matrix(rows, cols, 5);
  std::vector<float> got = x;
  detail::quartet_sr_quantize(got.data(), rows, cols, seed);
  const RngKey key = rng_key(seed);
  double top = 0;
  for (std::size_t g = 0; g < rows * cols / G; ++g) {
    float amax = 0;
    for (std::size_t i = 0; i < G; ++i) amax = std::max(amax, std::fabs(x[g * G + i]));
    const float p = amax > 0 ? std::exp2(std::floor(std::log2(amax))) : 0.0f;
    for (std::size_t i = 0; i < G; ++i) {
      const std::size_t k = g * G + i;
      float want = 0;
      if (amax > 0) {
        const float y = x[k] / p * 3.0f;
        top = std::max(top, std::fabs(double(y)));
        want = static_cast<float>(e2m1_sr(y, random_bits(key, k)) * p) / 3.0f;
      }
      ASSERT_EQ(got[k], want) << "element " << k << ": " << x[k];
    }
  }
  EXPECT_GE(top, 3.0);  // the largest element of a group lands in [3, 6): no saturation
  EXPECT_LT(top, 6.0);
}

// The backward quantizer on L = S^T done in S's layout (the fused transposed operands): bitwise
// quartet_sr_quantize on the materialised transpose, element for element, for the whole matrix
// and for a band starting at row 32, with an all-zero group, a group whose power of two is
// subnormal, and NaN / Inf elements.
TEST(LinearRecipes, QuartetBackwardQuantizerDownColumnsIsTheTransposes) {
  const std::size_t R = 96, C = 40;
  const std::uint64_t seed = 5;
  std::vector<float> S = spread_matrix(R, C, 9);
  for (std::size_t r = 0; r < 32; ++r) S[r * C + 3] = 0.0f;             // column 3, rows 0..31: all zero
  for (std::size_t r = 32; r < 64; ++r) S[r * C + 7] = 3e-39f * float(r % 5);  // amax below 2^-126
  S[40 * C + 11] = std::numeric_limits<float>::quiet_NaN();
  S[70 * C + 12] = std::numeric_limits<float>::infinity();
  S[71 * C + 13] = -std::numeric_limits<float>::infinity();
  std::vector<float> L = transposed(S, R, C);  // C x R
  detail::quartet_sr_quantize(L.data(), C, R, seed);
  std::vector<float> got = S;
  detail::quartet_sr_quantize_columns(got.data(), R, C, seed, R, 0);
  std::vector<float> band(S.begin() + 32 * C, S.begin() + 64 * C);
  detail::quartet_sr_quantize_columns(band.data(), 32, C, seed, R, 32);
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t c = 0; c < C; ++c) {
      ASSERT_TRUE(test::same_or_both_nan(got[r * C + c], L[c * R + r])) << "row " << r << " column " << c;
      if (r >= 32 && r < 64) {
        ASSERT_TRUE(test::same_or_both_nan(band[(r - 32) * C + c], L[c * R + r])) << "band row " << r << " column " << c;
      }
    }
  EXPECT_THROW(detail::quartet_sr_quantize_columns(got.data(), 48, C, seed, R, 0), Error);  // 48 rows: not groups
}

// QuEST's float32 arithmetic, as Quartet's kernel does it: per 32-group the sum and the sum of
// squares in element order, mean and mean square over 32, sd = sqrt(msq - mean^2) (1 if that
// is negative), scale = 2^floor(log2(2.92247856 / 6 * sd + 1e-8)), E2M1 to nearest of x / scale,
// times scale; the mask |x / scale| < 6. Bitwise, through groups of 8 and a partial set.
TEST(LinearRecipes, QuestQuantizerFollowsItsFloatArithmetic) {
  const std::size_t rows = 13, cols = 96;  // 39 groups: four sets of 8 and one of 7
  std::vector<float> x = spread_matrix(rows, cols, 12);
  for (std::size_t i = 0; i < x.size(); i += 29) x[i] *= 20.0f;  // outliers to clip
  for (std::size_t i = 64; i < 96; ++i) x[i] = 0.25f;              // a constant group: sd 0
  std::vector<float> got = x;
  std::vector<std::uint8_t> mask;
  detail::quest_quantize(got.data(), rows, cols, &mask);
  ASSERT_EQ(mask.size(), x.size());
  std::size_t clipped = 0;
  for (std::size_t g = 0; g < x.size(); g += 32) {
    float sum = 0, sq = 0;
    for (std::size_t i = g; i < g + 32; ++i) {
      sum += x[i];
      const float e2 = x[i] * x[i];
      sq += e2;
    }
    const float mean = sum / 32.0f, msq = sq / 32.0f, var = msq - mean * mean;
    const float sd = var >= 0 ? std::sqrt(var) : 1.0f;
    const float scale = std::exp2(std::floor(std::log2(2.92247856f / 6.0f * sd + 1e-8f)));
    for (std::size_t i = g; i < g + 32; ++i) {
      const float y = x[i] / scale;
      const bool keep = std::fabs(y) < 6.0f;
      clipped += !keep;
      ASSERT_EQ(mask[i], keep) << "element " << i;
      ASSERT_EQ(got[i], static_cast<float>(e2m1_rne(y)) * scale) << "element " << i << ": " << x[i];
    }
  }
  EXPECT_GT(clipped, 0u);
}

// The block-32 Hadamard of lowp/hadamard (float32), so that the quantizers below see the very
// floats the layer's quantizers see (the rotation is tested on its own in tests/hadamard).
std::vector<float> rotate32(std::vector<float> x, std::size_t rows, std::size_t cols) {
  hadamard::Rotation r;
  r.kind = hadamard::RotationKind::block_diagonal;
  r.block = 32;
  r.size = cols;
  r.apply(x.data(), rows, cols);
  return x;
}

// C (m x n) = A B^T in double.
std::vector<double> gemm_d(const std::vector<float>& A, const std::vector<float>& B, std::size_t m, std::size_t n,
                           std::size_t k) {
  std::vector<double> C(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t t = 0; t < k; ++t) acc += double(A[i * k + t]) * B[j * k + t];
      C[i * n + j] = acc;
    }
  return C;
}

// quartet-fp4 end to end (IST-DASLab/Quartet's QuartetMasterWeightsFn):
//   forward: X' = QuEST(X H), W' = QuEST(W H) (H the block-32 Hadamard), Y = X' W'^T, masks
//            |x / scale| < 6;
//   backward, with one sign vector d (32 entries) for this backward pass:
//     dgrad  A = Q(dY H D), B = Q(W'^T H D) (along N), dX = ((A B^T) . mask_x) H^T
//     wgrad  A = Q(dY^T H D), B = Q(X'^T H D) (along M), dW = ((A B^T) . mask_w) H^T
//   Q the backward quantizer above with each operand's own seed. The seeds are derived with
//   lowp's mix_seed (a hash), everything else is this test's own arithmetic.
TEST(LinearRecipes, QuartetBackwardAgainstIndependentPipeline) {
  const std::size_t M = 64, N = 64, K = 96;
  LinearProblem p = make_problem(M, N, K, 33);
  for (std::size_t i = 0; i < p.X.size(); i += 41) p.X[i] *= 10;  // outliers the forward clips
  const std::uint64_t fseed = 3, bseed = 1234;

  // QuEST with a double group statistic: scale 2^floor(log2(2.92247856 / 6 * std + 1e-8)).
  const auto quest = [&](const std::vector<float>& x, std::size_t rows, std::vector<std::uint8_t>& mask) {
    std::vector<float> r = rotate32(x, rows, K);
    mask.assign(r.size(), 0);
    for (std::size_t g = 0; g < r.size(); g += 32) {
      double s = 0, s2 = 0;
      for (std::size_t i = g; i < g + 32; ++i) s += r[i], s2 += double(r[i]) * r[i];
      const double mean = s / 32, sd = std::sqrt(std::max(0.0, s2 / 32 - mean * mean));
      const float scale = std::exp2(std::floor(std::log2(2.92247856 / 6.0 * sd + 1e-8)));
      for (std::size_t i = g; i < g + 32; ++i) {
        mask[i] = std::fabs(r[i] / scale) < 6;
        r[i] = static_cast<float>(e2m1_rne(r[i] / scale)) * scale;
      }
    }
    return r;
  };
  std::vector<std::uint8_t> mx, mw;
  const std::vector<float> Xq = quest(p.X, M, mx), Wq = quest(p.W, N, mw);

  std::vector<float> d(32);
  const RngKey sign_key = rng_key(detail::mix_seed(bseed, 0x1ff));
  for (std::size_t j = 0; j < 32; ++j) d[j] = (random_bits(sign_key, j) >> 31) ? -1.0f : 1.0f;
  // The backward operand L (rows x cols, reduction along cols) of GEMM g, side s.
  const auto bwd = [&](const std::vector<float>& L, std::size_t rows, std::size_t cols, int g, int side) {
    std::vector<float> r = rotate32(L, rows, cols);
    for (std::size_t i = 0; i < r.size(); ++i) r[i] *= d[i % cols % 32];
    const RngKey key = rng_key(detail::mix_seed(detail::mix_seed(bseed, 0), 2 * g + side + 1));
    for (std::size_t g0 = 0; g0 < r.size(); g0 += 32) {
      float amax = 0;
      for (std::size_t i = g0; i < g0 + 32; ++i) amax = std::max(amax, std::fabs(r[i]));
      if (amax == 0) continue;
      const float pw = std::exp2(std::floor(std::log2(amax)));
      for (std::size_t i = g0; i < g0 + 32; ++i)
        r[i] = static_cast<float>(e2m1_sr(r[i] / pw * 3.0f, random_bits(key, i)) * pw) / 3.0f;
    }
    return r;
  };
  // Back from the rotated basis after the mask: g H^T (H symmetric), in double.
  const auto finish = [&](std::vector<double> g, std::size_t rows, const std::vector<std::uint8_t>& mask) {
    std::vector<float> masked(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) masked[i] = mask[i] ? static_cast<float>(g[i]) : 0.0f;
    std::vector<float> out(g.size());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t b = 0; b < K; b += 32)
        for (std::size_t j = 0; j < 32; ++j) {
          double acc = 0;
          for (std::size_t i = 0; i < 32; ++i)
            acc += double(masked[r * K + b + i]) * ((std::popcount(i & j) % 2 ? -1.0 : 1.0) / std::sqrt(32.0));
          out[r * K + b + j] = static_cast<float>(acc);
        }
    return out;
  };
  const std::vector<float> dX = finish(
      gemm_d(bwd(p.G, M, N, 1, 0), bwd(transposed(Wq, N, K), K, N, 1, 1), M, K, N), M, mx);
  const std::vector<float> dW = finish(
      gemm_d(bwd(transposed(p.G, M, N), N, M, 2, 0), bwd(transposed(Xq, M, K), K, M, 2, 1), N, K, M), N, mw);

  const auto got = test::run_linear(linear_preset("quartet-fp4"), p, fseed, bseed);
  // float32 accumulation over at most 96 products and float rotations: ~1e-6 relative.
  EXPECT_LT(rel_frob(got.dX, dX), 1e-5);
  EXPECT_LT(rel_frob(got.dW, dW), 1e-5);
  // One stochastic rounding differing (one E2M1 step in one of ~6000 operand elements) would
  // move these by > 1e-4; and re-quantizing the float W instead of W' moves them far more.
  LinearRecipe from_float = linear_preset("quartet-fp4");
  from_float.backward_from_forward_operands = false;
  const auto f = test::run_linear(from_float, p, fseed, bseed);
  EXPECT_GT(rel_frob(f.dX, dX), 1e-2);
  // Another backward seed draws other signs and other roundings.
  const auto other = test::run_linear(linear_preset("quartet-fp4"), p, fseed, bseed + 1);
  EXPECT_GT(rel_frob(other.dW, dW), 1e-2);
}

// nvfp4-train's wgrad: both operands along the tokens after x D H with TransformerEngine's one
// fixed sign vector (get_wgrad_sign_vector, typed in here from its source) on every 16-block,
// the same at every step. X^T rounds to nearest, so with dY^T also to nearest the whole wgrad
// is the same at every step and equals quantizing (X^T D H) and (dY^T D H) directly.
TEST(LinearRecipes, Nvfp4WgradUsesTransformerEngineFixedSigns) {
  const float te[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  const std::size_t M = 64, N = 32, K = 48;
  const LinearProblem p = make_problem(M, N, K, 17);
  LinearRecipe r = linear_preset("nvfp4-train");
  r.wgrad.a = parse_quant_spec("nvfp4");  // round dY^T to nearest too: no randomness left
  const auto a = test::run_linear(r, p, 1, 2), b = test::run_linear(r, p, 1, 99);
  EXPECT_EQ(a.dW, b.dW);  // fixed signs: the step seed changes nothing

  const auto operand = [&](const std::vector<float>& L, std::size_t rows, std::size_t cols) {
    std::vector<float> x = L;
    for (std::size_t i = 0; i < x.size(); ++i) x[i] *= te[i % cols % 16];
    hadamard::Rotation rot;
    rot.kind = hadamard::RotationKind::block_diagonal;
    rot.block = 16;
    rot.size = cols;
    rot.apply(x.data(), rows, cols);
    fake_quant(parse_quant_spec("nvfp4"), x.data(), rows, cols);
    return x;
  };
  const std::vector<double> dW =
      gemm_d(operand(transposed(p.G, M, N), N, M), operand(transposed(p.X, M, K), K, M), N, K, M);
  EXPECT_LT(rel_frob(a.dW, std::vector<float>(dW.begin(), dW.end())), 1e-6);
  // Without the signs (or with others) the quantization differs: the check can fail.
  LinearRecipe plain = r;
  plain.wgrad.signs = BlockSigns::none;
  EXPECT_GT(rel_frob(test::run_linear(plain, p, 1, 2).dW, std::vector<float>(dW.begin(), dW.end())), 1e-3);
}


// NVFP4 (tensor scale amax / (448 * 6), UE4M3 block scales of (block amax / 6) / tensor scale
// to nearest, clamped to [2^-6, 448]) over groups given by `group_of` (element index -> group
// index), written here from the format's definition: for each element its multiplier m = tensor
// scale * block scale.
std::vector<float> nvfp4_multipliers(const std::vector<float>& x, const std::function<std::size_t(std::size_t)>& group_of,
                                     std::size_t groups) {
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float ts = amax / (448.0f * 6.0f);
  std::vector<float> gmax(groups, 0.0f), m(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) gmax[group_of(i)] = std::max(gmax[group_of(i)], std::fabs(x[i]));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float s = static_cast<float>(ue4m3_round(std::clamp((gmax[group_of(i)] / 6.0f) / ts, 0.015625f, 448.0f), false, 0));
    m[i] = ts * s;
  }
  return m;
}

// nvfp4-train's gradients are unbiased around what the analysis predicts, and only around it:
// the mean over S backward seeds converges to E[dX] and E[dW] computed here, the error halving
// per 4x seeds (the squared error sums 4096 elements, so the ratio is 2 +- 0.1; asserted > 1.6).
//   dX = E[Q_sr(dY)] Wq: stochastic rounding is unbiased per element inside the range, but when
//        a block's UE4M3 scale rounds down (block amax / 6 rounds to a smaller UE4M3 value), the
//        block's largest elements exceed 6 m and saturate: E[Q_sr(y)] = sign(y) 6 m there (TE
//        does the same: its block scale is rounded to nearest too). Wq: the forward's 16x16
//        tiles, round to nearest.
//   dW = E[Q_sr(dY^T D H)] Q_rtn(X^T D H)^T: X^T rounds to nearest after TransformerEngine's
//        fixed random Hadamard, so its rounding error is the same at every step and does not
//        average out: dW is biased around dY^T X by it (as in TE), unbiased around this.
// Against the float gradients instead, the mean stalls: measured 0.037 / 0.021 / 0.014 for dX
// (the saturation bias, ~1% of dX) and 0.100 / 0.096 / 0.095 for dW (X^T's fixed RTN error).
TEST(LinearRecipes, Nvfp4TrainBackwardUnbiasedAroundItsAnalysedMean) {
  const float te[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  const std::size_t M = 64, N = 64, K = 64;
  const LinearProblem p = make_problem(M, N, K, 12);
  const LinearRecipe r = linear_preset("nvfp4-train");
  // E[Q_sr(L)] for L (rows x cols, 1x16 blocks along the rows), and Q_rtn.
  const auto expect_sr = [](std::vector<float> L, std::size_t cols) {
    const std::vector<float> m = nvfp4_multipliers(L, [](std::size_t i) { return i / 16; }, L.size() / 16);
    std::size_t clipped = 0;
    for (std::size_t i = 0; i < L.size(); ++i)
      if (std::fabs(L[i]) > 6 * m[i]) L[i] = std::copysign(6 * m[i], L[i]), ++clipped;
    (void)cols;
    return std::pair{L, clipped};
  };
  const auto rtn = [](std::vector<float> L, const std::function<std::size_t(std::size_t)>& group_of, std::size_t groups) {
    const std::vector<float> m = nvfp4_multipliers(L, group_of, groups);
    for (std::size_t i = 0; i < L.size(); ++i) L[i] = static_cast<float>(e2m1_rne(L[i] / m[i]) * m[i]);
    return L;
  };
  const auto rht = [&](std::vector<float> L, std::size_t rows, std::size_t cols) {
    for (std::size_t i = 0; i < L.size(); ++i) L[i] *= te[i % cols % 16];
    hadamard::Rotation rot;
    rot.kind = hadamard::RotationKind::block_diagonal;
    rot.block = 16;
    rot.size = cols;
    rot.apply(L.data(), rows, cols);
    return L;
  };
  // W in 16x16 tiles: element (n, k) in tile (n / 16, k / 16).
  const std::vector<float> Wq = rtn(p.W, [&](std::size_t i) { return (i / K / 16) * (K / 16) + i % K / 16; },
                                    (N / 16) * (K / 16));
  const auto [EdY, clipped_dx] = expect_sr(p.G, N);
  const std::vector<double> dXd = gemm_d(EdY, transposed(Wq, N, K), M, K, N);
  const auto [EA, clipped_dw] = expect_sr(rht(transposed(p.G, M, N), N, M), M);
  const std::vector<float> Bq = rtn(rht(transposed(p.X, M, K), K, M), [](std::size_t i) { return i / 16; }, K * M / 16);
  const std::vector<double> dWd = gemm_d(EA, Bq, N, K, M);
  const std::vector<float> dX_mean(dXd.begin(), dXd.end()), dW_mean(dWd.begin(), dWd.end());
  EXPECT_GT(clipped_dx, 0u);  // the saturation the analysis names does occur here
  EXPECT_GT(clipped_dw, 0u);

  QuantLinear layer(r, K, N, false);
  layer.weight() = p.W;
  std::vector<float> Y(M * N), dX(M * K);
  std::vector<double> sum_dx(dX.size(), 0.0), sum_dw(N * K, 0.0);
  layer.forward(p.X.data(), M, Y.data(), 1);
  std::vector<double> ex, ew;
  std::size_t seeds = 0;
  for (std::size_t target : {16u, 64u, 256u}) {
    for (; seeds < target; ++seeds) {
      std::fill(layer.weight_grad().begin(), layer.weight_grad().end(), 0.0f);
      layer.backward(p.G.data(), dX.data(), 1000 + seeds);
      for (std::size_t i = 0; i < dX.size(); ++i) sum_dx[i] += dX[i];
      for (std::size_t i = 0; i < sum_dw.size(); ++i) sum_dw[i] += layer.weight_grad()[i];
    }
    std::vector<float> mdx(dX.size()), mdw(sum_dw.size());
    for (std::size_t i = 0; i < mdx.size(); ++i) mdx[i] = static_cast<float>(sum_dx[i] / double(seeds));
    for (std::size_t i = 0; i < mdw.size(); ++i) mdw[i] = static_cast<float>(sum_dw[i] / double(seeds));
    ex.push_back(rel_frob(mdx, dX_mean));
    ew.push_back(rel_frob(mdw, dW_mean));
  }
  std::printf("nvfp4-train mean over 16/64/256 seeds vs the analysed mean: dX %.4f %.4f %.4f  dW %.4f %.4f %.4f\n",
              ex[0], ex[1], ex[2], ew[0], ew[1], ew[2]);
  test::record_seed_means("nvfp4-train (vs the analysed mean)", ex, ew);
  for (std::size_t i = 1; i < ex.size(); ++i) {
    EXPECT_GT(ex[i - 1] / ex[i], 1.6);
    EXPECT_GT(ew[i - 1] / ew[i], 1.6);
  }
}


// The new recipe fields refuse what they cannot run, with one line naming the layer.
TEST(LinearRecipes, BadSignsAndBackwardOperandsAreRefused) {
  const auto throws_with = [](const LinearRecipe& r, const std::string& part) {
    try {
      QuantLinear layer(r, 64, 64, false);
      ADD_FAILURE() << "no error for " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  LinearRecipe r = linear_preset("fp32");
  r.backward_from_forward_operands = true;  // no quantized forward operands to reuse
  throws_with(r, "backward_from_forward_operands");
  r = linear_preset("nvfp4-train");
  r.wgrad.rotation_block = 32;  // TE's vector has 16 entries
  throws_with(r, "16-blocks");
  r = linear_preset("quartet-fp4");
  r.dgrad.rotation = hadamard::RotationKind::none;  // signs without blocks
  throws_with(r, "random signs need a block_diagonal rotation");
}

}  // namespace
}  // namespace lowp::quant
