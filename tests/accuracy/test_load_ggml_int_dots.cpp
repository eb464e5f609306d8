// act.ggml's integer products (io/ggml/int_dots.hpp): llama.cpp's activation quantizers checked
// on inputs whose codes follow from its definitions by hand, the dots against a long double sum
// over ggml's dequantized values (the decoders GgmlDequant.BitExactAgainstGgml checks) within a
// bound from their rounding, the AVX2 dots bitwise against the scalar ones, and whole models
// against llama.cpp's own logits of model A (../shared/gguf).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "io/ggml/ggml_types.hpp"
#include "io/ggml/int_dots.hpp"
#include "llama_test_util.hpp"
#include "model_files.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"
#include "lowp/numerics/half.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;
using lowp::f16_to_f32;
using lowp::f32_to_f16;

std::uint16_t half_bits(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// Q8_K: max is the element of largest magnitude (the first of equals), iscale = -127 / max,
// codes round(iscale x) half to even and at most 127, d = 1 / iscale, bsums of 16 codes.
TEST(GgmlIntDots, Q8KQuantizesAsLlamaCpp) {
  std::vector<float> x(512, 0.0f);
  // Block 0: max = -127 (the first of -127 and 127), so iscale = 1: 2.5 -> 2 and -3.5 -> -4
  // (half to even; half away from zero would give 3 and -4), 127 -> 127, 200.25 cannot occur.
  x[0] = 2.5f;
  x[1] = -3.5f;
  x[2] = -127.0f;
  x[3] = 127.0f;
  x[17] = 0.49f;
  x[18] = 0.51f;
  // Block 1: max = 63.5 > 0, so iscale = -2: 1.25 -> -2.5 -> -2, -0.75 -> 1.5 -> 2, 63.5 -> -127.
  x[256] = 1.25f;
  x[257] = -0.75f;
  x[258] = 63.5f;
  std::vector<ggml::BlockQ8K> q(2);
  ggml::quantize_q8_k(x.data(), x.size(), q.data());
  EXPECT_EQ(q[0].d, 1.0f);
  EXPECT_EQ(q[0].qs[0], 2);
  EXPECT_EQ(q[0].qs[1], -4);
  EXPECT_EQ(q[0].qs[2], -127);
  EXPECT_EQ(q[0].qs[3], 127);
  EXPECT_EQ(q[0].qs[17], 0);
  EXPECT_EQ(q[0].qs[18], 1);
  EXPECT_EQ(q[0].bsums[0], 2 - 4 - 127 + 127);
  EXPECT_EQ(q[0].bsums[1], 1);
  EXPECT_EQ(q[1].d, -0.5f);
  EXPECT_EQ(q[1].qs[0], -2);
  EXPECT_EQ(q[1].qs[1], 2);
  EXPECT_EQ(q[1].qs[2], -127);
  EXPECT_EQ(q[1].bsums[0], -127);
  // A zero block: d 0 and zero codes; a block with a NaN or an infinity: d NaN, zero codes.
  std::vector<float> z(768, 1.0f);
  std::fill(z.begin(), z.begin() + 256, 0.0f);
  z[300] = std::numeric_limits<float>::infinity();
  z[600] = std::numeric_limits<float>::quiet_NaN();
  std::vector<ggml::BlockQ8K> qz(3);
  ggml::quantize_q8_k(z.data(), z.size(), qz.data());
  EXPECT_EQ(qz[0].d, 0.0f);
  for (const auto& b : qz) {
    if (&b != qz.data()) {
      EXPECT_TRUE(std::isnan(b.d));
    }
    for (int j = 0; j < 256; ++j) ASSERT_EQ(b.qs[j], 0);
  }
}

// Q8_0 on x86 (llama.cpp's AVX path): d = f16(amax / 127), codes round(x (127 / amax)) half to
// even.
TEST(GgmlIntDots, Q80QuantizesAsLlamaCppOnX86) {
  std::vector<float> x(64, 0.0f);
  x[0] = 63.5f;  // amax: d = 0.5, 127 / amax = 2
  x[1] = 1.25f;  // 2.5 -> 2
  x[2] = -1.75f;  // -3.5 -> -4
  x[3] = -63.5f;  // -127
  x[32] = 1e-3f;  // d = f16(1e-3 / 127), a rounded f16; the code is 127
  std::vector<ggml::BlockQ8_0> q(2);
  ggml::quantize_q8_0(x.data(), x.size(), q.data());
  EXPECT_EQ(f16_to_f32(half_bits(q[0].d)), 0.5f);
  EXPECT_EQ(q[0].qs[0], 127);
  EXPECT_EQ(q[0].qs[1], 2);
  EXPECT_EQ(q[0].qs[2], -4);
  EXPECT_EQ(q[0].qs[3], -127);
  EXPECT_EQ(q[0].qs[4], 0);
  EXPECT_EQ(half_bits(q[1].d), f32_to_f16(1e-3f / 127.0f));
  EXPECT_EQ(q[1].qs[0], 127);
}

// Q8_1 (llama.cpp's AVX2 path): Q8_0's d and codes, and s = f16(d' sum(q)) with d' = amax / 127
// before its f16 rounding.
TEST(GgmlIntDots, Q81QuantizesAsLlamaCppOnX86) {
  std::vector<float> x(64, 0.0f);
  x[0] = 63.5f;  // d = 0.5: codes 127, 2, -4 (half to even), sum 125, s = 62.5
  x[1] = 1.25f;
  x[2] = -1.75f;
  x[32] = 1e-3f;  // d' = 1e-3 / 127, not an f16; codes 127 and 64 (63.5 to even), sum 191
  x[33] = 5e-4f;
  std::vector<ggml::BlockQ8_1> q(2);
  ggml::quantize_q8_1(x.data(), x.size(), q.data());
  EXPECT_EQ(f16_to_f32(half_bits(q[0].d)), 0.5f);
  EXPECT_EQ(q[0].qs[0], 127);
  EXPECT_EQ(q[0].qs[1], 2);
  EXPECT_EQ(q[0].qs[2], -4);
  EXPECT_EQ(f16_to_f32(half_bits(q[0].s)), 62.5f);
  const float d = 1e-3f / 127.0f;
  EXPECT_EQ(half_bits(q[1].d), f32_to_f16(d));
  EXPECT_EQ(q[1].qs[0], 127);
  EXPECT_EQ(q[1].qs[1], 64);
  EXPECT_EQ(half_bits(q[1].s), f32_to_f16(d * 191.0f));
  // The case tells the two d apart: s from the rounded d is another f16.
  ASSERT_NE(f32_to_f16(f16_to_f32(f32_to_f16(d)) * 191.0f), f32_to_f16(d * 191.0f));
  // A block with an infinity: d and s NaN, codes 0.
  x[40] = std::numeric_limits<float>::infinity();
  ggml::quantize_q8_1(x.data(), x.size(), q.data());
  EXPECT_TRUE(std::isnan(f16_to_f32(half_bits(q[1].d))));
  EXPECT_TRUE(std::isnan(f16_to_f32(half_bits(q[1].s))));
  EXPECT_EQ(q[1].qs[0], 0);
}

struct Case {
  std::uint32_t type;
  std::size_t blocks;  // weight blocks per row
};

// Random weight blocks with finite f16 scales of either sign in [1e-3, 0.1] (the rest random
// bytes), and their activation row from random normal floats with a few outliers.
struct Row {
  std::vector<std::uint8_t> w, a;
  std::vector<float> x;
};

std::vector<std::size_t> f16_offsets(std::uint32_t type) {
  if (type == ggml::q4_k || type == ggml::q5_k || type == ggml::q4_1 || type == ggml::q5_1) return {0, 2};
  if (type == ggml::q2_k) return {80, 82};
  if (type == ggml::q3_k) return {108};
  if (type == ggml::q6_k) return {208};
  return {0};
}

// The activation type a product quantizes to, by its block bytes.
std::uint32_t act_type(const lowp::quant::ActProduct& p) {
  return p.act_bytes == sizeof(ggml::BlockQ8K) ? ggml::q8_k : p.act_bytes == sizeof(ggml::BlockQ8_1) ? ggml::q8_1 : ggml::q8_0;
}

// Every type with a product, with the weight blocks of a row: 26 for blocks of 32 (six runs of
// four and a tail of two in the AVX2 dots), 3 or 4 for the super-blocks of 256.
std::vector<Case> all_cases(std::size_t k_blocks) {
  std::vector<Case> v;
  for (std::uint32_t t : {ggml::q2_k, ggml::q3_k, ggml::q4_k, ggml::q5_k, ggml::q6_k, ggml::iq4_xs}) v.push_back({t, k_blocks});
  for (std::uint32_t t : {ggml::q8_0, ggml::q4_0, ggml::q5_0, ggml::q4_1, ggml::q5_1, ggml::iq4_nl}) v.push_back({t, 26});
  return v;
}

Row random_row(std::uint32_t type, std::size_t n, std::mt19937& gen) {
  const lowp::quant::ActProduct* p = ggml::int_product(type, lowp::Isa::scalar);
  const std::size_t bb = ggml::block_bytes(type), blocks = n / ggml::block_size(type);
  Row r;
  r.w.resize(blocks * bb);
  for (auto& b : r.w) b = static_cast<std::uint8_t>(gen());
  std::uniform_real_distribution<float> mag(1e-3f, 0.1f);
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t off : f16_offsets(type)) {
      const std::uint16_t h = f32_to_f16(gen() % 2 ? mag(gen) : -mag(gen));
      std::memcpy(&r.w[b * bb + off], &h, 2);
    }
  std::normal_distribution<float> nd(0.0f, 1.0f);
  r.x.resize(n);
  for (auto& v : r.x) v = nd(gen);
  for (int i = 0; i < 3; ++i) r.x[gen() % n] = 40.0f * nd(gen);
  r.a.resize(n / p->act_block * p->act_bytes);
  p->quantize(r.x.data(), n, r.a.data());
  return r;
}

// The dots against sum_e w_e a_e in long double, w_e and a_e ggml's dequantized values (for Q4_1
// and Q5_1, whose product llama.cpp defines with the activations' stored sum s: the weights
// dequantized with m = 0, plus m s per block). The dot's float terms are (a.d w.d) float(isum)
// (per block, or per lane of a block) and the min terms, each within 3 roundings (u = 2^-24)
// of its exact value, and none passes through more than 2 nb + 3 additions (2 a block, 3 in the
// lanes' tree); so the dot is within (2 nb + 3) u (1 + 1e-6) times the sum of the terms'
// magnitudes, which the integer codes bound (|code| times |scale| at most: Q2_K 3 * 15, mins
// 15; Q3_K 4 * 32; Q4_K 15 * 63, Q5_K 31 * 63, mins 63; Q6_K 32 * 128; IQ4_XS 127 * 32; Q4_1 15,
// Q5_1 31; the other blocks of 32 128), times sum|qa|. ggml's w_e are exact but for one
// rounding of the K types' products: u sum |w_e a_e| more.
long double term_bound(std::uint32_t type, const std::uint8_t* w, long double ad, long double qa, long double as) {
  const auto h = [&](std::size_t off) { return std::fabs(static_cast<long double>(f16_to_f32(half_bits(w + off)))); };
  ad = std::fabs(ad);
  switch (type) {
    case ggml::q2_k: return ad * (h(80) * 3 * 15 + h(82) * 15) * qa;
    case ggml::q3_k: return ad * h(108) * 4 * 32 * qa;
    case ggml::q4_k: return ad * (h(0) * 15 * 63 + h(2) * 63) * qa;
    case ggml::q5_k: return ad * (h(0) * 31 * 63 + h(2) * 63) * qa;
    case ggml::q6_k: return ad * h(208) * 32 * 128 * qa;
    case ggml::iq4_xs: return ad * h(0) * 127 * 32 * qa;
    case ggml::q4_1: return ad * h(0) * 15 * qa + h(2) * std::fabs(as);
    case ggml::q5_1: return ad * h(0) * 31 * qa + h(2) * std::fabs(as);
    default: return ad * h(0) * 128 * qa;
  }
}

TEST(GgmlIntDots, DotsAreTheBlocksExactProductsWithinTheirRounding) {
  std::mt19937 gen(41);
  const long double u = std::ldexp(1.0L, -24);
  for (const Case c : all_cases(4)) {
    const lowp::quant::ActProduct* p = ggml::int_product(c.type, lowp::Isa::scalar);
    ASSERT_NE(p, nullptr) << ggml::type_name(c.type);
    const std::size_t n = c.blocks * ggml::block_size(c.type), ab = p->act_block, bb = ggml::block_bytes(c.type);
    const bool with_min = c.type == ggml::q4_1 || c.type == ggml::q5_1;
    long double worst = 0;
    for (int trial = 0; trial < 200; ++trial) {
      const Row r = random_row(c.type, n, gen);
      std::vector<std::uint8_t> w0 = r.w;  // Q4_1 and Q5_1 with m = 0
      if (with_min)
        for (std::size_t b = 0; b < n / 32; ++b) w0[b * bb + 2] = w0[b * bb + 3] = 0;
      std::vector<float> w(n), a(n);
      ggml::dequantize(c.type, w0.data(), w.data(), n, lowp::Isa::scalar);
      ggml::dequantize(act_type(*p), r.a.data(), a.data(), n, lowp::Isa::scalar);
      long double exact = 0, mag_w = 0, terms = 0;
      for (std::size_t e = 0; e < n; ++e) {
        exact += static_cast<long double>(w[e]) * a[e];
        mag_w += std::fabs(static_cast<long double>(w[e]) * a[e]);
      }
      for (std::size_t b = 0; b < n / ab; ++b) {
        // The activation block's scale, sum of |codes| and stored sum (Q8_K: d a float at 0,
        // codes at 4; Q8_0: d an f16 at 0, codes at 2; Q8_1: d and s f16s at 0 and 2, codes at 4).
        const std::uint8_t* ablk = r.a.data() + b * p->act_bytes;
        long double ad, qa = 0, as = 0;
        if (act_type(*p) == ggml::q8_k) {
          float d;
          std::memcpy(&d, ablk, 4);
          ad = d;
          for (int i = 0; i < 256; ++i) qa += std::abs(static_cast<std::int8_t>(ablk[4 + i]));
        } else {
          const std::size_t codes = with_min ? 4 : 2;
          ad = f16_to_f32(half_bits(ablk));
          if (with_min) {
            as = f16_to_f32(half_bits(ablk + 2));
            exact += static_cast<long double>(f16_to_f32(half_bits(r.w.data() + b * bb + 2))) * as;
          }
          for (int i = 0; i < 32; ++i) qa += std::abs(static_cast<std::int8_t>(ablk[codes + i]));
        }
        terms += term_bound(c.type, r.w.data() + b * bb, ad, qa, as);
      }
      const std::size_t nb = n / ab;
      const long double bound = (2.0L * nb + 3) * u * (1 + 1e-6L) * terms + u * mag_w;
      const long double got = p->dot(r.w.data(), r.a.data(), n);
      ASSERT_LE(std::fabs(got - exact), bound) << ggml::type_name(c.type) << " trial " << trial;
      worst = std::max(worst, std::fabs(got - exact) / bound);
    }
    EXPECT_GT(worst, 0.0L) << ggml::type_name(c.type) << ": every dot exact, the bound untested";
  }
}

// The AVX2 dots give the scalar dots' bits: random rows, and rows at the integer extremes (all
// codes at their largest against activations of +-127: Q4_K 15, Q6_K 63 and 0 with scales -128
// and 127, Q5_K 31, Q8_0 -128 and 127, Q4_0 -8 and 7, Q5_0 -16 and 15, Q4_1 15 and 0, Q5_1 31
// and 0, IQ4_NL -127 and 113, Q2_K 3 with scales and mins 15, Q3_K -4 with scales -32 and 3
// with 31, IQ4_XS -127 with scales -32 and 113 with 31). The rows of blocks of 32 are 26
// blocks: six runs of four and a tail of two.
TEST(GgmlIntDots, SimdDotsAreBitwiseTheScalarOnes) {
  if (!lowp::isa_available(lowp::Isa::avx2)) GTEST_SKIP() << "no AVX2 on this CPU: no SIMD dot is built to run";
  std::mt19937 gen(43);
  for (const Case c : all_cases(3)) {
    const auto* scalar = ggml::int_product(c.type, lowp::Isa::scalar);
    const auto* simd = ggml::int_product(c.type, lowp::Isa::avx2);
    ASSERT_NE(simd->dot, scalar->dot);
    const std::size_t n = c.blocks * ggml::block_size(c.type), bb = ggml::block_bytes(c.type);
    for (int trial = 0; trial < 300; ++trial) {
      Row r = random_row(c.type, n, gen);
      if (trial % 3 == 1) {  // extremes
        std::vector<float> x(n, trial % 2 ? 1.0f : -1.0f);
        scalar->quantize(x.data(), n, r.a.data());
        for (std::size_t b = 0; b < n / ggml::block_size(c.type); ++b) {
          std::uint8_t* blk = r.w.data() + b * bb;
          if (c.type == ggml::q4_k || c.type == ggml::q5_k)  // scales and mins 63, codes 15 (31)
            std::fill(blk + 4, blk + static_cast<std::ptrdiff_t>(bb), 0xFF);
          if (c.type == ggml::q4_0 || c.type == ggml::q5_0 || c.type == ggml::iq4_nl || c.type == ggml::iq4_xs)
            std::fill(blk + 2, blk + static_cast<std::ptrdiff_t>(bb), trial % 2 ? 0xFF : 0x00);
          if (c.type == ggml::q4_1 || c.type == ggml::q5_1)  // codes 15 (31) or 0
            std::fill(blk + 4, blk + static_cast<std::ptrdiff_t>(bb), trial % 2 ? 0xFF : 0x00);
          if (c.type == ggml::q2_k) std::fill(blk, blk + 80, 0xFF);  // codes 3, scales and mins 15
          if (c.type == ggml::q3_k) std::fill(blk, blk + 108, trial % 2 ? 0xFF : 0x00);
          if (c.type == ggml::q6_k) {
            std::fill(blk, blk + 192, trial % 2 ? 0xFF : 0x00);  // codes 63 or 0 (q = 31 or -32)
            for (int j = 0; j < 16; ++j) blk[192 + j] = static_cast<std::uint8_t>(j % 2 ? 0x80 : 0x7F);
          }
          if (c.type == ggml::q8_0) std::fill(blk + 2, blk + 34, trial % 2 ? 0x80 : 0x7F);
        }
      }
      const float a = scalar->dot(r.w.data(), r.a.data(), n), b = simd->dot(r.w.data(), r.a.data(), n);
      ASSERT_EQ(std::bit_cast<std::uint32_t>(a), std::bit_cast<std::uint32_t>(b))
          << ggml::type_name(c.type) << " trial " << trial << ": " << a << " vs " << b;
    }
  }
}

// Whole models against llama.cpp's own logits of model A (one batch of 128 tokens, F32 KV
// cache), which quantize each matmul's input. Without act.ggml lowp's logits differ from them by
// the KLD that quantization makes (2e-4 to 6e-4 for the block types); with it, that difference
// must fall at least tenfold (what remains: the order of llama.cpp's float sums, and the
// activation codes a last-bit difference tips over). Q4_K_M, Q2_K and IQ4_NL, whose products
// meet llama.cpp's to within float32 rounding here (no activation code tipped: those move a
// logit by 1e-2 or more), must match its logits within 1e-4, the margin
// GgmlDequant.EveryModelAFileMatchesFloat64Logits allows a float32 forward. IQ4_NL runs through
// llama.cpp's tinyBLAS, whose lane order the blocks of 32 follow: the mutant in mind, the blocks'
// terms summed one by one (as lowp did before), tips a code there.
TEST(GgmlIntDots, ModelAMatchesLlamaCppsOwnLogits) {
  const std::string dir = shared_path("gguf");
  if (!std::filesystem::exists(dir + "/modelA-Q4_K_M.gguf")) GTEST_SKIP() << "../shared/gguf (llama.cpp's model A files) is absent";
  const auto tokens = read_ids(dir + "/tokens.txt");
  ASSERT_EQ(tokens.size(), 128u);
  const Recipe ggml = parse_recipe("name = ggml-test\nact.ggml = on\n");
  const auto kld = [](const std::vector<float>& p, const std::vector<float>& q) {
    const std::size_t V = 512, T = p.size() / V;
    double sum = 0;
    for (std::size_t t = 0; t < T; ++t) {
      const float* a = p.data() + t * V;
      const float* b = q.data() + t * V;
      const double ma = *std::max_element(a, a + V), mb = *std::max_element(b, b + V);
      double za = 0, zb = 0;
      for (std::size_t v = 0; v < V; ++v) za += std::exp(a[v] - ma), zb += std::exp(b[v] - mb);
      for (std::size_t v = 0; v < V; ++v) {
        const double la = a[v] - ma - std::log(za), lb = b[v] - mb - std::log(zb);
        sum += std::exp(la) * (la - lb);
      }
    }
    return sum / static_cast<double>(T);
  };
  for (const std::string t : {"Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0", "Q5_0", "Q4_1", "Q5_1", "Q2_K", "Q3_K_M", "IQ4_NL",
                              "IQ4_XS", "F16", "BF16"}) {
    const LlamaModel m = load_gguf(dir + "/modelA-" + t + ".gguf", WeightStorage::mapped);
    const auto ref = read_binary<float>(dir + "/logits/logits_modelA_" + t + ".f32le.bin");
    ASSERT_EQ(ref.size(), 128u * 512u) << t;
    EvalOptions opt;
    opt.keep_logits = true;
    opt.score_all = true;
    opt.ctx = 128;
    const std::vector<float> fp32 = evaluate(m, tokens, find_recipe("fp32"), opt).logits;
    const std::vector<float> got = evaluate(m, tokens, ggml, opt).logits;
    ASSERT_EQ(got.size(), ref.size()) << t;
    const double with = kld(ref, got), without = kld(ref, fp32);
    EXPECT_LT(with, without / 10) << t << ": KLD to llama.cpp " << with << " with act.ggml, " << without << " without";
    std::printf("%s: KLD to llama.cpp's logits %.3g with act.ggml, %.3g without\n", t.c_str(), with, without);
    if (t == "Q4_K_M" || t == "Q2_K" || t == "IQ4_NL") {
      double worst = 0;
      for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(got[i] - ref[i])));
      EXPECT_LE(worst, 1e-4) << t;
    }
  }
}

// A weight type lowp has no integer product for is refused by name (MXFP4 here: written by the
// test, read in place), as is act.ggml beside specs that would replace the file's weights.
TEST(GgmlIntDots, UnsupportedTypesAndMixedRecipesAreOneLine) {
  const std::string dir = temp_dir("ggml_act_refusals");
  const LlamaModel m = small_model(3);
  write_gguf(dir + "/mxfp4.gguf", m, GgufType::mxfp4);
  write_gguf(dir + "/q8_0.gguf", m, GgufType::q8_0);
  const std::vector<int> few = random_tokens(16, m.config.vocab_size, 5);
  EvalOptions opt;
  opt.ctx = 16;
  const Recipe ggml = parse_recipe("name = g\nact.ggml = on\n");
  const LlamaModel mx = load_gguf(dir + "/mxfp4.gguf", WeightStorage::mapped);
  try {
    evaluate(mx, few, ggml, opt);
    ADD_FAILURE() << "MXFP4 was accepted";
  } catch (const lowp::Error& e) {
    EXPECT_NE(std::string(e.what()).find("recipe 'g': act.ggml: wq of layer 0 is stored as MXFP4 (39), which lowp has no integer product for"),
              std::string::npos)
        << e.what();
  }
  const LlamaModel q8 = load_gguf(dir + "/q8_0.gguf", WeightStorage::mapped);
  EXPECT_NO_THROW(evaluate(q8, few, ggml, opt));
  // Any spec of a linear, the classifier's and a layer section's too, is refused; so is the
  // switchback-int8 preset's override of a layer linear (one test of the refusal both share),
  // while its classifier spec stays allowed. The mutants in mind: the helper reading only the
  // recipe-wide specs, or act.ggml's check leaving out the classifier.
  for (const char* spec : {"weights = int4", "act.classifier = e4m3", "layer.1.weights.down = int8_sym"}) {
    try {
      evaluate(q8, few, parse_recipe(std::string("name = g\nact.ggml = on\n") + spec + "\n"), opt);
      ADD_FAILURE() << spec << " was accepted beside act.ggml";
    } catch (const lowp::Error& e) {
      EXPECT_NE(std::string(e.what()).find("it takes no weights.* / act.* specs"), std::string::npos) << e.what();
    }
  }
  const LlamaModel f32 = small_model(3);
  EXPECT_THROW(evaluate(f32, few, parse_recipe("name = s\nlinear = switchback-int8\nlayer.1.act.up = e4m3\n"), opt), lowp::Error);
  EXPECT_NO_THROW(evaluate(f32, few, parse_recipe("name = s\nlinear = switchback-int8\nweights.classifier = int8_sym\n"), opt));
  EXPECT_THROW(parse_recipe("name = g\nact.ggml = maybe\n"), lowp::Error);
  EXPECT_TRUE(parse_recipe(to_text(parse_recipe("name = g\nact.ggml = on\n"))).act_ggml);
  std::filesystem::remove_all(dir);
}

}  // namespace
