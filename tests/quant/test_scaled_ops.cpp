// Scale propagation ops: each op's scale rule exactly (powers of two computed here with
// log2/floor), and its value (scale * data) against double arithmetic written in this file,
// within the output format's precision (half an ulp relative, half the smallest subnormal
// absolute, saturation at the largest finite value). Derivatives are checked against central
// differences of the functions written here, not against the library's formulas.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "lowp/formats/codec.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/quant/scaled_tensor.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

using test::expect_error;

const Format E4M3 = parse_format("e4m3");
const Format E5M2 = parse_format("e5m2");

double p2(double x) { return std::exp2(std::floor(std::log2(x))); }

// A rows x cols tensor whose data are normal samples (times `spread`) cast to `f`.
ScaledTensor random_tensor(std::size_t rows, std::size_t cols, float scale, std::uint32_t seed,
                           const Format& f = E4M3, float spread = 1.0f) {
  std::vector<float> v = test::normal_floats(rows * cols, seed);
  for (float& x : v) x *= spread * scale;
  return scaled_cast(v, rows, cols, f, scale);
}

std::vector<double> values(const ScaledTensor& t) {
  std::vector<double> v(t.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(t.data[i]) * t.scale;
  return v;
}

// Every data element is a value of the format.
void expect_representable(const ScaledTensor& t) {
  CastOptions o;
  for (float d : t.data) {
    if (std::isnan(d)) continue;
    ASSERT_EQ(decode(t.format, encode(t.format, d, o)), static_cast<double>(d)) << d;
  }
}

// t's values against `exact` within the precision of t.format at t.scale; `slack[i]` (or
// `slack_all`) absorbs the float32 arithmetic before the cast.
void expect_values(const ScaledTensor& t, const std::vector<double>& exact, double slack_all = 0,
                   const std::vector<double>& slack = {}) {
  ASSERT_EQ(t.size(), exact.size());
  expect_representable(t);
  const double s = t.scale;
  const double ulp_half = std::ldexp(1.0, -(t.format.man_bits + 1));
  const double sub_half = t.format.min_subnormal() / 2;
  const double maxf = t.format.max_finite();
  for (std::size_t i = 0; i < exact.size(); ++i) {
    const double e = exact[i] / s;
    const double got = t.data[i];
    const double extra = (slack_all + (slack.empty() ? 0.0 : slack[i])) / s;
    if (std::fabs(e) > maxf * (1 + ulp_half) + extra) {
      EXPECT_EQ(std::fabs(got), maxf) << "saturation at " << i << ": exact " << e;
      continue;
    }
    const double tol = (std::fabs(e) * ulp_half + sub_half) * (1 + 1e-6) + extra;
    EXPECT_LE(std::fabs(got - e), tol) << "element " << i << ": data " << got << " exact " << e;
  }
}

TEST(ScaledTensor, Pow2Floor) {
  EXPECT_EQ(pow2_floor(1.0), 1.0f);
  EXPECT_EQ(pow2_floor(3.0), 2.0f);
  EXPECT_EQ(pow2_floor(0.75), 0.5f);
  EXPECT_EQ(pow2_floor(std::ldexp(1.0, 100) * 1.999), std::ldexp(1.0f, 100));
  EXPECT_EQ(pow2_floor(std::ldexp(1.0, -140) * 1.5), std::ldexp(1.0f, -140));
  const double bads[] = {0.0, -1.0, NAN, INFINITY, 1e300, 1e-300};
  for (double bad : bads)
    expect_error([&] { pow2_floor(bad); }, {"pow2_floor"});
}

TEST(ScaledTensor, CastAutoAndCodes) {
  const std::vector<float> v = {3.0f, -4.0f, 0.3f, 1000.0f};
  const ScaledTensor t = scaled_cast(v, 2, 2, E4M3, 0.5f);
  EXPECT_EQ(t.scale, 0.5f);
  // 1000 / 0.5 = 2000 saturates at 448; 0.3 / 0.5 = 0.6 rounds to 0.625 (E4M3, 3 bits).
  EXPECT_EQ(t.data, (std::vector<float>{6.0f, -8.0f, 0.625f, 448.0f}));
  expect_values(t, {3.0, -4.0, 0.3, 1000.0});
  // Codes decode back to the data.
  const std::vector<std::uint8_t> c = t.codes();
  ASSERT_EQ(c.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(decode(E4M3, c[i]), t.data[i]);

  const std::vector<float> w = {3.0f, -4.0f};  // max 4, mean |.| 3.5, rms sqrt(12.5) = 3.54
  EXPECT_EQ(scaled_auto(w, 1, 2, E4M3, RescaleStat::max).scale, 4.0f);
  EXPECT_EQ(scaled_auto(w, 1, 2, E4M3, RescaleStat::mean_abs).scale, 2.0f);
  EXPECT_EQ(scaled_auto(w, 1, 2, E4M3, RescaleStat::rms).scale, 2.0f);
  EXPECT_EQ(scaled_auto(std::vector<float>(3, 0.0f), 1, 3, E4M3).scale, 1.0f);

  expect_error([&] { scaled_cast(v, 2, 2, E4M3, 0.0f); }, {"scale", "0"});
  expect_error([&] { scaled_cast(v, 2, 2, E4M3, -1.0f); }, {"scale", "-1"});
  expect_error([&] { scaled_cast(v, 2, 2, E4M3, NAN); }, {"scale"});
  expect_error([&] { scaled_cast(v, 3, 2, E4M3, 1.0f); }, {"4 elements", "3x2"});
}

TEST(ScaledTensor, OpsRejectInconsistentTensors) {
  ScaledTensor bad = random_tensor(3, 4, 1.0f, 50);
  bad.data.resize(5);  // a hand-built tensor whose shape claims more than it holds
  const ScaledTensor good = random_tensor(3, 4, 1.0f, 51);
  expect_error([&] { transpose(bad); }, {"transpose", "3x4", "5 elements"});
  expect_error([&] { add(good, bad); }, {"add", "3x4", "5 elements"});
  expect_error([&] { matmul_nt(good, bad); }, {"matmul_nt", "5 elements"});
  expect_error([&] { silu_backward(good, bad); }, {"silu_backward"});
  expect_error([&] { softmax(bad); }, {"softmax"});
  ScaledTensor neg = good;
  neg.scale = -2.0f;
  expect_error([&] { mul(good, neg); }, {"mul", "scale", "-2"});
  expect_error([&] { rms_norm(good, &neg); }, {"rms_norm", "scale"});
  expect_error([&] { dynamic_rescale(neg, RescaleStat::rms); }, {"dynamic_rescale", "scale"});
}

TEST(ScaledTensor, ShapeOpsKeepScaleAndMoveDataExactly) {
  const ScaledTensor a = random_tensor(3, 5, 0x1p-30f, 1);
  const ScaledTensor r = reshape(a, 5, 3);
  EXPECT_EQ(r.scale, a.scale);
  EXPECT_EQ(r.data, a.data);
  EXPECT_EQ(r.rows, 5u);
  const ScaledTensor t = transpose(a);
  EXPECT_EQ(t.scale, a.scale);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 5; ++j) EXPECT_EQ(t.data[j * 3 + i], a.data[i * 5 + j]);
  const ScaledTensor s = slice(a, 1, 3, 2, 5);
  EXPECT_EQ(s.scale, a.scale);
  ASSERT_EQ(s.size(), 6u);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(s.data[i * 3 + j], a.data[(i + 1) * 5 + j + 2]);
  const ScaledTensor m = row_max(a);
  EXPECT_EQ(m.scale, a.scale);
  for (std::size_t i = 0; i < 3; ++i) {
    double want = -INFINITY;
    for (std::size_t j = 0; j < 5; ++j) want = std::max(want, a.value(i, j) * 1.0);
    EXPECT_EQ(m.value(i, 0), want);
  }
  const ScaledTensor c = cast(a, parse_format("e2m1"));
  EXPECT_EQ(c.scale, a.scale);
  expect_values(c, values(a));

  expect_error([&] { reshape(a, 4, 4); }, {"reshape", "3x5", "4x4"});
  expect_error([&] { slice(a, 2, 4, 0, 1); }, {"slice", "3x5"});
  expect_error([&] { slice(a, 0, 1, 3, 2); }, {"slice"});
}

TEST(ScaledTensor, MatmulRuleAndValues) {
  const std::size_t M = 5, K = 37, N = 6;
  const ScaledTensor a = random_tensor(M, K, 0x1p10f, 2);
  const ScaledTensor b = random_tensor(K, N, 0x1p-3f, 3);
  const ScaledTensor bt = transpose(b);
  for (const Format& out : {E4M3, E5M2}) {
    const ScaledTensor c = matmul(a, b, out);
    const ScaledTensor cnt = matmul_nt(a, bt, out);
    // sa sb p2(sqrt 37) = 2^10 2^-3 4
    EXPECT_EQ(c.scale, 0x1p9f);
    EXPECT_EQ(cnt.scale, 0x1p9f);
    EXPECT_EQ(c.format, out);
    std::vector<double> exact(M * N), slack(M * N);
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) {
        double s = 0, abs = 0;
        for (std::size_t k = 0; k < K; ++k) {
          s += a.value(i, k) * static_cast<double>(b.value(k, j));
          abs += std::fabs(a.value(i, k) * static_cast<double>(b.value(k, j)));
        }
        exact[i * N + j] = s;
        slack[i * N + j] = abs * K * 0x1p-24;  // float32 accumulation
      }
    expect_values(c, exact, 0, slack);
    expect_values(cnt, exact, 0, slack);
  }
  EXPECT_EQ(matmul(a, b).format, E4M3);  // the first operand's format by default
  // p2(sqrt K) for a few K: 1 -> 1, 4 -> 2, 15 -> 2, 16 -> 4, 1000 -> 16.
  for (std::size_t k : {1u, 4u, 15u, 16u, 1000u}) {
    const ScaledTensor x = random_tensor(2, k, 1.0f, 4), y = random_tensor(3, k, 1.0f, 5);
    EXPECT_EQ(matmul_nt(x, y).scale, static_cast<float>(p2(std::sqrt(static_cast<double>(k))))) << k;
  }
  expect_error([&] { matmul(a, a); }, {"matmul", "5x37"});
  expect_error([&] { matmul_nt(a, b); }, {"matmul_nt", "5x37", "37x6"});
}

TEST(ScaledTensor, MatmulIsTheSameAtAnyThreadCount) {
  // 128 x 256 x 128 = 2^22 multiply-adds: large enough to run on every thread.
  const ScaledTensor a = random_tensor(128, 256, 0x1p-3f, 40), b = random_tensor(256, 128, 2.0f, 41);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const ScaledTensor one = matmul(a, b, E5M2);
  omp_set_num_threads(2);
  const ScaledTensor two = matmul(a, b, E5M2);
  omp_set_num_threads(saved);
  EXPECT_EQ(one.scale, two.scale);
  EXPECT_EQ(one.data, two.data);
}

double add_scale(double sa, double sb) {
  const double hi = std::max(sa, sb), lo = std::min(sa, sb);
  return p2(hi * std::sqrt(1 + (lo / hi) * (lo / hi)));
}

TEST(ScaledTensor, AddSubRuleAndValuesWithBroadcast) {
  struct Case {
    float sa, sb;
  };
  for (const Case& cs : {Case{8, 2}, Case{0x1p5f, 0x1p5f}, Case{1.5f, 1.5f}, Case{1.5f, 0.5f},
                         Case{0x1p-20f, 0x1p20f}, Case{3.0f, 5.0f}}) {
    const ScaledTensor a = random_tensor(4, 7, cs.sa, 6);
    const std::pair<std::size_t, std::size_t> shapes[] = {{4, 7}, {1, 7}, {4, 1}, {1, 1}};
    for (auto [br, bc] : shapes) {
      const ScaledTensor b = random_tensor(br, bc, cs.sb, 7);
      for (int op = 0; op < 2; ++op) {
        const ScaledTensor c = op == 0 ? add(a, b) : sub(a, b, E5M2);
        EXPECT_EQ(c.scale, static_cast<float>(add_scale(cs.sa, cs.sb))) << cs.sa << " " << cs.sb;
        std::vector<double> exact(28), slack(28);
        for (std::size_t i = 0; i < 4; ++i)
          for (std::size_t j = 0; j < 7; ++j) {
            const double x = a.value(i, j), y = b.value(br == 1 ? 0 : i, bc == 1 ? 0 : j);
            exact[i * 7 + j] = op == 0 ? x + y : x - y;
            slack[i * 7 + j] = (std::fabs(x) + std::fabs(y)) * 0x1p-22;
          }
        expect_values(c, exact, 0, slack);
      }
    }
  }
  const ScaledTensor a = random_tensor(4, 7, 1, 8);
  expect_error([&] { add(a, random_tensor(2, 7, 1, 9)); }, {"add", "2x7", "4x7"});
  expect_error([&] { sub(a, random_tensor(4, 3, 1, 9)); }, {"sub", "4x3"});
}

TEST(ScaledTensor, MulRuleAndValues) {
  const ScaledTensor a = random_tensor(3, 4, 0x1p7f, 10);
  const ScaledTensor b = random_tensor(3, 4, 0x1p-12f, 11);
  const ScaledTensor c = mul(a, b, E5M2);
  EXPECT_EQ(c.scale, 0x1p-5f);
  std::vector<double> exact(12);
  for (std::size_t i = 0; i < 12; ++i) exact[i] = values(a)[i] * values(b)[i];
  expect_values(c, exact);
  // Broadcast row.
  const ScaledTensor r = random_tensor(1, 4, 3.0f, 12);
  const ScaledTensor cr = mul(a, r);
  EXPECT_EQ(cr.scale, 0x1p7f * 3.0f);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) exact[i * 4 + j] = a.value(i, j) * static_cast<double>(r.value(0, j));
  expect_values(cr, exact);
  expect_error([&] { mul(a, random_tensor(4, 3, 1, 13)); }, {"mul", "4x3", "3x4"});

  // mul_scalar: the scale takes p2(|c|), the data c / p2(|c|).
  for (float k : {0.75f, -3.0f, 0x1p-30f, 1.0f}) {
    const ScaledTensor m = mul_scalar(a, k);
    EXPECT_EQ(m.scale, 0x1p7f * static_cast<float>(p2(std::fabs(k)))) << k;
    std::vector<double> ex = values(a);
    for (double& x : ex) x *= k;
    expect_values(m, ex);
  }
  const ScaledTensor z = mul_scalar(a, 0.0f);
  EXPECT_EQ(z.scale, a.scale);
  for (float d : z.data) EXPECT_EQ(d, 0.0f);
  expect_error([&] { mul_scalar(a, NAN); }, {"mul_scalar", "nan"});
}

TEST(ScaledTensor, SumsUseTheMatmulRule) {
  const ScaledTensor a = random_tensor(37, 5, 0x1p-9f, 14);
  const ScaledTensor r = sum_rows(a, E5M2), c = sum_cols(a);
  EXPECT_EQ(r.rows, 1u);
  EXPECT_EQ(r.cols, 5u);
  EXPECT_EQ(r.scale, 0x1p-9f * 4);  // p2(sqrt 37) = 4
  EXPECT_EQ(c.rows, 37u);
  EXPECT_EQ(c.scale, 0x1p-9f * 2);  // p2(sqrt 5) = 2
  std::vector<double> er(5, 0.0), ec(37, 0.0);
  for (std::size_t i = 0; i < 37; ++i)
    for (std::size_t j = 0; j < 5; ++j) {
      er[j] += a.value(i, j);
      ec[i] += a.value(i, j);
    }
  expect_values(r, er);
  expect_values(c, ec);
}

// Central difference of a double function, for derivatives independent of the library; the
// step is relative to max(|x|, unit).
double derivative(const std::function<double(double)>& f, double x, double unit) {
  const double h = 1e-6 * std::max(unit, std::fabs(x));
  return (f(x + h) - f(x - h)) / (2 * h);
}

double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double ref_silu(double x) { return x * ref_sigmoid(x); }
double ref_gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double ref_relu(double x) { return x > 0 ? x : 0; }

TEST(ScaledTensor, ExpLogUnitScale) {
  const ScaledTensor a = random_tensor(3, 8, 0.25f, 15, E4M3, 4.0f);
  const ScaledTensor e = exp(a), l = log(e, E5M2);
  EXPECT_EQ(e.scale, 1.0f);
  EXPECT_EQ(l.scale, 1.0f);
  std::vector<double> ee = values(a), el(24);
  for (double& x : ee) x = std::exp(x);
  std::vector<double> slack = ee;  // the float32 step before the cast
  for (double& x : slack) x *= 0x1p-23;
  expect_values(e, ee, 0, slack);
  for (std::size_t i = 0; i < 24; ++i) el[i] = std::log(static_cast<double>(e.data[i]));
  expect_values(l, el, 1e-7);
  // exp saturates at the format's max (E4M3: 448 < e^7).
  const ScaledTensor big = scaled_cast(std::vector<float>{7.0f, -1.0f}, 1, 2, E4M3);
  EXPECT_EQ(exp(big).data[0], 448.0f);
}

// In E4M3 and in float32 (where the tolerance is tight enough to see a 1e-6 error).
TEST(ScaledTensor, ActivationsKeepScaleAtAnyScale) {
  for (const Format& fmt : {E4M3, parse_format("float32")})
  for (float s : {1.0f, 0x1p-20f, 0x1p20f, 0.375f}) {
    const ScaledTensor a = random_tensor(4, 16, s, 16, fmt, 3.0f);
    struct Fn {
      ScaledTensor (*op)(const ScaledTensor&);
      double (*ref)(double);
    };
    for (const Fn& f : {Fn{relu, ref_relu}, Fn{silu, ref_silu}, Fn{gelu, ref_gelu}}) {
      const ScaledTensor r = f.op(a);
      EXPECT_EQ(r.scale, s);
      std::vector<double> ex = values(a);
      for (double& x : ex) x = f.ref(x);
      expect_values(r, ex, 1e-9 * s);
    }
  }
}

TEST(ScaledTensor, ActivationBackwardsMatchCentralDifferences) {
  for (const Format& gfmt : {E5M2, parse_format("float32")})
  for (float s : {1.0f, 0x1p-20f, 0x1p20f}) {
    const ScaledTensor x = random_tensor(4, 16, s, 17, E4M3, 3.0f);
    const ScaledTensor dy = random_tensor(4, 16, 0x1p-7f, 18, gfmt);
    struct Fn {
      ScaledTensor (*op)(const ScaledTensor&, const ScaledTensor&);
      double (*ref)(double);
    };
    for (const Fn& f : {Fn{silu_backward, ref_silu}, Fn{gelu_backward, ref_gelu}}) {
      const ScaledTensor dx = f.op(x, dy);
      EXPECT_EQ(dx.scale, dy.scale);
      EXPECT_EQ(dx.format, gfmt);
      std::vector<double> ex(x.size());
      for (std::size_t i = 0; i < ex.size(); ++i) {
        const double xi = values(x)[i];
        ex[i] = values(dy)[i] * derivative(f.ref, xi, s);
      }
      expect_values(dx, ex, 1e-6 * dy.scale);
    }
    const ScaledTensor dr = relu_backward(x, dy);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(dr.value(i / 16, i % 16), x.data[i] > 0 ? dy.value(i / 16, i % 16) : 0.0f);
  }
  expect_error([&] { silu_backward(random_tensor(2, 3, 1, 1), random_tensor(3, 2, 1, 1)); },
               {"silu_backward", "2x3", "3x2"});
}

std::vector<double> ref_softmax_row(std::vector<double> x) {
  double m = *std::max_element(x.begin(), x.end()), s = 0;
  for (double& v : x) s += v = std::exp(v - m);
  for (double& v : x) v /= s;
  return x;
}

TEST(ScaledTensor, SoftmaxAndBackward) {
  const std::size_t R = 3, C = 9;
  for (float s : {0.5f, 0x1p-20f, 16.0f}) {
    const ScaledTensor x = random_tensor(R, C, s, 19);
    const ScaledTensor y = softmax(x, E5M2);
    EXPECT_EQ(y.scale, 1.0f);
    std::vector<double> ex;
    for (std::size_t i = 0; i < R; ++i) {
      std::vector<double> row(C);
      for (std::size_t j = 0; j < C; ++j) row[j] = x.value(i, j);
      for (double v : ref_softmax_row(row)) ex.push_back(v);
    }
    expect_values(y, ex, 1e-7);

    // dx_k = sum_j dy_j d softmax_j / d x_k, by central differences of the reference; y in
    // float32 here so that it is softmax(x) to float32 precision.
    const ScaledTensor yf = softmax(x, parse_format("float32"));
    const ScaledTensor dy = random_tensor(R, C, 0x1p-4f, 20, E5M2);
    const ScaledTensor dx = softmax_backward(yf, dy);
    EXPECT_EQ(dx.scale, dy.scale);
    EXPECT_EQ(dx.format, E5M2);
    EXPECT_EQ(softmax_backward(y, dy).scale, y.scale * dy.scale);
    std::vector<double> edx(R * C);
    double mx = 0;
    for (std::size_t i = 0; i < R; ++i)
      for (std::size_t k = 0; k < C; ++k) {
        std::vector<double> row(C);
        for (std::size_t j = 0; j < C; ++j) row[j] = x.value(i, j);
        edx[i * C + k] = derivative(
            [&](double v) {
              std::vector<double> r = row;
              r[k] = v;
              const std::vector<double> p = ref_softmax_row(r);
              double acc = 0;
              for (std::size_t j = 0; j < C; ++j) acc += dy.value(i, j) * p[j];
              return acc;
            },
            row[k], 1.0);
        mx = std::max(mx, std::fabs(edx[i * C + k]));
      }
    expect_values(dx, edx, 1e-6 * mx);
  }
}

double ref_rms_norm_row(const std::vector<double>& x, const std::vector<double>& g, std::size_t j, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  return x[j] / std::sqrt(ss / static_cast<double>(x.size()) + eps) * g[j];
}

TEST(ScaledTensor, RmsNormRuleValuesAndGradients) {
  const std::size_t R = 4, C = 12;
  const float eps = 1e-6f;
  const ScaledTensor gain = random_tensor(1, C, 0x1p-2f, 21);
  std::vector<float> first_data;
  for (float s : {0x1p-40f, 1.0f, 0x1p40f}) {
    const ScaledTensor x = random_tensor(R, C, s, 22);
    const ScaledTensor y = rms_norm(x, &gain, eps * s * s);  // eps in proportion: same data
    EXPECT_EQ(y.scale, gain.scale);
    if (first_data.empty()) first_data = y.data;
    EXPECT_EQ(y.data, first_data) << "rms_norm's data must not depend on the input scale";
    EXPECT_EQ(rms_norm(x, nullptr).scale, 1.0f);

    std::vector<double> g(C), ex(R * C);
    for (std::size_t j = 0; j < C; ++j) g[j] = gain.value(0, j);
    auto row_of = [&](std::size_t i) {
      std::vector<double> r(C);
      for (std::size_t j = 0; j < C; ++j) r[j] = x.value(i, j);
      return r;
    };
    for (std::size_t i = 0; i < R; ++i)
      for (std::size_t j = 0; j < C; ++j) ex[i * C + j] = ref_rms_norm_row(row_of(i), g, j, eps * s * s);
    expect_values(y, ex, 1e-9);

    // Gradients of L = sum(dy * y) by central differences.
    const ScaledTensor dy = random_tensor(R, C, 0x1p-6f, 23, E5M2);
    const RmsNormGrads gr = rms_norm_backward(x, &gain, dy, eps * s * s);
    EXPECT_EQ(gr.dx.scale, gain.scale * dy.scale / s);
    EXPECT_EQ(gr.dgain.scale, dy.scale * 2);  // the sum rule over R = 4 rows: p2(sqrt 4) = 2
    auto loss = [&](const std::vector<double>& xr, const std::vector<double>& gg, std::size_t i) {
      double acc = 0;
      for (std::size_t j = 0; j < C; ++j) acc += dy.value(i, j) * ref_rms_norm_row(xr, gg, j, eps * s * s);
      return acc;
    };
    std::vector<double> edx(R * C), edg(C, 0.0);
    for (std::size_t i = 0; i < R; ++i)
      for (std::size_t j = 0; j < C; ++j) {
        std::vector<double> xr = row_of(i);
        edx[i * C + j] = derivative([&](double v) { auto r = xr; r[j] = v; return loss(r, g, i); }, xr[j], s);
        edg[j] += derivative([&](double v) { auto gg = g; gg[j] = v; return loss(xr, gg, i); }, g[j], gain.scale);
      }
    double mx = 0, mg = 0;
    for (double v : edx) mx = std::max(mx, std::fabs(v));
    for (double v : edg) mg = std::max(mg, std::fabs(v));
    expect_values(gr.dx, edx, 1e-6 * mx);
    expect_values(gr.dgain, edg, 1e-6 * mg);
  }
  expect_error([&] { rms_norm(random_tensor(2, 5, 1, 1), &gain); }, {"rms_norm", "gain", "1x12", "1x5"});
}

TEST(ScaledTensor, DynamicRescaleByEachStatistic) {
  // Data far from unit scale: normal samples times 100 at scale 2^-3.
  const ScaledTensor a = random_tensor(6, 10, 0x1p-3f, 24, E5M2, 100.0f);
  for (RescaleStat st : {RescaleStat::max, RescaleStat::mean_abs, RescaleStat::rms}) {
    double stat = 0;
    for (float d : a.data) {
      const double v = std::fabs(static_cast<double>(d));
      stat = st == RescaleStat::max ? std::max(stat, v) : stat + (st == RescaleStat::rms ? v * v : v);
    }
    if (st == RescaleStat::mean_abs) stat /= 60;
    if (st == RescaleStat::rms) stat = std::sqrt(stat / 60);
    const ScaledTensor r = dynamic_rescale(a, st);
    EXPECT_EQ(r.scale, static_cast<float>(a.scale * p2(stat)));
    expect_values(r, values(a));
    EXPECT_GE(tensor_stat(r.data, st), 1.0);
    EXPECT_LT(tensor_stat(r.data, st), 2.0);

    const DynamicRescale fwd{st, DynamicRescale::Pass::forward}, bwd{st, DynamicRescale::Pass::backward};
    EXPECT_EQ(fwd.forward(a).scale, r.scale);
    EXPECT_EQ(fwd.backward(a).scale, a.scale);
    EXPECT_EQ(fwd.backward(a).data, a.data);
    EXPECT_EQ(bwd.forward(a).scale, a.scale);
    EXPECT_EQ(bwd.backward(a).scale, r.scale);
  }
  // An all-zero tensor keeps its scale.
  const ScaledTensor z = scaled_cast(std::vector<float>(4, 0.0f), 2, 2, E4M3, 8.0f);
  EXPECT_EQ(dynamic_rescale(z, RescaleStat::rms).scale, 8.0f);
}

}  // namespace
}  // namespace lowp::quant
