// Quantization points, rotations and error attribution, checked against independent oracles:
// the token-by-token reference with the same rounding applied at its matching places, exact
// identities of the rotations, and signal/noise sums computed here.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "llama_reference.hpp"
#include "llama_test_util.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/metrics.hpp"
#include "lowp/numerics/error.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

// bfloat16 round-to-nearest-even of a finite float, from its bit pattern.
float bf16(float x) {
  std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  b += 0x7fffu + ((b >> 16) & 1u);
  return std::bit_cast<float>(b & 0xffff0000u);
}

EvalRun run(const LlamaModel& m, const std::vector<int>& tokens, const Recipe& r, int ctx = 0) {
  EvalOptions opt;
  opt.keep_logits = true;
  opt.score_all = true;
  opt.ctx = ctx;
  return evaluate(m, tokens, r, opt);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const lowp::Error& e) {
    return e.what();
  }
  return "(no error)";
}

const TensorError* find_error(const EvalRun& r, int layer, const std::string& point) {
  for (const auto& e : r.tensor_errors)
    if (e.layer == layer && e.point == point) return &e;
  return nullptr;
}

// Every point in bfloat16 (elementwise, so token-by-token and batched rounding agree) against
// the reference with bf16 weights and bf16 rounding at each of its hooks.
TEST(EvalPoints, Bf16EverywhereMatchesReferenceRoundedAtTheSamePlaces) {
  const LlamaModel m = small_model(11);
  const auto tokens = random_tokens(32, m.config.vocab_size, 12);
  const Recipe r = parse_recipe(R"(name = all-bf16
weights = bf16
weights.classifier = bf16
act = bf16
act.classifier = bf16
attn.qk = bf16
attn.v = bf16
attn.p = bf16)");
  const EvalRun got = run(m, tokens, r);

  LlamaModel rounded = m;
  const auto round_all = [](std::vector<float>& v) {
    for (float& x : v) x = bf16(x);
  };
  for (auto& L : rounded.layers)
    for (auto* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) round_all(*w);
  round_all(rounded.classifier);
  const auto want = ReferenceLlama(rounded, [](std::string_view, float* x, std::size_t n) {
                      for (std::size_t i = 0; i < n; ++i) x[i] = bf16(x[i]);
                    }).run(tokens);
  const auto fp32 = ReferenceLlama(m).run(tokens);
  // A different float32 summation order can move an intermediate across a bf16 rounding
  // boundary now and then; the bound sits far below the bf16 effect itself.
  const float diff = max_abs_diff(got.logits, want), effect = max_abs_diff(got.logits, fp32);
  EXPECT_LE(diff, 2e-3f);
  EXPECT_GE(effect, 20 * diff);
}

// E4M3 (OCP, finite) round-to-nearest-even of a value in [0, 448], from its definition: 3
// mantissa bits, normals from 2^-6, subnormal step 2^-9.
float e4m3(float x) {
  if (x == 0.0f) return 0.0f;
  const int e = std::max(static_cast<int>(std::floor(std::log2(static_cast<double>(x)))), -6);
  const double q = std::ldexp(1.0, e - 3);
  return static_cast<float>(std::nearbyint(static_cast<double>(x) / q) * q);
}

// attn.p_form = fa3 casts FlashAttention-3's 2^8 exp(S - rowmax) and divides by the float32
// row sums after P V: the token-by-token reference doing the same agrees, while the normalized
// P (values near 1/T, partly below E4M3's normal range) lands much farther from it.
TEST(EvalPoints, Fa3FormQuantizesTheUnnormalizedExponentials) {
  const LlamaModel m = small_model(31);
  const auto tokens = random_tokens(48, m.config.vocab_size, 32);
  const std::string base = "name = p\nattn.p = e4m3:tensor:none\n";
  const EvalRun fa3 = run(m, tokens, parse_recipe(base + "attn.p_form = fa3\n"));
  const EvalRun normalized = run(m, tokens, parse_recipe(base));
  const auto round_p = [](std::string_view point, float* x, std::size_t n) {
    if (point == "p")
      for (std::size_t i = 0; i < n; ++i) x[i] = e4m3(x[i]);
  };
  const auto want = ReferenceLlama(m, round_p, /*fa3_p=*/true).run(tokens);
  const auto fp32 = ReferenceLlama(m).run(tokens);
  // As for bf16 above: another float32 summation order can move an exponential across an E4M3
  // rounding boundary now and then; that stays far below the FP8 effect itself.
  const float diff = max_abs_diff(fa3.logits, want), effect = max_abs_diff(fa3.logits, fp32);
  EXPECT_LE(diff, 0.05f * effect);
  EXPECT_GE(max_abs_diff(normalized.logits, want), 10 * diff);
  // Without an attn.p spec the form changes nothing: the same bits as float32.
  EXPECT_EQ(run(m, tokens, parse_recipe("name = q\nattn.p_form = fa3\n")).logits, run(m, tokens, find_recipe("fp32")).logits);
}

TEST(EvalPoints, RandomizedAttentionHadamardKeepsTheLogitsAndDependsOnTheSeed) {
  const LlamaModel m = small_model(33);
  const auto tokens = random_tokens(40, m.config.vocab_size, 34);
  const EvalRun ref = run(m, tokens, find_recipe("fp32"));
  const EvalRun a = run(m, tokens, parse_recipe("name = r\nattn.rotate = randomized\nattn.rotate_v = on\nseed = 1\n"));
  const EvalRun b = run(m, tokens, parse_recipe("name = r\nattn.rotate = randomized\nattn.rotate_v = on\nseed = 2\n"));
  EXPECT_LE(max_abs_diff(a.logits, ref.logits), 1e-5f);  // orthogonal: the same attention
  // With Q and K in E4M3 the rotation's signs change which values round where.
  const std::string fp8 = "name = r\nattn.qk = e4m3:tensor:amax\nattn.rotate = randomized\nseed = ";
  EXPECT_NE(run(m, tokens, parse_recipe(fp8 + "1\n")).logits, run(m, tokens, parse_recipe(fp8 + "2\n")).logits);
  EXPECT_NE(a.logits, b.logits);
}

TEST(EvalPoints, AttentionHadamardAloneKeepsTheLogits) {
  const LlamaModel m = small_model(13);
  const auto tokens = random_tokens(40, m.config.vocab_size, 14);
  const EvalRun ref = run(m, tokens, find_recipe("fp32"));
  const EvalRun qk = run(m, tokens, parse_recipe("name = r\nattn.rotate = hadamard\n"));
  const EvalRun qkv = run(m, tokens, parse_recipe("name = r\nattn.rotate = hadamard\nattn.rotate_v = on\n"));
  EXPECT_LE(max_abs_diff(qk.logits, ref.logits), 1e-5f);
  EXPECT_LE(max_abs_diff(qkv.logits, ref.logits), 1e-5f);
  EXPECT_NE(qk.logits, ref.logits);  // the rotation did run (float32 rounding differs)
}

TEST(EvalPoints, QuaRotAloneKeepsTheLogits) {
  for (const bool tied : {false, true}) {
    const LlamaModel m = small_model(15, tied);
    const auto tokens = random_tokens(40, m.config.vocab_size, 16);
    const EvalRun ref = run(m, tokens, find_recipe("fp32"));
    const EvalRun rot = run(m, tokens, parse_recipe("name = r\nquarot = on\nseed = 3\n"));
    EXPECT_LE(max_abs_diff(rot.logits, ref.logits), 1e-4f) << tied;
    EXPECT_NE(rot.logits, ref.logits);
  }
}

TEST(EvalPoints, SharedModelRotationsKeepTheLogits) {
  LOWP_REQUIRE_SHARED();
  const LlamaModel m = lowp::accuracy::load_llama2c(shared_path("models/stories260K.bin"));
  auto tokens = read_ids(shared_path("data/stories260K_ref/seqA_tokens.txt"));
  tokens.resize(64);
  const EvalRun ref = run(m, tokens, find_recipe("fp32"));
  const EvalRun rot = run(m, tokens, parse_recipe("name = r\nquarot = on\nattn.rotate = hadamard\nattn.rotate_v = on\n"));
  EXPECT_LE(max_abs_diff(rot.logits, ref.logits), 2e-4f);
}

TEST(EvalPoints, WeightErrorIsMeasuredOnTheRightTensor) {
  const LlamaModel m = small_model(17);
  const auto tokens = random_tokens(20, m.config.vocab_size, 18);
  const EvalRun r = run(m, tokens, parse_recipe("name = w\nweights.wq = bf16\nact.wo = bf16\n"));
  for (int l = 0; l < 2; ++l) {
    double signal = 0, noise = 0;
    for (float w : m.layers[static_cast<std::size_t>(l)].wq) {
      signal += static_cast<double>(w) * w;
      noise += (static_cast<double>(bf16(w)) - w) * (static_cast<double>(bf16(w)) - w);
    }
    const TensorError* e = find_error(r, l, "wq");
    ASSERT_NE(e, nullptr);
    EXPECT_NEAR(e->signal, signal, 1e-9 * signal);
    EXPECT_NEAR(e->noise, noise, 1e-9 * noise);
    EXPECT_EQ(e->count, 64u * 64u);
    EXPECT_NEAR(e->sqnr_db(), 10 * std::log10(signal / noise), 1e-9);
    // bf16 keeps 8 significant bits: SQNR near 6.02 * 9 - 1.25 dB = 53 dB for smooth data.
    EXPECT_GT(e->sqnr_db(), 45.0);
    const TensorError* x = find_error(r, l, "x.wo");
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(x->count, 20u * 64u);
    EXPECT_GT(x->sqnr_db(), 45.0);
  }
  EXPECT_EQ(r.tensor_errors.size(), 4u);  // nothing else was quantized
}

TEST(EvalPoints, EveryBuiltinRunsAndRecordsItsPoints) {
  const LlamaModel m = small_model(19);
  const auto tokens = random_tokens(48, m.config.vocab_size, 20);
  const EvalRun ref = run(m, tokens, find_recipe("fp32"));
  for (const Recipe& r : builtin_recipes()) {
    const EvalRun q = run(m, tokens, r);
    EXPECT_EQ(q.nonfinite, 0u) << r.name;
    const Comparison c = compare(ref, q);
    // act.ggml leaves float32 weights' products alone, as llama.cpp's F32 matmul does.
    if (r.is_identity() || r.act_ggml) {
      EXPECT_EQ(c.kld_mean, 0.0) << r.name;
      continue;
    }
    EXPECT_GT(c.kld_mean, 0.0) << r.name;
    const auto has = [&](const std::string& p) { return find_error(q, 1, p) != nullptr; };
    if (!r.linear.empty() || r.weights[0]) {
      for (const char* p : {"wq", "wk", "wv", "wo", "gate", "up", "down", "x.wq", "x.wk", "x.wv", "x.wo", "x.gate",
                            "x.up", "x.down"})
        EXPECT_TRUE(has(p)) << r.name << " " << p;
    }
    if (r.kv) {
      EXPECT_TRUE(has("kv.k") && has("kv.v")) << r.name;
    }
    if (r.p) {
      EXPECT_TRUE(has("q") && has("k") && has("v") && has("p")) << r.name;
    }
  }
}

// kv.group = head is a block of head_dim channels (8 in the small model) per token.
TEST(EvalPoints, KvPerHeadGroupIsABlockOfHeadDim) {
  const LlamaModel m = small_model(33);
  const auto tokens = random_tokens(24, m.config.vocab_size, 34);
  const EvalRun head = run(m, tokens, parse_recipe("name = h\nkv = int4:int\nkv.group = head\n"));
  const EvalRun b8 = run(m, tokens, parse_recipe("name = b\nkv = int4:b8:int\n"));
  const EvalRun whole = run(m, tokens, parse_recipe("name = t\nkv = int4:int\n"));
  EXPECT_EQ(head.logits, b8.logits);
  EXPECT_NE(head.logits, whole.logits);
}

TEST(EvalPoints, SwitchBackMatchesEmulatedInt8) {
  const LlamaModel m = small_model(21);
  const auto tokens = random_tokens(32, m.config.vocab_size, 22);
  const EvalRun real = run(m, tokens, find_recipe("switchback-int8"));
  const EvalRun emulated = run(m, tokens, parse_recipe("name = e\nweights = int8_sym:tensor:int\nact = int8_sym:row:int\n"));
  const EvalRun ref = run(m, tokens, find_recipe("fp32"));
  EXPECT_LE(max_abs_diff(real.logits, emulated.logits), 1e-4f);
  EXPECT_GE(max_abs_diff(real.logits, ref.logits), 1e-3f);
}

TEST(EvalPoints, OrderingOnTheSmallModel) {
  const LlamaModel m = small_model(23);
  const auto tokens = random_tokens(48, m.config.vocab_size, 24);
  const EvalRun ref = run(m, tokens, find_recipe("fp32"));
  const auto kld = [&](const char* name) { return compare(ref, run(m, tokens, find_recipe(name))).kld_mean; };
  EXPECT_LT(kld("bf16"), kld("fp8-rowwise"));
  EXPECT_LT(kld("fp8-rowwise"), kld("mxfp4"));
  EXPECT_LT(kld("fp16"), kld("bf16"));
}

TEST(EvalPoints, BlockLargerThanADimensionIsOneClearError) {
  const LlamaModel m = small_model(25);
  const auto tokens = random_tokens(16, m.config.vocab_size, 26);
  EXPECT_EQ(error_of([&] { run(m, tokens, parse_recipe("name = blk\nweights.wq = e4m3:b128\n")); }),
            "recipe 'blk': wq of layer 0 (64x64): tensor 64x64: 64 columns are not a multiple of the block size 128 "
            "(float8_e4m3fn:b128:amax:nearest:sat; ask for padding with :pad)");
  EXPECT_EQ(error_of([&] { run(m, tokens, parse_recipe("name = blk\nact.down = e4m3:b128\n")); }),
            "recipe 'blk': x.down of layer 0 (16x96): tensor 16x96: 96 columns are not a multiple of the block size 128 "
            "(float8_e4m3fn:b128:amax:nearest:sat; ask for padding with :pad)");
  const EvalRun padded = run(m, tokens, parse_recipe("name = blk\nweights.wq = e4m3:b128:pad\nact.down = e4m3:b128:pad\n"));
  EXPECT_EQ(padded.nonfinite, 0u);

  // A linear preset's blocks on a hidden size they do not divide (80 = 2.5 x 32): the recipe's
  // `pad = on` pads the preset's specs too.
  auto c = gqa_config();
  c.hidden_dim = 80;
  const LlamaModel odd = make_model(c, 31);
  EXPECT_EQ(error_of([&] { run(odd, tokens, parse_recipe("name = mx\nlinear = mxfp4\n")); }),
            "recipe 'mx': down of layer 0 (64x80): tensor 64x80: 80 columns are not a multiple of the block size 32 "
            "(float4_e2m1fn:b32:mx:nearest:sat; ask for padding with :pad)");
  const EvalRun ref = run(odd, tokens, find_recipe("fp32"));
  const EvalRun mx = run(odd, tokens, find_recipe("mxfp4"));
  EXPECT_EQ(mx.nonfinite, 0u);
  EXPECT_GT(compare(ref, mx).kld_mean, 0.0);
}

TEST(EvalPoints, NanFromAnAggressiveRecipeIsReportedNotFatal) {
  LlamaModel m = small_model(27);
  for (auto& L : m.layers)  // the down_proj input (silu(gate) * up) then reaches ~1e4: beyond E4M3's 448
    for (auto* w : {&L.w_gate, &L.w_up})
      for (float& x : *w) x *= 100.0f;
  const auto tokens = random_tokens(16, m.config.vocab_size, 28);
  const EvalRun r = run(m, tokens, parse_recipe("name = hot\nact = e4m3:tensor:none:nosat\n"));
  EXPECT_GT(r.nonfinite, 0u);
  std::size_t bad = 0;
  for (const auto& e : r.tensor_errors) bad += e.nonfinite;
  EXPECT_GT(bad, 0u);
  EXPECT_EQ(r.scored(), 15u);
}

TEST(EvalPoints, BadInputIsOneLine) {
  const LlamaModel m = small_model(29);
  const Recipe fp32 = find_recipe("fp32");
  EXPECT_EQ(error_of([&] { evaluate(m, std::vector<int>{1, 40, 2}, fp32); }),
            "evaluate: token 1 is id 40, outside the model's vocabulary [0, 40)");
  EXPECT_EQ(error_of([&] { evaluate(m, std::vector<int>{-1}, fp32); }),
            "evaluate: token 0 is id -1, outside the model's vocabulary [0, 40)");
  EXPECT_EQ(error_of([&] { evaluate(m, std::vector<int>{}, fp32); }), "evaluate: the token list is empty");
  EvalOptions opt;
  opt.ctx = -1;
  EXPECT_EQ(error_of([&] { evaluate(m, std::vector<int>{1, 2}, fp32, opt); }), "evaluate: context -1 is negative");
  EXPECT_EQ(error_of([&] { find_recipe("fp9"); }).find("unknown recipe 'fp9'"), 0u);
}

// A window longer than the metadata's seq_len runs: RoPE goes on past it, giving what a model
// declaring the longer context gives, and the token-by-token reference agrees.
TEST(EvalPoints, ContextBeyondSeqLen) {
  const LlamaModel m = small_model(31);  // seq_len 48
  LlamaModel longer = m;
  longer.config.seq_len = 80;
  const auto tokens = random_tokens(70, m.config.vocab_size, 8);
  EvalOptions opt;
  opt.ctx = 64;
  opt.keep_logits = true;
  const EvalRun a = evaluate(m, tokens, find_recipe("fp32"), opt);
  const EvalRun b = evaluate(longer, tokens, find_recipe("fp32"), opt);
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_EQ(a.scored(), 31u + 2u);  // windows [0, 64) and [64, 70): rows 32..62 and 3..4
  std::vector<int> first(tokens.begin(), tokens.begin() + 64);
  const auto ref = ReferenceLlama(longer).run(first);
  EXPECT_LE(max_abs_diff(std::vector<float>(a.logits.begin(), a.logits.begin() + static_cast<long>(ref.size())), ref), 1e-5f);
  opt.ctx = 1000;  // windows never exceed the tokens
  EXPECT_EQ(evaluate(m, tokens, find_recipe("fp32"), opt).scored(), 70u - 1u - 35u);
}

}  // namespace
