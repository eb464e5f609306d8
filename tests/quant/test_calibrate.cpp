// Calibrated weight quantization (importance-weighted scales, GPTQ, AWQ) against objectives
// computed here in double precision, and every result decoded here from its stored codes and
// scales (an independent reconstruction of what the spec represents).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../../quant/src/calibrate/gptq_factor.hpp"
#include "lowp/formats/bulk.hpp"
#include "lowp/formats/registry.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/quant/calibrate.hpp"
#include "lowp/quant/scale_rules.hpp"
#include "support/test_support.hpp"

namespace lowp::quant {
namespace {

// The weight specs of the brief: int4 groups of 32, MXFP4, NVFP4, FP8 1x128 blocks (float32
// multipliers), MXFP8.
const char* const kSpecs[] = {"int4:b32", "mxfp4", "nvfp4", "e4m3:b128", "mxfp8"};

struct Layer {
  std::size_t n_out, k, n;  // W: n_out x k, X: n x k
  std::vector<float> w, x;
};

// Inputs with a common factor (correlated columns, as real activations) and a few outlier
// columns 20x larger; weights N(0, 1) with a few large entries.
Layer make_layer(std::size_t n_out, std::size_t k, std::size_t n, std::uint32_t seed) {
  Layer l{n_out, k, n, test::normal_floats(n_out * k, seed), test::normal_floats(n * k, seed + 1000)};
  const std::vector<float> common = test::normal_floats(n, seed + 2000);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t j = 0; j < k; ++j) {
      float& v = l.x[r * k + j];
      v += 0.7f * common[r];
      if (j % 37 == 5) v *= 20.0f;
    }
  for (std::size_t i = 0; i < l.w.size(); i += 97) l.w[i] *= 6.0f;
  return l;
}

std::vector<float> deq(const QuantizedTensor& q) {
  std::vector<float> out(q.rows * q.cols);
  dequantize(q, out.data());
  return out;
}

std::vector<float> rtn(const QuantSpec& spec, const Layer& l) { return deq(quantize(spec, l.w.data(), l.n_out, l.k)); }

// ||X W^T - X Q^T||_F^2 in double.
double layer_objective(const Layer& l, const std::vector<float>& q) {
  std::vector<double> d(l.w.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<double>(l.w[i]) - q[i];
  double s = 0;
  for (std::size_t r = 0; r < l.n; ++r)
    for (std::size_t o = 0; o < l.n_out; ++o) {
      double e = 0;
      for (std::size_t j = 0; j < l.k; ++j) e += static_cast<double>(l.x[r * l.k + j]) * d[o * l.k + j];
      s += e * e;
    }
  return s;
}

double weighted_objective(const Layer& l, const std::vector<float>& q, const std::vector<float>& imp) {
  double s = 0;
  for (std::size_t o = 0; o < l.n_out; ++o)
    for (std::size_t j = 0; j < l.k; ++j) {
      const double e = static_cast<double>(l.w[o * l.k + j]) - q[o * l.k + j];
      s += static_cast<double>(imp[j]) * e * e;
    }
  return s;
}

std::uint32_t code_at(const QuantizedTensor& q, std::size_t i) {
  const int bits = storage_bits(q.spec.format);
  if (bits == 4) return (q.codes[i / 2] >> (4 * (i % 2))) & 0xFu;
  if (bits == 8) return q.codes[i];
  ADD_FAILURE() << "storage of " << bits << " bits not decoded by this test";
  return 0;
}

// Rebuilds every element from its code and its group's stored scale, by the spec's definition,
// and checks the scales are representable in the scale format: dequantize must agree bitwise.
void check_representable(const QuantizedTensor& q) {
  SCOPED_TRACE(describe(q.spec));
  const Format& f = q.spec.format;
  const Format e8m0 = parse_format("e8m0"), ue4m3 = parse_format("ue4m3");
  const std::vector<float> d = deq(q);
  const std::size_t cw = q.spec.block, ngc = q.cols / cw;  // 1-D blocks (every spec tested)
  ASSERT_EQ(q.spec.granularity, Granularity::block);
  const bool mx = mx_rule(q.spec.rule);
  const bool fos = q.spec.rule == ScaleRule::nvfp4_4over6;  // UE4M3 with subnormals, as the authors'
  const bool nv = q.spec.rule == ScaleRule::nvfp4 || fos;
  ASSERT_EQ(q.scales.size(), q.rows * ngc);
  ASSERT_EQ(q.scale_codes.size(), mx || nv ? q.scales.size() : 0);
  ASSERT_EQ(q.multipliers.size(), mx || nv ? 0 : q.scales.size());
  for (std::size_t g = 0; g < q.scales.size(); ++g) {
    if (mx) {
      ASSERT_TRUE(is_valid_code(e8m0, q.scale_codes[g]) && !is_nan_code(e8m0, q.scale_codes[g]));
      ASSERT_EQ(static_cast<double>(q.scales[g]), decode(e8m0, q.scale_codes[g])) << "group " << g;
    } else if (nv) {
      ASSERT_TRUE((q.scale_codes[g] >= 1 || fos) && q.scale_codes[g] <= 0x7E) << "group " << g;
      ASSERT_EQ(static_cast<double>(q.scales[g]), decode(ue4m3, q.scale_codes[g])) << "group " << g;
    } else {
      ASSERT_TRUE(std::isfinite(q.multipliers[g]) && q.multipliers[g] > 0) << "group " << g;
    }
  }
  for (std::size_t r = 0; r < q.rows; ++r)
    for (std::size_t c = 0; c < q.cols; ++c) {
      const std::size_t i = r * q.cols + c, g = r * ngc + c / cw;
      const std::uint32_t code = code_at(q, i);
      ASSERT_TRUE(is_valid_code(f, code) && !is_nan_code(f, code)) << "element " << i;
      const auto v = static_cast<float>(decode(f, code));
      float want;
      if (mx) want = v * q.scales[g];
      else if (nv) want = v * (q.tensor_scale * q.scales[g]);
      else want = v / q.multipliers[g];
      ASSERT_EQ(std::memcmp(&want, &d[i], 4), 0) << "element " << i << ": " << want << " vs " << d[i];
    }
}

TEST(Calibrate, ImportanceIsTheMeanSquare) {
  const Layer l = make_layer(4, 96, 50, 3);
  const std::vector<float> imp = importance(l.x.data(), l.n, l.k);
  ASSERT_EQ(imp.size(), l.k);
  for (std::size_t j = 0; j < l.k; ++j) {
    long double s = 0;
    for (std::size_t r = 0; r < l.n; ++r) s += static_cast<long double>(l.x[r * l.k + j]) * l.x[r * l.k + j];
    EXPECT_FLOAT_EQ(imp[j], static_cast<float>(s / l.n)) << "column " << j;
  }
}

TEST(Calibrate, WeightedScalesNeverWorseThanRtn) {
  for (const char* text : {"int4:b32", "mxfp4", "nvfp4", "e4m3:b128", "mxfp8", "int4:b32:mse", "e2m1:b32:rceil",
                           "nvfp4:4over6", "e2m1:b32:torchao-log2", "mxfp4:gfloat"})
    for (std::uint32_t seed : {1u, 2u, 3u}) {
      const QuantSpec spec = parse_quant_spec(text);
      SCOPED_TRACE(std::string(text) + " seed " + std::to_string(seed));
      const Layer l = make_layer(32, 256, 64, seed);
      const std::vector<float> imp = importance(l.x.data(), l.n, l.k);
      const QuantizedTensor q = quantize_weighted(spec, l.w.data(), l.n_out, l.k, imp);
      check_representable(q);
      const double plain = weighted_objective(l, rtn(spec, l), imp);
      const double weighted = weighted_objective(l, deq(q), imp);
      // Each group's choice is at most the rule's on the same sum: only the order of the
      // double additions differs (relative 1e-12 covers 8192 terms at 2^-53).
      EXPECT_LE(weighted, plain * (1 + 1e-12));
      EXPECT_LT(weighted, plain) << "the search found nothing better on a layer with outlier inputs";
    }
}

TEST(Calibrate, GptqNeverWorseThanRtn) {
  for (const char* text : kSpecs)
    for (std::uint32_t seed : {11u, 12u, 13u})
      for (bool act_order : {false, true}) {
        const QuantSpec spec = parse_quant_spec(text);
        SCOPED_TRACE(std::string(text) + " seed " + std::to_string(seed) + (act_order ? " act_order" : ""));
        const Layer l = make_layer(48, 256, 384, seed);
        GptqOptions opt;
        opt.act_order = act_order;
        opt.block = 64;  // several lazy batches on 256 columns
        const QuantizedTensor q = gptq(spec, l.w.data(), l.n_out, l.k, l.x.data(), l.n, opt);
        check_representable(q);
        const double plain = layer_objective(l, rtn(spec, l));
        const double g = layer_objective(l, deq(q));
        EXPECT_LT(g, plain);
        opt.weighted_scales = true;
        EXPECT_LT(layer_objective(l, deq(gptq(spec, l.w.data(), l.n_out, l.k, l.x.data(), l.n, opt))), plain);
      }
}

// An independent GPTQ in double precision: H, its inverse (Gauss-Jordan) and the inverse's
// upper Cholesky factor, then one column at a time with the error fed to every later column
// at once (no lazy batches), rounding with the scales of lowp's RTN quantize of W and the
// scalar codec. The library works in float32 (H, its factor: relative errors ~k * 2^-24 *
// cond(H), up to ~1e-4 here), so now and then an updated weight lands on the other side of a
// rounding boundary; from there on that row's error feedback differs and so do some of its
// later codes, legitimately. Rows are independent: a first flip is expected in well under one
// row of 32 per case (seen: at most 1), so at most 2 rows may differ, each caught otherwise.
std::vector<double> inverse_cholesky_upper(std::vector<double> a, std::size_t k) {
  std::vector<double> inv(k * k, 0.0);
  for (std::size_t i = 0; i < k; ++i) inv[i * k + i] = 1;
  for (std::size_t c = 0; c < k; ++c) {  // SPD: no pivoting needed
    const double p = a[c * k + c];
    for (std::size_t j = 0; j < k; ++j) a[c * k + j] /= p, inv[c * k + j] /= p;
    for (std::size_t r = 0; r < k; ++r)
      if (r != c) {
        const double m = a[r * k + c];
        for (std::size_t j = 0; j < k; ++j) a[r * k + j] -= m * a[c * k + j], inv[r * k + j] -= m * inv[c * k + j];
      }
  }
  std::vector<double> u(k * k, 0.0);  // inv = U^T U, row by row
  for (std::size_t i = 0; i < k; ++i) {
    double d = inv[i * k + i];
    for (std::size_t t = 0; t < i; ++t) d -= u[t * k + i] * u[t * k + i];
    u[i * k + i] = std::sqrt(d);
    for (std::size_t j = i + 1; j < k; ++j) {
      double s = inv[i * k + j];
      for (std::size_t t = 0; t < i; ++t) s -= u[t * k + i] * u[t * k + j];
      u[i * k + j] = s / u[i * k + i];
    }
  }
  return u;
}

// Codes of GPTQ by the paper's column loop; `scales` is lowp's RTN tensor (rule scales of W).
std::vector<std::uint32_t> reference_gptq(const Layer& l, const QuantizedTensor& scales, bool act_order) {
  const std::size_t k = l.k, nr = l.n_out;
  std::vector<double> h(k * k, 0.0);
  for (std::size_t r = 0; r < l.n; ++r)
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < k; ++j)
        h[i * k + j] += 2.0 * l.x[r * k + i] * l.x[r * k + j] / static_cast<double>(l.n);
  std::vector<std::size_t> perm(k);
  for (std::size_t j = 0; j < k; ++j) perm[j] = j;
  if (act_order)
    std::stable_sort(perm.begin(), perm.end(), [&](std::size_t a, std::size_t b) { return h[a * k + a] > h[b * k + b]; });
  double mean = 0;
  for (std::size_t j = 0; j < k; ++j) mean += h[j * k + j] / static_cast<double>(k);
  std::vector<double> hp(k * k);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < k; ++j) hp[i * k + j] = h[perm[i] * k + perm[j]] + (i == j ? 0.01 * mean : 0.0);
  const std::vector<double> u = inverse_cholesky_upper(hp, k);
  const QuantSpec& spec = scales.spec;
  const std::size_t ngc = k / spec.block;
  std::vector<double> w(l.w.begin(), l.w.end());
  std::vector<std::uint32_t> codes(nr * k);
  CastOptions cast = spec.cast;
  cast.saturate = true;
  for (std::size_t c = 0; c < k; ++c) {
    const std::size_t oc = perm[c];
    for (std::size_t r = 0; r < nr; ++r) {
      const std::size_t g = r * ngc + oc / spec.block;
      const auto v = static_cast<float>(w[r * k + oc]);
      float q;
      std::uint32_t code;
      if (spec.rule == ScaleRule::mx) {
        code = encode(spec.format, v * (1.0f / scales.scales[g]), cast);
        q = static_cast<float>(decode(spec.format, code)) * scales.scales[g];
      } else if (spec.rule == ScaleRule::nvfp4) {
        const float t = scales.tensor_scale * scales.scales[g];
        code = encode(spec.format, v / t, cast);
        q = static_cast<float>(decode(spec.format, code)) * t;
      } else {
        code = encode(spec.format, v * scales.multipliers[g], cast);
        q = static_cast<float>(decode(spec.format, code)) / scales.multipliers[g];
      }
      codes[r * k + oc] = code;
      const double err = (w[r * k + oc] - q) / u[c * k + c];
      for (std::size_t j = c + 1; j < k; ++j) w[r * k + perm[j]] -= err * u[c * k + j];
    }
  }
  return codes;
}

TEST(Calibrate, GptqMatchesAnIndependentDoubleImplementation) {
  const Layer l = make_layer(32, 256, 256, 71);
  for (const char* text : {"nvfp4", "mxfp4", "int4:b32"})
    for (bool act_order : {false, true}) {
      SCOPED_TRACE(std::string(text) + (act_order ? " act_order" : ""));
      const QuantSpec spec = parse_quant_spec(text);
      GptqOptions opt;
      opt.act_order = act_order;
      opt.block = 64;
      const QuantizedTensor q = gptq(spec, l.w.data(), l.n_out, l.k, l.x.data(), l.n, opt);
      const std::vector<std::uint32_t> want = reference_gptq(l, quantize(spec, l.w.data(), l.n_out, l.k), act_order);
      // Rows are independent in GPTQ: count the rows whose codes differ anywhere.
      std::size_t rows_differ = 0;
      for (std::size_t r = 0; r < l.n_out; ++r) {
        bool same = true;
        for (std::size_t j = 0; j < l.k; ++j) same = same && code_at(q, r * l.k + j) == want[r * l.k + j];
        rows_differ += !same;
      }
      EXPECT_LE(rows_differ, 2u) << rows_differ << " of " << l.n_out << " rows differ";
    }
}

// The other granularities and rules: per row, 2-D tiles, one tensor scale, a plain cast.
TEST(Calibrate, OtherGranularitiesNeverWorseThanRtn) {
  const Layer l = make_layer(64, 256, 384, 61);
  const std::vector<float> imp = importance(l.x.data(), l.n, l.k);
  for (const char* text : {"e4m3:row", "int8:t32", "e4m3", "e2m1:col", "e5m2:b32:pow2", "bf16"}) {
    SCOPED_TRACE(text);
    const QuantSpec spec = parse_quant_spec(text);
    const std::vector<float> plain = rtn(spec, l);
    EXPECT_LE(layer_objective(l, deq(gptq(spec, l.w.data(), l.n_out, l.k, l.x.data(), l.n))),
              layer_objective(l, plain));
    EXPECT_LE(weighted_objective(l, deq(quantize_weighted(spec, l.w.data(), l.n_out, l.k, imp)), imp),
              weighted_objective(l, plain, imp) * (1 + 1e-12));
  }
}

TEST(Calibrate, SameBitsAtOneAndTwoThreads) {
  const Layer l = make_layer(256, 256, 256, 21);
  for (const char* text : {"nvfp4", "int4:b32"}) {
    const QuantSpec spec = parse_quant_spec(text);
    GptqOptions opt;
    opt.act_order = true;
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const QuantizedTensor a = gptq(spec, l.w.data(), l.n_out, l.k, l.x.data(), l.n, opt);
    omp_set_num_threads(2);
    const QuantizedTensor b = gptq(spec, l.w.data(), l.n_out, l.k, l.x.data(), l.n, opt);
    omp_set_num_threads(saved);
    EXPECT_EQ(a.codes, b.codes) << text;
    EXPECT_EQ(a.scales, b.scales) << text;
    EXPECT_EQ(a.multipliers, b.multipliers) << text;
    const std::vector<float> imp = importance(l.x.data(), l.n, l.k);
    omp_set_num_threads(1);
    const QuantizedTensor c = quantize_weighted(spec, l.w.data(), l.n_out, l.k, imp);
    omp_set_num_threads(2);
    const QuantizedTensor d = quantize_weighted(spec, l.w.data(), l.n_out, l.k, imp);
    omp_set_num_threads(saved);
    EXPECT_EQ(c.codes, d.codes) << text;
    EXPECT_EQ(c.scales, d.scales) << text;
  }
}

// The factor GPTQ uses against double precision: H^-1 by Gauss-Jordan, then its upper
// Cholesky factor. H = I + B B^T / k (B normal, k x k) has its eigenvalues in [1, 5]
// (Marchenko-Pastur), so cond(H) <= 5; Cholesky and the triangular inverse in float32 err by
// at most ~k * 2^-24 * cond(H) relative to max |U|, doubled for the two steps. k = 600 spans
// five panels of 128, the last one partial, and trailing updates of several bands of rows.
TEST(Calibrate, GptqInverseCholeskyFactor) {
  const std::size_t k = 600;
  const std::vector<float> b = test::normal_floats(k * k, 5);
  std::vector<double> h(k * k);
  std::vector<float> hf(k * k);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < k; ++j) {
      double s = i == j ? 1.0 : 0.0;
      for (std::size_t t = 0; t < k; ++t) s += static_cast<double>(b[i * k + t]) * b[j * k + t] / k;
      hf[i * k + j] = static_cast<float>(s);
      h[i * k + j] = hf[i * k + j];
    }
  const std::vector<double> u = inverse_cholesky_upper(h, k);  // the test's own, as above
  const std::vector<float> got = calib::inverse_upper_cholesky(hf, k);
  double umax = 0;
  for (double v : u) umax = std::max(umax, std::fabs(v));
  const double tol = 2.0 * static_cast<double>(k) * std::ldexp(1.0, -24) * 5.0 * umax;
  for (std::size_t i = 0; i < k * k; ++i) ASSERT_NEAR(got[i], u[i], tol) << "element " << i;
  std::vector<float> bad(k * k, 0.0f);
  bad[0] = -1;
  EXPECT_THROW(calib::inverse_upper_cholesky(bad, k), Error);
}

TEST(Calibrate, AwqNeverWorseThanRtn) {
  for (const char* text : kSpecs)
    for (std::uint32_t seed : {31u, 32u}) {
      const QuantSpec spec = parse_quant_spec(text);
      SCOPED_TRACE(std::string(text) + " seed " + std::to_string(seed));
      // Fewer and more calibration rows than columns: the objective from X, and from X^T X.
      const Layer l = make_layer(32, 256, seed == 31 ? 128 : 384, seed);
      const AwqResult a = awq(spec, l.w.data(), l.n_out, l.k, l.x.data(), l.n);
      check_representable(a.weight);
      ASSERT_EQ(a.scales.size(), l.k);
      const double k20 = a.alpha * 20;
      EXPECT_EQ(k20, std::round(k20));  // on AWQ's grid i / 20
      float lo = a.scales[0], hi = a.scales[0];
      for (float s : a.scales) lo = std::min(lo, s), hi = std::max(hi, s);
      EXPECT_NEAR(std::sqrt(static_cast<double>(lo) * hi), 1.0, 1e-6);  // auto_scale's normalisation
      // The layer computes (X / s) Q(W s)^T = X (Q(W s) / s)^T.
      std::vector<float> eff = deq(a.weight);
      for (std::size_t o = 0; o < l.n_out; ++o)
        for (std::size_t j = 0; j < l.k; ++j) eff[o * l.k + j] /= a.scales[j];
      const double plain = layer_objective(l, rtn(spec, l));
      const double got = layer_objective(l, eff);
      EXPECT_NEAR(a.rtn_error, plain, 1e-9 * plain);
      EXPECT_NEAR(a.error, got, 1e-9 * got);
      EXPECT_LE(got, plain * (1 + 1e-12));  // only the order of double additions differs
    }
}

// q/k/v-like linears sharing one input get one s; the summed objective is never worse than RTN's.
TEST(Calibrate, AwqGroupSharesOneScale) {
  const Layer a = make_layer(32, 256, 128, 51), b = make_layer(64, 256, 128, 52);
  const WeightRef refs[] = {{a.w.data(), a.n_out}, {b.w.data(), b.n_out}};
  Layer b_on_a = b;  // b's weights on a's inputs
  b_on_a.x = a.x;
  b_on_a.n = a.n;
  for (const char* text : {"nvfp4", "int4:b32"}) {
    SCOPED_TRACE(text);
    const QuantSpec spec = parse_quant_spec(text);
    const AwqGroupResult g = awq_group(spec, refs, a.k, a.x.data(), a.n);
    ASSERT_EQ(g.weights.size(), 2u);
    ASSERT_EQ(g.scales.size(), a.k);
    double got = 0, plain = 0;
    for (int l = 0; l < 2; ++l) {
      const Layer& layer = l == 0 ? a : b_on_a;
      check_representable(g.weights[static_cast<std::size_t>(l)]);
      std::vector<float> eff = deq(g.weights[static_cast<std::size_t>(l)]);
      for (std::size_t o = 0; o < layer.n_out; ++o)
        for (std::size_t j = 0; j < layer.k; ++j) eff[o * layer.k + j] /= g.scales[j];
      got += layer_objective(layer, eff);
      plain += layer_objective(layer, rtn(spec, layer));
    }
    EXPECT_NEAR(g.error, got, 1e-9 * got);
    EXPECT_NEAR(g.rtn_error, plain, 1e-9 * plain);
    EXPECT_LE(got, plain * (1 + 1e-12));
  }
}

TEST(Calibrate, BadInputIsOneError) {
  const Layer l = make_layer(8, 64, 16, 41);
  const QuantSpec sr = parse_quant_spec("int4:b32:stochastic");
  EXPECT_THROW(gptq(sr, l.w.data(), l.n_out, l.k, l.x.data(), l.n), Error);
  std::vector<float> x = l.x;
  x[5] = std::nanf("");
  const QuantSpec spec = parse_quant_spec("mxfp4");
  EXPECT_THROW(gptq(spec, l.w.data(), l.n_out, l.k, x.data(), l.n), Error);
  EXPECT_THROW(awq(spec, l.w.data(), l.n_out, l.k, x.data(), l.n), Error);
  EXPECT_THROW(importance(x.data(), l.n, l.k), Error);
  const std::vector<float> h(10, 1.0f);
  EXPECT_THROW(gptq_from_hessian(spec, l.w.data(), l.n_out, l.k, h), Error);
  const std::vector<float> imp(l.k - 1, 1.0f);
  EXPECT_THROW(quantize_weighted(spec, l.w.data(), l.n_out, l.k, imp), Error);
  EXPECT_THROW(gptq(spec, l.w.data(), l.n_out, 60, l.x.data(), l.n), Error);  // 60 columns, blocks of 32
}

}  // namespace
}  // namespace lowp::quant
