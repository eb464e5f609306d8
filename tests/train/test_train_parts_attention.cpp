// Causal GQA attention (model/attention.cpp), forward and backward, against an independent
// double-precision implementation written here, with per-element tolerances from a first-order
// error analysis of the float32 computation; and the same bits at 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <vector>

#include "model/attention.hpp"
#include "model/exp.hpp"
#include "support/test_support.hpp"

namespace lowp::accuracy::detail {
namespace {

constexpr double kU = 0x1p-24;  // float32 unit roundoff

struct Data {
  AttentionShape s;
  std::vector<float> q, k, v, dout;
  Data(AttentionShape sh, std::uint32_t seed) : s(sh) {
    const std::size_t R = s.B * s.T;
    q = test::normal_floats(R * s.heads * s.head_dim, seed);
    k = test::normal_floats(R * s.kv_heads * s.head_dim, seed + 1);
    v = test::normal_floats(R * s.kv_heads * s.head_dim, seed + 2);
    dout = test::normal_floats(R * s.heads * s.head_dim, seed + 3);
    for (float& x : q) x *= 2.0f;  // scores of a few units: a peaked softmax
  }
};

// The reference in double, and beside each output the bound on the float32 error:
//   S_ij = q_i.k_j / sqrt(hd): an fma chain of hd terms, the scale, the max subtracted:
//          |dS_ij| <= (hd + 2) u A_i, A_i = max_j sum_d |q_id k_jd| / sqrt(hd);
//   P_ij:  exp within 2 ulps, the sum (8 lanes: n/8 + 3 additions), the division:
//          |dP_ij| <= e_i P_ij, e_i = 2 (hd + 2) u A_i + (n/8 + 8) u  (n = i + 1 keys);
//   out = P V: |d out_id| <= e_i sum_j P_ij |v_jd| + n u sum_j P_ij |v_jd|  (a chain of n);
//   dP = dO V^T: |d dP_ij| <= hd u sum_d |dO_id v_jd| =: c_ij;
//   rs_i = sum_j P_ij dP_ij: |d rs_i| <= sum_j (e_i P_ij |dP_ij| + P_ij c_ij) + (n/8 + 3) u sum_j P_ij |dP_ij|;
//   dS_ij = P_ij (dP_ij - rs_i) / sqrt(hd):
//          |d dS_ij| <= (e_i P_ij |dP_ij - rs_i| + P_ij (c_ij + |d rs_i|) + 3 u P_ij |dP_ij - rs_i|) / sqrt(hd);
//   dQ = dS K, dK = dS^T Q, dV = P^T dO: the propagated errors plus u times the chain length
//          (T keys, or group * T queries) times the sum of absolute products.
struct Reference {
  std::vector<double> out, dq, dk, dv, tol_out, tol_dq, tol_dk, tol_dv;
};

Reference reference(const Data& d) {
  const AttentionShape& s = d.s;
  const std::size_t T = s.T, hd = s.head_dim, H = s.heads, G = s.heads / s.kv_heads, qd = H * hd, kvd = s.kv_heads * hd;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  Reference r;
  const std::size_t R = s.B * T;
  for (auto* x : {&r.out, &r.dq, &r.tol_out, &r.tol_dq}) x->assign(R * qd, 0.0);
  for (auto* x : {&r.dk, &r.dv, &r.tol_dk, &r.tol_dv}) x->assign(R * kvd, 0.0);
  std::vector<double> P(T * T), dP(T * T), dS(T * T), eP(T), c(T * T), dds(T * T);
  for (std::size_t b = 0; b < s.B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t g = h / G;
      const auto Q = [&](std::size_t i, std::size_t e) { return static_cast<double>(d.q[(b * T + i) * qd + h * hd + e]); };
      const auto K = [&](std::size_t j, std::size_t e) { return static_cast<double>(d.k[(b * T + j) * kvd + g * hd + e]); };
      const auto V = [&](std::size_t j, std::size_t e) { return static_cast<double>(d.v[(b * T + j) * kvd + g * hd + e]); };
      const auto DO = [&](std::size_t i, std::size_t e) { return static_cast<double>(d.dout[(b * T + i) * qd + h * hd + e]); };
      for (std::size_t i = 0; i < T; ++i) {
        const std::size_t n = i + 1;
        double mx = -INFINITY, A = 0;
        std::vector<double> srow(n);
        for (std::size_t j = 0; j < n; ++j) {
          double dot = 0, ab = 0;
          for (std::size_t e = 0; e < hd; ++e) dot += Q(i, e) * K(j, e), ab += std::fabs(Q(i, e) * K(j, e));
          srow[j] = dot * scale;
          mx = std::max(mx, srow[j]);
          A = std::max(A, ab * scale);
        }
        double sum = 0;
        for (std::size_t j = 0; j < n; ++j) sum += P[i * T + j] = std::exp(srow[j] - mx);
        for (std::size_t j = 0; j < n; ++j) P[i * T + j] /= sum;
        eP[i] = 2.0 * static_cast<double>(hd + 2) * kU * A + (static_cast<double>(n) / 8 + 8) * kU;
        for (std::size_t e = 0; e < hd; ++e) {
          double o = 0, mag = 0;
          for (std::size_t j = 0; j < n; ++j) o += P[i * T + j] * V(j, e), mag += P[i * T + j] * std::fabs(V(j, e));
          r.out[(b * T + i) * qd + h * hd + e] = o;
          r.tol_out[(b * T + i) * qd + h * hd + e] = (eP[i] + static_cast<double>(n) * kU) * mag;
        }
        // backward, row i
        double rs = 0, rs_mag = 0, rs_err = 0;
        for (std::size_t j = 0; j < n; ++j) {
          double x = 0, ab = 0;
          for (std::size_t e = 0; e < hd; ++e) x += DO(i, e) * V(j, e), ab += std::fabs(DO(i, e) * V(j, e));
          dP[i * T + j] = x;
          c[i * T + j] = static_cast<double>(hd) * kU * ab;
          rs += P[i * T + j] * x;
          rs_mag += P[i * T + j] * std::fabs(x);
          rs_err += eP[i] * P[i * T + j] * std::fabs(x) + P[i * T + j] * c[i * T + j];
        }
        rs_err += (static_cast<double>(n) / 8 + 3) * kU * rs_mag;
        for (std::size_t j = 0; j < n; ++j) {
          const double pj = P[i * T + j], t = dP[i * T + j] - rs;
          dS[i * T + j] = pj * t * scale;
          dds[i * T + j] = (eP[i] * pj * std::fabs(t) + pj * (c[i * T + j] + rs_err) + 3 * kU * pj * std::fabs(t)) * scale;
        }
      }
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t e = 0; e < hd; ++e) {
          double x = 0, err = 0, mag = 0;
          for (std::size_t j = 0; j <= i; ++j)
            x += dS[i * T + j] * K(j, e), err += dds[i * T + j] * std::fabs(K(j, e)), mag += std::fabs(dS[i * T + j] * K(j, e));
          r.dq[(b * T + i) * qd + h * hd + e] = x;
          r.tol_dq[(b * T + i) * qd + h * hd + e] = err + static_cast<double>(T) * kU * mag;
        }
      for (std::size_t j = 0; j < T; ++j)
        for (std::size_t e = 0; e < hd; ++e) {
          double xk = 0, ek = 0, mk = 0, xv = 0, ev = 0, mv = 0;
          for (std::size_t i = j; i < T; ++i) {
            xk += dS[i * T + j] * Q(i, e), ek += dds[i * T + j] * std::fabs(Q(i, e)), mk += std::fabs(dS[i * T + j] * Q(i, e));
            xv += P[i * T + j] * DO(i, e), ev += eP[i] * P[i * T + j] * std::fabs(DO(i, e)), mv += P[i * T + j] * std::fabs(DO(i, e));
          }
          const std::size_t at = (b * T + j) * kvd + g * hd + e;
          const double chain = static_cast<double>(G * T) * kU;
          r.dk[at] += xk, r.tol_dk[at] += ek + chain * mk;
          r.dv[at] += xv, r.tol_dv[at] += ev + chain * mv;
        }
    }
  return r;
}

struct Result {
  std::vector<float> out, dq, dk, dv;
  bool operator==(const Result&) const = default;
};

Result run(const Data& d, int threads) {
  const AttentionShape& s = d.s;
  const std::size_t R = s.B * s.T, qd = s.heads * s.head_dim, kvd = s.kv_heads * s.head_dim;
  Result r{std::vector<float>(R * qd), std::vector<float>(R * qd), std::vector<float>(R * kvd), std::vector<float>(R * kvd)};
  std::vector<float> p(s.B * s.heads * s.T * s.T);
  attention_forward(s, d.q.data(), d.k.data(), d.v.data(), r.out.data(), p.data(), threads);
  attention_backward(s, d.q.data(), d.k.data(), d.v.data(), p.data(), d.dout.data(), r.dq.data(), r.dk.data(),
                     r.dv.data(), threads);
  return r;
}

void expect_within(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& tol,
                   const char* what) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    ASSERT_LE(err, tol[i]) << what << "[" << i << "] = " << got[i] << ", reference " << want[i];
    worst = std::max(worst, tol[i] > 0 ? err / tol[i] : 0.0);
  }
  std::printf("%-4s largest error / its bound: %.3f\n", what, worst);
}

void check(const AttentionShape& sh, std::uint32_t seed) {
  const Data d(sh, seed);
  const Reference ref = reference(d);
  const Result one = run(d, 1);
  expect_within(one.out, ref.out, ref.tol_out, "out");
  expect_within(one.dq, ref.dq, ref.tol_dq, "dq");
  expect_within(one.dk, ref.dk, ref.tol_dk, "dk");
  expect_within(one.dv, ref.dv, ref.tol_dv, "dv");
  EXPECT_TRUE(one == run(d, 2));
  EXPECT_TRUE(one == run(d, 3));
}

// GQA (2 heads per KV head), head_dim 32, a window that is not a multiple of the query block.
TEST(Attention, GqaMatchesDoubleReferenceAndThreadCounts) { check({2, 75, 4, 2, 32}, 11); }

// MHA, head_dim 64, a window past one 256-long GEMM reduction block.
TEST(Attention, MhaLongWindowMatchesDoubleReferenceAndThreadCounts) { check({1, 300, 2, 2, 64}, 21); }

// model/exp.hpp against std::exp in double on every 293rd float of [-87, 0]: within 2 ulps of
// the float nearest e^x; below -87, 0 (e^x < 2^-125, under 1.7e-38 absolute); NaN stays NaN.
TEST(Attention, ExpNonpositiveWithinTwoUlps) {
  const std::uint32_t lo = 0x80000000u, hi = std::bit_cast<std::uint32_t>(-87.0f);
  int worst = 0;
  for (std::uint64_t b = lo; b <= hi; b += 293) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(b));
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    const float got = exp_nonpositive(x);
    const int ulps = std::abs(static_cast<int>(std::bit_cast<std::uint32_t>(got)) -
                              static_cast<int>(std::bit_cast<std::uint32_t>(want)));
    ASSERT_LE(ulps, 2) << "x = " << x << ": " << got << " vs " << want;
    worst = std::max(worst, ulps);
  }
  std::printf("largest error: %d ulps\n", worst);
  for (float x : {-87.5f, -100.0f, -1e30f, -INFINITY}) EXPECT_EQ(exp_nonpositive(x), 0.0f) << x;
  EXPECT_TRUE(std::isnan(exp_nonpositive(NAN)));
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
}

// softmax_row of each ISA's build (model/softmax_loops.hpp) against its definition written out
// here: the max over 8 lanes (lane j % 8), e^(scale (s - max)) by exp_nonpositive, the 8 lane sums
// combined ((0+1)+(2+3))+((4+5)+(6+7)), each element divided by that sum; bit for bit, in lengths
// that leave every vector remainder, with a -inf score (a masked key), ties for the max and
// scores far enough below it to flush to 0.
[[gnu::noinline]] float softmax_row_by_definition(float* s, std::size_t n, float scale, bool normalize) {
  float mx[8], sum[8] = {};
  std::fill_n(mx, 8, -INFINITY);
  for (std::size_t j = 0; j < n; ++j) mx[j % 8] = std::max(mx[j % 8], s[j]);
  float m = mx[0];
  for (std::size_t l = 1; l < 8; ++l) m = std::max(m, mx[l]);
  for (std::size_t j = 0; j < n; ++j) {
    const volatile float d = s[j] - m;  // one rounding each: no fused multiply-add
    s[j] = exp_nonpositive(d * scale);
    sum[j % 8] += s[j];
  }
  const float total = ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]));
  if (normalize)
    for (std::size_t j = 0; j < n; ++j) s[j] /= total;
  return total;
}

TEST(Attention, SoftmaxRowOfEveryIsaFollowsItsDefinitionBitwise) {
  std::vector<Isa> isas = {Isa::scalar};
  if (isa_available(Isa::avx512)) isas.push_back(Isa::avx512);
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{17}, std::size_t{48},
                              std::size_t{129}, std::size_t{1000}}) {
    std::vector<float> scores = test::normal_floats(n, static_cast<std::uint32_t>(n));
    for (std::size_t j = 0; j < n; ++j) scores[j] *= 6.0f;
    if (n > 3) scores[3] = -INFINITY;
    if (n > 9) scores[9] = -300.0f;  // e^(scale * -300) flushes to 0
    if (n > 16) scores[16] = scores[5] = 40.0f;  // a tie for the max, in two lanes
    for (const bool normalize : {true, false}) {
      std::vector<float> want = scores;
      const float want_total = softmax_row_by_definition(want.data(), n, 0.35f, normalize);
      for (const Isa isa : isas) {
        std::vector<float> got = scores;
        const float total = softmax_row(got.data(), n, 0.35f, normalize, isa);
        ASSERT_EQ(std::bit_cast<std::uint32_t>(total), std::bit_cast<std::uint32_t>(want_total))
            << isa_name(isa) << ", n = " << n;
        for (std::size_t j = 0; j < n; ++j)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[j]), std::bit_cast<std::uint32_t>(want[j]))
              << isa_name(isa) << ", n = " << n << ", j = " << j << ", normalize = " << normalize;
      }
    }
  }
  if (isas.size() == 1) std::printf("no AVX-512 on this CPU: only the baseline build's loop was compared\n");
}

// Queries from position pos0 over a KV cache (attention_cached: a decode step, pos0 = T - 1, and a
// window's later rows): rows pos0.. of the causal attention, within the double reference's bounds
// and bitwise the rows the whole window gives them (attention.hpp's claim), without and with the
// attn.p hook (identity here), at 1 and 2 threads. The cache's rows past the window hold NaN: they
// must not be read.
TEST(Attention, CachedQueriesFromAPositionAreTheWindowsRows) {
  const Data d({1, 75, 4, 2, 32}, 31);
  const Reference ref = reference(d);
  const std::size_t T = 75, hd = 32, kvh = 2, qd = 4 * hd, kvd = kvh * hd, cap = 80;
  std::vector<float> kc(kvh * cap * hd, NAN), vc(kc.size(), NAN);
  for (std::size_t g = 0; g < kvh; ++g)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t e = 0; e < hd; ++e) {
        kc[(g * cap + t) * hd + e] = d.k[t * kvd + g * hd + e];
        vc[(g * cap + t) * hd + e] = d.v[t * kvd + g * hd + e];
      }
  AttentionP identity;
  identity.quantize = [](std::size_t, float*) {};
  std::vector<float> window(T * qd), window_hook(T * qd);
  attention_forward(d.s, d.q.data(), d.k.data(), d.v.data(), window.data(), nullptr, 1);
  attention_forward(d.s, d.q.data(), d.k.data(), d.v.data(), window_hook.data(), nullptr, 1, identity);
  for (std::size_t pos0 : {0, 1, 47, 48, 74})
    for (int threads : {1, 2}) {
      const std::size_t rows = T - pos0, at = pos0 * qd;
      const AttentionShape s{1, rows, 4, kvh, hd};
      std::vector<float> out(rows * qd), out_hook(rows * qd);
      attention_cached(s, pos0, d.q.data() + at, KvLayer{kc.data(), vc.data(), cap}, out.data(), threads);
      attention_cached(s, pos0, d.q.data() + at, KvLayer{kc.data(), vc.data(), cap}, out_hook.data(), threads, identity);
      const std::vector<double> want(ref.out.begin() + static_cast<std::ptrdiff_t>(at), ref.out.end()),
          tol(ref.tol_out.begin() + static_cast<std::ptrdiff_t>(at), ref.tol_out.end());
      expect_within(out, want, tol, "out");
      EXPECT_TRUE(std::equal(out.begin(), out.end(), window.begin() + static_cast<std::ptrdiff_t>(at))) << pos0;
      EXPECT_TRUE(std::equal(out_hook.begin(), out_hook.end(), window_hook.begin() + static_cast<std::ptrdiff_t>(at)))
          << pos0;
    }
  test::expect_error([&] {
    std::vector<float> out(qd);
    attention_cached({1, 1, 4, kvh, hd}, cap, d.q.data(), KvLayer{kc.data(), vc.data(), cap}, out.data(), 1);
  }, {"over a cache of 80"});
}

// Evaluation's hook sees each head's whole P; P is not kept then.
TEST(Attention, HookSeesTheWholePAndPIsNotKept) {
  const Data d({1, 40, 2, 1, 16}, 5);
  std::vector<float> out(40 * 32), p(2 * 40 * 40);
  AttentionP pq;
  std::vector<int> seen(2, 0);
  pq.quantize = [&](std::size_t job, float* P) {
    ++seen[job];
    for (std::size_t i = 0; i < 40; ++i) {
      double sum = 0;
      for (std::size_t j = 0; j < 40; ++j) sum += P[i * 40 + j];
      EXPECT_NEAR(sum, 1.0, 1e-5);  // row i of P, whole
      EXPECT_EQ(P[i * 40 + 39], i == 39 ? P[i * 40 + 39] : 0.0f);
    }
  };
  attention_forward(d.s, d.q.data(), d.k.data(), d.v.data(), out.data(), nullptr, 2, pq);
  EXPECT_EQ(seen, (std::vector<int>{1, 1}));
  test::expect_error([&] { attention_forward(d.s, d.q.data(), d.k.data(), d.v.data(), out.data(), p.data(), 1, pq); },
                     {"not kept"});
}

}  // namespace
}  // namespace lowp::accuracy::detail
