// Calibrated weight quantization (importance-weighted scales, GPTQ, AWQ) against objectives
// computed here in double precision, and every result decoded here from its stored codes and
// scales (an independent reconstruction of what the spec represents).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
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
// cond(H), up to ~1e-4 here, and so are the updated weights), so an updated weight within
// relative 1e-4 of a rounding boundary may land on its other side; from there on that row's
// error feedback differs and so do some of its later codes, legitimately. Rows are independent,
// so each row must equal the oracle's up to its first difference, and that difference must be
// at such a near decision (about 5 of the 8192 per case here); any other difference fails.
// H^-1 by Gauss-Jordan (SPD: no pivoting needed).
std::vector<double> inverse(std::vector<double> a, std::size_t k) {
  std::vector<double> inv(k * k, 0.0);
  for (std::size_t i = 0; i < k; ++i) inv[i * k + i] = 1;
  for (std::size_t c = 0; c < k; ++c) {
    const double p = a[c * k + c];
    for (std::size_t j = 0; j < k; ++j) a[c * k + j] /= p, inv[c * k + j] /= p;
    for (std::size_t r = 0; r < k; ++r)
      if (r != c) {
        const double m = a[r * k + c];
        for (std::size_t j = 0; j < k; ++j) a[r * k + j] -= m * a[c * k + j], inv[r * k + j] -= m * inv[c * k + j];
      }
  }
  return inv;
}

// The upper Cholesky factor U of an SPD m (m = U^T U), row by row.
std::vector<double> upper_cholesky(const std::vector<double>& m, std::size_t k) {
  std::vector<double> u(k * k, 0.0);
  for (std::size_t i = 0; i < k; ++i) {
    double d = m[i * k + i];
    for (std::size_t t = 0; t < i; ++t) d -= u[t * k + i] * u[t * k + i];
    u[i * k + i] = std::sqrt(d);
    for (std::size_t j = i + 1; j < k; ++j) {
      double s = m[i * k + j];
      for (std::size_t t = 0; t < i; ++t) s -= u[t * k + i] * u[t * k + j];
      u[i * k + j] = s / u[i * k + i];
    }
  }
  return u;
}

std::vector<double> inverse_cholesky_upper(const std::vector<double>& a, std::size_t k) {
  return upper_cholesky(inverse(a, k), k);
}

// GPTQ's column loop on W (nr x k) in double: column perm[c] rounded with the scales of lowp's
// RTN tensor `scales` (the rule's scales of W) and the scalar codec, its error divided by
// U[c][c] fed to every later column at once (no lazy batches). Returns the codes; `near`, when
// given, gets per element the smallest relative change of its updated weight among 1e-7,
// 1e-6, ..., 1e-2 that changes its code (1 when none does): how close it was to a boundary.
std::vector<std::uint32_t> gptq_columns(std::vector<double> w, std::size_t nr, std::size_t k,
                                        const std::vector<double>& u, const std::vector<std::size_t>& perm,
                                        const QuantizedTensor& scales, std::vector<double>* near = nullptr) {
  const QuantSpec& spec = scales.spec;
  const std::size_t ngc = k / spec.block;
  std::vector<std::uint32_t> codes(nr * k);
  CastOptions cast = spec.cast;
  cast.saturate = true;
  if (near) near->assign(nr * k, 1.0);
  for (std::size_t c = 0; c < k; ++c) {
    const std::size_t oc = perm[c];
    for (std::size_t r = 0; r < nr; ++r) {
      const std::size_t g = r * ngc + oc / spec.block;
      // code and value of the weight v (float): the rule's scales, as RTN applies them
      const auto round = [&](float v, float& q) {
        if (spec.rule == ScaleRule::mx) {
          const std::uint32_t code = encode(spec.format, v * (1.0f / scales.scales[g]), cast);
          q = static_cast<float>(decode(spec.format, code)) * scales.scales[g];
          return code;
        }
        if (spec.rule == ScaleRule::nvfp4) {
          const float t = scales.tensor_scale * scales.scales[g];
          const std::uint32_t code = encode(spec.format, v / t, cast);
          q = static_cast<float>(decode(spec.format, code)) * t;
          return code;
        }
        const std::uint32_t code = encode(spec.format, v * scales.multipliers[g], cast);
        q = static_cast<float>(decode(spec.format, code)) / scales.multipliers[g];
        return code;
      };
      float q, unused;
      const std::uint32_t code = round(static_cast<float>(w[r * k + oc]), q);
      codes[r * k + oc] = code;
      for (double rho = 1e-7; near && rho < 2e-2; rho *= 10)
        if (round(static_cast<float>(w[r * k + oc] * (1 + rho)), unused) != code ||
            round(static_cast<float>(w[r * k + oc] * (1 - rho)), unused) != code) {
          (*near)[r * k + oc] = rho;
          break;
        }
      const double err = (w[r * k + oc] - q) / u[c * k + c];
      for (std::size_t j = c + 1; j < k; ++j) w[r * k + perm[j]] -= err * u[c * k + j];
    }
  }
  return codes;
}

// Codes of GPTQ by the paper's column loop; `scales` is lowp's RTN tensor (rule scales of W).
std::vector<std::uint32_t> reference_gptq(const Layer& l, const QuantizedTensor& scales, bool act_order,
                                          std::vector<double>* near, std::vector<std::size_t>& perm) {
  const std::size_t k = l.k;
  std::vector<double> h(k * k, 0.0);
  for (std::size_t r = 0; r < l.n; ++r)
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < k; ++j)
        h[i * k + j] += 2.0 * l.x[r * k + i] * l.x[r * k + j] / static_cast<double>(l.n);
  perm.resize(k);
  for (std::size_t j = 0; j < k; ++j) perm[j] = j;
  if (act_order)
    std::stable_sort(perm.begin(), perm.end(), [&](std::size_t a, std::size_t b) { return h[a * k + a] > h[b * k + b]; });
  double mean = 0;
  for (std::size_t j = 0; j < k; ++j) mean += h[j * k + j] / static_cast<double>(k);
  std::vector<double> hp(k * k);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < k; ++j) hp[i * k + j] = h[perm[i] * k + perm[j]] + (i == j ? 0.01 * mean : 0.0);
  return gptq_columns(std::vector<double>(l.w.begin(), l.w.end()), l.n_out, k, inverse_cholesky_upper(hp, k), perm,
                      scales, near);
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
      std::vector<double> near;
      std::vector<std::size_t> perm;
      const std::vector<std::uint32_t> want =
          reference_gptq(l, quantize(spec, l.w.data(), l.n_out, l.k), act_order, &near, perm);
      // Rows are independent in GPTQ: a row may differ only from a decision its float32
      // weight could legitimately take the other way.
      for (std::size_t r = 0; r < l.n_out; ++r)
        for (std::size_t c = 0; c < l.k; ++c) {
          const std::size_t i = r * l.k + perm[c];
          if (code_at(q, i) == want[i]) continue;
          EXPECT_LE(near[i], 1e-4) << "row " << r << " first differs at column " << perm[c]
                                   << ", which no float32 error of the factor reaches";
          break;
        }
    }
}

// K = 224 in lazy batches of 64: three full batches and a last partial one of 32, every row's
// codes equal to the double oracle's. The data make both sides compute without rounding, so
// nothing but a wrong update can make a code differ:
//  - H = J A J (J the reversal), A = L L^T with L unit lower bidiagonal, its subdiagonal +-1
//    (random signs) but 0 on every 10th row: independent chains of 10 columns, three of them
//    across a batch boundary (60..69, 120..129, 190..199). U = J L^-1 J is then unit upper
//    triangular with entries 0 and +-1: float32 Cholesky (unit pivots, sqrt(1)) and the
//    triangular inverse reach it exactly, as integer sums far below 2^24. det H = 1, so H^-1 is
//    an integer matrix: the oracle rounds its Gauss-Jordan inverse to integers (checked within
//    1e-6 of them) and its Cholesky factor is exact as well.
//  - The weights are multiples of 2^-6 below 8 in magnitude, the scales powers of two (MX's
//    E8M0; pow2's multipliers): each error w - q and each updated weight (at most 9 errors added
//    with signs, magnitudes below 2^6, finest bit 2^-6 for int4 and E2M1, 2^-16 for E4M3's
//    subnormals under an E8M0 scale) has fewer than 24 significant bits.
// So float32 and double hold the same numbers at every step, and every code must agree.
TEST(Calibrate, GptqPartialLastBatchEveryRowExact) {
  const std::size_t k = 224, nr = 32;
  std::vector<double> l_sub(k, 0.0);  // L[i][i-1]
  std::mt19937 gen(81);
  for (std::size_t i = 1; i < k; ++i) l_sub[i] = i % 10 == 0 ? 0.0 : (gen() & 1u ? 1.0 : -1.0);
  std::vector<double> a(k * k, 0.0);  // A = L L^T: tridiagonal
  for (std::size_t i = 0; i < k; ++i) {
    a[i * k + i] = 1 + l_sub[i] * l_sub[i];
    if (i > 0) a[i * k + i - 1] = a[(i - 1) * k + i] = l_sub[i];
  }
  std::vector<double> h(a.rbegin(), a.rend());  // J A J: the flat array reversed
  std::vector<double> hinv = inverse(h, k);
  for (double& v : hinv) {
    ASSERT_NEAR(v, std::round(v), 1e-6);
    v = std::round(v);
  }
  const std::vector<double> u = upper_cholesky(hinv, k);
  const std::vector<float> hf(h.begin(), h.end());
  std::vector<float> w = test::normal_floats(nr * k, 82);
  for (float& v : w) v = std::clamp(std::round(v * 64.0f) / 64.0f, -7.0f, 7.0f);
  std::vector<std::size_t> perm(k);
  for (std::size_t j = 0; j < k; ++j) perm[j] = j;
  GptqOptions opt;
  opt.damp = 0;  // H as built: the damping would add 0.01 mean(diag H), not a dyadic number
  opt.block = 64;
  for (const char* text : {"mxfp4", "int4:b32:pow2", "mxfp8"}) {
    SCOPED_TRACE(text);
    const QuantSpec spec = parse_quant_spec(text);
    const QuantizedTensor q = gptq_from_hessian(spec, w.data(), nr, k, hf, opt);
    const QuantizedTensor rtn_q = quantize(spec, w.data(), nr, k);
    const std::vector<std::uint32_t> want = gptq_columns(std::vector<double>(w.begin(), w.end()), nr, k, u, perm, rtn_q);
    std::size_t moved = 0;  // codes GPTQ changed from RTN's: the updates did act
    for (std::size_t i = 0; i < nr * k; ++i) {
      ASSERT_EQ(code_at(q, i), want[i]) << "row " << i / k << " column " << i % k;
      moved += code_at(rtn_q, i) != want[i] && i % k >= 192;
    }
    EXPECT_GT(moved, 0u) << "no code of the last batch moved: the test could not see its updates";
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

// AWQ's premise (Lin et al. 2023, section 3.2): the output error of a group-quantized linear is
// dominated by the few input channels with large activations, and scaling their weight columns
// up before quantizing (down again on the input) rounds them relatively finer. Built here:
// X N(0, 1) with one channel of every 32 (one per quantization group) 30x larger, W N(0, 1).
// The test scores AWQ's whole grid itself (auto_scale's s = max(m^alpha, 1e-4) / sqrt(max s min s)
// written here, lowp's RTN quantize of W diag(s), the objective in double): the chosen alpha
// must score the grid's minimum, be > 0, and beat RTN (alpha = 0) by more than 10% (seen:
// 0.12-0.13 of RTN's error for int4:b32 and NVFP4, 0.77 for MXFP4).
TEST(Calibrate, AwqScalingBeatsRtnOnSalientChannels) {
  const std::size_t n_out = 32, k = 128;
  for (const std::size_t n : {std::size_t{96}, std::size_t{256}})  // the objective from X, and from X^T X
    for (const char* text : {"int4:b32", "mxfp4", "nvfp4"}) {
      SCOPED_TRACE(std::string(text) + " n " + std::to_string(n));
      const QuantSpec spec = parse_quant_spec(text);
      Layer l{n_out, k, n, test::normal_floats(n_out * k, 91), test::normal_floats(n * k, 92)};
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t j = 3; j < k; j += 32) l.x[r * k + j] *= 30.0f;
      std::vector<double> m(k, 0.0);
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t j = 0; j < k; ++j) m[j] += std::fabs(static_cast<double>(l.x[r * k + j])) / static_cast<double>(n);
      const auto score = [&](double alpha) {
        std::vector<double> s(k);
        for (std::size_t j = 0; j < k; ++j) s[j] = std::max(std::pow(m[j], alpha), 1e-4);
        const double norm = std::sqrt(*std::min_element(s.begin(), s.end()) * *std::max_element(s.begin(), s.end()));
        std::vector<float> sf(k), ws(n_out * k);
        for (std::size_t j = 0; j < k; ++j) sf[j] = static_cast<float>(s[j] / norm);
        for (std::size_t o = 0; o < n_out; ++o)
          for (std::size_t j = 0; j < k; ++j) ws[o * k + j] = l.w[o * k + j] * sf[j];
        std::vector<float> eff = deq(quantize(spec, ws.data(), n_out, k));
        for (std::size_t o = 0; o < n_out; ++o)
          for (std::size_t j = 0; j < k; ++j) eff[o * k + j] /= sf[j];
        return layer_objective(l, eff);
      };
      const double rtn_error = score(0.0);
      EXPECT_NEAR(rtn_error, layer_objective(l, rtn(spec, l)), 1e-12 * rtn_error);  // s = 1: RTN itself
      double best = rtn_error;
      for (int i = 1; i < 20; ++i) best = std::min(best, score(i / 20.0));
      const AwqResult a = awq(spec, l.w.data(), n_out, k, l.x.data(), n);
      EXPECT_GT(a.alpha, 0.0);
      const double got = score(a.alpha);
      // The library sums the same objective in another order (Eigen; X^T X for n > k):
      // relative 1e-9 covers that, far below the gaps between grid points.
      EXPECT_NEAR(got, best, 1e-9 * best) << "alpha " << a.alpha << " is not the grid's best";
      EXPECT_LT(got, 0.9 * rtn_error) << "alpha " << a.alpha;
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
