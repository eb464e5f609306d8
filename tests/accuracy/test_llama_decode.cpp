// The decode step (lowp::accuracy::Decoder, a KV cache as llama2.c's run.c steps) against the
// evaluator: at every position t, the step's logits are bitwise row t of evaluate() over the
// prefix tokens[0..t]. The arithmetic is the same (gemm_f32 sums each output element the same
// way whatever the number of rows; a longer window's P V adds exact zeros), so no tolerance.
// Where a recipe's points act per token, that row is also row t of one window over all the
// tokens (`lowp eval` row t); where a scale spans tokens (fp8-attn's per-tensor Q, K, V) only
// the prefix evaluation is the reference.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "llama_test_util.hpp"
#include "lowp/accuracy/calibrate.hpp"
#include "lowp/accuracy/decoder.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "lowp/accuracy/memory.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/numerics/error.hpp"
#include "model/llama.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

std::vector<float> eval_logits(const LlamaModel& m, std::span<const int> tokens, const Recipe& r,
                               std::shared_ptr<const CalibrationText> calib = nullptr) {
  EvalOptions opt;
  opt.keep_logits = true;
  opt.score_all = true;
  opt.calib = std::move(calib);
  return evaluate(m, tokens, r, opt).logits;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int> random_tokens(std::size_t n, int vocab, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<int> t(n);
  for (int& x : t) x = static_cast<int>(gen() % static_cast<unsigned>(vocab));
  return t;
}

// Decodes `tokens` step by step under recipe `name` and checks every position against the
// evaluator; returns the decoded logits (positions x vocab).
// `calib`: the calibration text of a recipe with static scales.
std::vector<float> check_decode(const LlamaModel& m, const std::vector<int>& tokens, const Recipe& r,
                                bool window_too, const std::shared_ptr<const CalibrationText>& calib) {
  const std::string& name = r.name;
  const std::size_t vocab = static_cast<std::size_t>(m.config.vocab_size), n = tokens.size();
  Decoder d(m, r, n, 1, calib.get());
  std::vector<float> all;
  const std::vector<float> window = window_too ? eval_logits(m, tokens, r, calib) : std::vector<float>{};
  for (std::size_t t = 0; t < n; ++t) {
    const std::span<const float> got = d.step(tokens[t]);
    EXPECT_EQ(d.position(), t + 1);
    const std::vector<float> prefix = eval_logits(m, std::span(tokens).first(t + 1), r, calib);
    EXPECT_TRUE(same_bits(got, std::span(prefix).subspan(t * vocab, vocab)))
        << name << ": position " << t << " differs from evaluate() of the prefix";
    if (window_too) {
      EXPECT_TRUE(same_bits(got, std::span(window).subspan(t * vocab, vocab)))
          << name << ": position " << t << " differs from row " << t << " of the whole window";
    }
    all.insert(all.end(), got.begin(), got.end());
  }
  return all;
}

std::vector<float> check_decode(const LlamaModel& m, const std::vector<int>& tokens, const std::string& name,
                                bool window_too) {
  return check_decode(m, tokens, find_recipe(name), window_too, nullptr);
}

TEST(Decode, EveryPositionIsTheEvaluatorsLogitsOfThePrefix) {
  const LlamaModel m = make_model(gqa_config(), 11);  // GQA: 8 heads on 4 KV heads
  const std::vector<int> tokens = random_tokens(20, m.config.vocab_size, 5);
  const std::vector<float> fp32 = check_decode(m, tokens, "fp32", true);
  // The mutant in mind: a cache that drops the quantization gives fp32's K and V. Each of
  // these recipes changes the logits, so such a cache fails the comparison above.
  for (const char* name : {"kv4", "quarot-w4a4kv4", "mxfp4", "kv4-hadamard", "switchback-int8"}) {
    const std::vector<float> q = check_decode(m, tokens, name, true);
    EXPECT_FALSE(same_bits(q, fp32)) << name << " leaves the logits unchanged: the test could not see it";
  }
  for (const char* name : {"kv4", "quarot-w4a4kv4", "mxfp4", "switchback-int8"})
    EXPECT_TRUE(Decoder(m, find_recipe(name), 4).cached()) << name;
}

// Recipes with 4-bit weights (MXFP4, NVFP4, QuaRot's int4 per channel) keep every layer
// linear's weight packed too, and the decode step reads that (the comparisons above then show
// its bits are the float weights'). With AVX2 or AVX-512 it reads them from an interleaved copy of the
// packed rows. The mutants in mind: weights that silently stay unpacked, or uninterleaved,
// which the tests above cannot see.
TEST(Decode, FourBitWeightsArePackedForTheStep) {
  const LlamaModel m = make_model(gqa_config(), 12);
  for (const char* name : {"mxfp4", "mxfp4-rceil", "nvfp4", "quarot-w4a4kv4", "quarot-nvfp4", "fp32", "mxfp8"}) {
    const bool four = !std::string(name).ends_with("32") && !std::string(name).ends_with("8");
    const detail::PreparedModel pm = detail::prepare(m, find_recipe(name), 8, nullptr, /*pack=*/true);
    for (const auto& layer : pm.layers)
      for (const auto* group : {&layer.qkv, &layer.wo, &layer.gate_up, &layer.down})
        for (const auto& L : *group) {
          EXPECT_EQ(L.packed.has_value(), four) << name;
          if (L.packed) {
            EXPECT_EQ(L.packed->matrix().rows, L.n) << name;
            EXPECT_LE(L.packed->bytes() * 5, L.n * L.k * sizeof(float)) << name;  // codes + a float per 16 or more
            EXPECT_EQ(L.interleaved != nullptr, lowp::best_isa() != lowp::Isa::scalar) << name;
          }
        }
  }
  // Evaluation (no pack) keeps the float copies only.
  for (const auto& layer : detail::prepare(m, find_recipe("mxfp4"), 8).layers)
    for (const auto& L : layer.qkv) EXPECT_FALSE(L.packed.has_value());
  // What a step reads, counted from the config: each layer's q, k, v, o, gate, up, down (n x k)
  // as float32 (fp32) or as two codes a byte plus a float per 32 (mxfp4); the classifier stays
  // float32 in both.
  const LlamaConfig& c = m.config;
  const double dim = c.dim, kv = c.kv_dim(), hidden = c.hidden_dim, vocab = c.vocab_size;
  const std::pair<double, double> shapes[] = {{dim, dim}, {kv, dim}, {kv, dim}, {dim, dim},
                                              {hidden, dim}, {hidden, dim}, {dim, hidden}};
  double f32 = 0, mx = 0;
  for (const auto& [n, k] : shapes) f32 += 4 * n * k, mx += n * (k / 2 + 4 * k / 32);
  EXPECT_EQ(Decoder(m, find_recipe("fp32"), 4).step_weight_bytes(), c.n_layers * f32 + 4 * vocab * dim);
  EXPECT_EQ(Decoder(m, find_recipe("mxfp4"), 4).step_weight_bytes(), c.n_layers * mx + 4 * vocab * dim);
}

// A decoder's float32 weights (every linear of the fp32 recipe here, the classifier too) are
// re-laid interleaved (InterleavedRows) when the copies fit the memory budget, and read in
// place otherwise; the comparisons above run on the interleaved ones. The mutants in mind: a
// decoder that never interleaves (which those comparisons cannot see), and one that ignores
// --max-memory.
TEST(Decode, FloatWeightsAreInterleavedWithinTheMemoryBudget) {
  const LlamaModel m = make_model(gqa_config(), 13);
  const auto count = [&](bool pack) {
    std::size_t interleaved = 0, linears = 0;
    const detail::PreparedModel pm = detail::prepare(m, find_recipe("fp32"), 8, nullptr, pack);
    for (const auto& layer : pm.layers)
      for (const auto* group : {&layer.qkv, &layer.wo, &layer.gate_up, &layer.down})
        for (const auto& L : *group) {
          ++linears;
          if (L.interleaved) {
            ++interleaved;
            EXPECT_EQ(L.weight.data, L.interleaved->matrix().data);
          }
        }
    for (const auto& L : pm.classifier) interleaved += L.interleaved ? 1 : 0, ++linears;
    return std::pair{interleaved, linears};
  };
  const auto [all, linears] = count(true);
  EXPECT_EQ(all, linears);
  EXPECT_EQ(count(false).first, 0u);  // evaluation reads the model's rows
  // A budget the decoder's own weights and cache fit, but not a second float32 copy of them.
  struct Budget {
    std::uint64_t saved = max_memory();
    ~Budget() { set_max_memory(saved); }
  } restore;
  set_max_memory(static_cast<std::uint64_t>(weight_bytes(m.config) * 1.5));
  EXPECT_EQ(count(true).first, 0u);
  const std::vector<int> tokens = random_tokens(6, m.config.vocab_size, 6);
  check_decode(m, tokens, "fp32", true);  // in place: the same bits
}

// Per-tensor scales (fp8-attn's Q, K, V; fp8-tensorwise's linear inputs; NVFP4's tensor level)
// span the tokens: row t of one window over all tokens differs from evaluation of the prefix
// (the amax covers later tokens), and evaluation of a longer prefix changes the earlier
// tokens' K and V in every layer after the first. The decoder re-runs the prefix there, and
// still gives evaluation's logits of the prefix.
TEST(Decode, TokenSpanningScalesReRunThePrefix) {
  const LlamaModel m = make_model(gqa_config(), 13);
  const std::vector<int> tokens = random_tokens(10, m.config.vocab_size, 7);
  const std::vector<float> fp32 = check_decode(m, tokens, "fp32", false);
  for (const char* name : {"fp8-attn", "fp8-attn-fa3", "fp8-tensorwise", "nvfp4"}) {
    EXPECT_FALSE(Decoder(m, find_recipe(name), 4).cached()) << name;
    const std::vector<float> decoded = check_decode(m, tokens, name, false);
    EXPECT_FALSE(same_bits(decoded, fp32)) << name;
    EXPECT_FALSE(same_bits(decoded, eval_logits(m, tokens, find_recipe(name)))) << name << ": the window's rows";
  }
}

// Static scales (act.scale / attn.scale = static) fix the per-tensor scales from calibration
// text: the same recipes then decode with the cache, each position bitwise evaluation's logits
// of the prefix and row t of one window over all the tokens (every point acts per token), with
// the scales calibrated on other text. The mutant in mind: a decoder that scales the current
// token by its own amax (as the dynamic recipe would) gives other logits from position 1 on.
TEST(Decode, StaticScalesDecodeWithTheCache) {
  const LlamaModel m = make_model(gqa_config(), 16);
  const std::vector<int> tokens = random_tokens(8, m.config.vocab_size, 9);
  auto calib = std::make_shared<CalibrationText>();
  calib->tokens = random_tokens(32, m.config.vocab_size, 10);
  calib->ctx = 16;
  const std::vector<float> fp32 = check_decode(m, tokens, "fp32", false);
  for (const char* name : {"fp8-tensorwise", "nvfp4", "fp8-attn", "fp8-tensorwise@p99.9"}) {
    const std::string base(name);
    Recipe r = find_recipe(base.substr(0, base.find('@')));
    r.name = base + "-static";
    (r.linear.empty() ? r.attn_scale : r.act_scale) = {true, base.ends_with("p99.9") ? 999000u : 1000000u};
    EXPECT_TRUE(Decoder(m, r, 4, 1, calib.get()).cached()) << r.name;
    const std::vector<float> decoded = check_decode(m, tokens, r, true, calib);
    EXPECT_FALSE(same_bits(decoded, fp32)) << r.name;
  }
}

// Every built-in recipe, cached or re-run: each position is evaluation's logits of the prefix.
TEST(Decode, EveryBuiltinRecipeMatchesTheEvaluator) {
  const LlamaModel m = make_model(gqa_config(), 15);
  const std::vector<int> tokens = random_tokens(6, m.config.vocab_size, 8);
  for (const Recipe& r : builtin_recipes()) check_decode(m, tokens, r.name, false);
}

TEST(Decode, SharedStories260KGreedyMatchesEvaluator) {
  LOWP_REQUIRE_SHARED();
  const LlamaModel m = load_model(shared_path("models/stories260K.bin"));
  std::vector<int> tokens = read_ids(shared_path("data/stories260K_ref/seqA_tokens.txt"));
  tokens.resize(24);
  check_decode(m, tokens, "fp32", true);
  check_decode(m, tokens, "kv4", true);
}

TEST(Decode, BadInputIsOneLine) {
  const LlamaModel m = make_model(gqa_config(), 14);
  Decoder d(m, find_recipe("fp32"), 2);
  EXPECT_THROW(d.step(40), lowp::Error);
  EXPECT_THROW(d.step(-1), lowp::Error);
  d.feed(1);
  d.step(2);
  try {
    d.step(3);
    ADD_FAILURE() << "a third token in a decoder of 2 positions";
  } catch (const lowp::Error& e) {
    EXPECT_STREQ(e.what(), "decode: position 2 is past the 2 the decoder was made for");
  }
  // The cache, 2 layers x 48 positions x 4 KV heads x head_dim 8 x (K, V) x 4 bytes, and a tiny budget.
  EXPECT_EQ(Decoder::cache_bytes(m.config, 48), 2.0 * 48 * 32 * 2 * 4);
  set_max_memory(1024);
  try {
    Decoder big(m, find_recipe("fp32"), 48);
    ADD_FAILURE() << "no refusal";
  } catch (const lowp::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos);
    EXPECT_NE(msg.find("KV cache of 48 positions x 2 layers x 4 KV heads x head_dim 8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--max-memory"), std::string::npos) << msg;
  }
  set_max_memory(0);
}

// act.ggml (llama.cpp's quantized activations and integer dots, GgmlIntDots.*): a decode step
// at two threads gives the bits of the evaluator's window over the prefix and of row t of the
// whole window, on every block type of model A with a product (Q2_K and Q3_K among them) and
// F16. The mutant in mind: a step that sends its one-row products through the float GEMV (as it
// does each group of plain linears), whose float products differ from the integer ones.
TEST(Decode, GgmlActivationsStepAsTheEvaluator) {
  const std::string dir = shared_path("gguf");
  const Recipe r = parse_recipe("name = ggml\nact.ggml = on\n");
  for (const std::string t : {"Q4_K_M", "Q5_K_M", "Q8_0", "Q4_0", "Q5_0", "Q4_1", "Q5_1", "Q2_K", "Q3_K_M", "IQ4_NL", "IQ4_XS", "F16"}) {
    const std::string path = dir + "/modelA-" + t + ".gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " (../shared/gguf) is absent";
    const LlamaModel m = load_gguf(path, WeightStorage::mapped);
    const std::size_t n = 8, vocab = static_cast<std::size_t>(m.config.vocab_size);
    const auto tokens = random_tokens(n, m.config.vocab_size, 9);
    const std::vector<float> window = eval_logits(m, tokens, r), fp32 = eval_logits(m, tokens, find_recipe("fp32"));
    EXPECT_FALSE(same_bits(window, fp32)) << t << ": act.ggml leaves the logits unchanged";
    Decoder d(m, r, n, 2);
    EXPECT_TRUE(d.cached()) << t;
    for (std::size_t p = 0; p < n; ++p) {
      const std::span<const float> got = d.step(tokens[p]);
      const std::vector<float> prefix = eval_logits(m, std::span(tokens).first(p + 1), r);
      EXPECT_TRUE(same_bits(got, std::span(prefix).subspan(p * vocab, vocab))) << t << ": position " << p;
      EXPECT_TRUE(same_bits(got, std::span(window).subspan(p * vocab, vocab))) << t << ": position " << p << " (window)";
    }
  }
}

// `lowp generate` reads a GGUF's weights mapped in their stored type, each decode step's
// one-row products widening them (Q4_0, Q4_K, Q5_K, Q6_K, Q8_0 blocks through the lanes
// decoders, bf16) as it goes: its logits are bitwise the evaluator's on the float32 copy that
// load_gguf widens at load (ggml's own values, GgmlDequant.BitExactAgainstGgml), at two threads
// (the GEMV splits the rows of the larger weights between them). The bf16 weights, and with
// AVX2 or AVX-512 the block-coded ones, are read from interleaved copies (InterleavedRows; the
// lane dots' interleaved forms): every one of those linears is, so the comparison covers them
// (the mutant in mind: a decoder that never interleaves them, which the logits cannot see).
TEST(Decode, MappedGgufWeightsGiveTheWidenedEvaluatorsLogits) {
  const std::string dir = shared_path("gguf");
  for (const std::string t : {"Q4_K_M", "Q5_K_M", "Q4_0", "Q6_K", "Q8_0", "BF16"}) {
    const std::string path = dir + "/modelA-" + t + ".gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " (../shared/gguf) is absent";
    const LlamaModel mapped = load_gguf(path, WeightStorage::mapped), widened = load_gguf(path);
    ASSERT_TRUE(mapped.mapped);
    const std::size_t n = 10, vocab = static_cast<std::size_t>(widened.config.vocab_size);
    const auto tokens = random_tokens(n, widened.config.vocab_size, 5);
    const Recipe r = find_recipe("fp32");
    {
      const auto count = [&] {
        const detail::PreparedModel pm = detail::prepare(mapped, r, n, nullptr, true);
        std::size_t interleaved = 0, linears = 0;
        for (const auto& layer : pm.layers)
          for (const auto* group : {&layer.qkv, &layer.wo, &layer.gate_up, &layer.down})
            for (const auto& L : *group) ++linears, interleaved += L.interleaved ? 1 : 0;
        return std::pair{interleaved, linears};
      };
      const auto [interleaved, linears] = count();
      EXPECT_EQ(interleaved, t == "BF16" || lowp::best_isa() != lowp::Isa::scalar ? linears : 0) << t;
      // The copies take the stored bytes, at most half the float32 model's: a budget of that
      // half holds them (the mutant in mind: copies counted at their float32 size).
      struct Budget {
        std::uint64_t saved = max_memory();
        ~Budget() { set_max_memory(saved); }
      } restore;
      set_max_memory(static_cast<std::uint64_t>(weight_bytes(mapped.config) / 2));
      EXPECT_EQ(count().first, interleaved) << t;
    }
    Decoder d(mapped, r, n, 2);
    for (std::size_t p = 0; p < n; ++p) {
      const std::span<const float> got = d.step(tokens[p]);
      const std::vector<float> want = eval_logits(widened, std::span(tokens).first(p + 1), r);
      EXPECT_TRUE(same_bits(got, std::span(want).subspan(p * vocab, vocab))) << t << ": position " << p;
    }
  }
}

}  // namespace
