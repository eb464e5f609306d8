// Sizes follow the work: RoPE tables by the evaluated window (a header's seq_len of 2^24 costs
// nothing), the memory budget refusing before allocation, and a non-finite float32 reference
// named by its first non-finite tensor. Oracles: the token-by-token reference forward, and
// byte counts and injected NaN positions known here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "llama_reference.hpp"
#include "llama_test_util.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/memory.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

struct Budget {  // sets the process-wide budget for one test
  explicit Budget(std::uint64_t bytes) { set_max_memory(bytes); }
  ~Budget() { set_max_memory(0); }
};

EvalRun run_fp32(const LlamaModel& m, const std::vector<int>& tokens) {
  EvalOptions opt;
  opt.keep_logits = true;
  opt.threads = 1;
  return evaluate(m, tokens, find_recipe("fp32"), opt);
}

TEST(EvalLimits, RopeTablesFollowTheWindowNotSeqLen) {
  const LlamaModel m = small_model(11);
  LlamaModel huge = m;
  huge.config.seq_len = max_seq_len;  // 2^24 positions: tables of 2^24 x head_dim/2 would be 1 GiB
  const auto tokens = random_tokens(20, m.config.vocab_size, 3);
  {
    Budget b(64u << 20);  // far below such tables: passes only if they are not built
    const EvalRun run = run_fp32(huge, tokens);
    EXPECT_LE(max_abs_diff(run.logits, ReferenceLlama(m).run(tokens)), 1e-5f);
  }
  LlamaConfig over = m.config;
  over.seq_len = max_seq_len + 1;
  expect_error([&] { validate(over, "m.gguf"); }, {"m.gguf: the context length (seq_len) 16777217 is above 2^24"});
}

TEST(EvalLimits, MemoryBudgetRefusesBeforeAllocating) {
  const LlamaModel m = small_model(12);
  const double w = weight_bytes(m.config);
  // Weights as the config implies them: 2 x vocab x dim (embedding, classifier), the layers, the final norm.
  const double dim = 64, hidden = 96, kv = 32, vocab = 40;
  EXPECT_EQ(w, 4 * (2 * vocab * dim + 2 * (2 * dim + 2 * dim * dim + 2 * dim * kv + 3 * dim * hidden) + dim));
  {
    Budget b(static_cast<std::uint64_t>(w) - 1);
    expect_error([&] { validate(m.config, "m.bin"); },
                 {"m.bin: dim 64, hidden_dim 96, n_layers 2, n_kv_heads 4 and vocab_size 40 (float32 weights) need",
                  "above the memory budget of", "(--max-memory)"});
  }
  {
    // 100000 tokens: their log-probabilities alone (100000 x 40 floats) are 15 MiB.
    Budget b(8u << 20);
    const std::vector<int> tokens(100000, 1);
    expect_error([&] { evaluate(m, tokens, find_recipe("fp32")); },
                 {"evaluate: 100000 tokens in windows of 48 over vocab_size 40", "above the memory budget of 8.0 MiB"});
  }
  EXPECT_EQ(max_memory(), default_max_memory());
  if (physical_memory()) {
    EXPECT_EQ(default_max_memory(), physical_memory() / 2);
  }
}

TEST(EvalLimits, ParseMemorySize) {
  EXPECT_EQ(parse_memory_size("4096"), 4096u);
  EXPECT_EQ(parse_memory_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_memory_size("1.5G"), 3ull << 29);
  EXPECT_EQ(parse_memory_size("2GiB"), 2ull << 30);
  EXPECT_EQ(parse_memory_size("1t"), 1ull << 40);
  EXPECT_EQ(parse_memory_size("64KB"), 64ull << 10);
  for (const char* bad : {"", "0", "-1", "1X", "M", "1.5.2G", "nan", "inf", "1e30T", "10 G"})
    expect_error([&] { parse_memory_size(bad); }, {"memory size", "K, M, G or T"});
  EXPECT_EQ(format_memory_size(1536.0 * (1 << 20)), "1.5 GiB");
  EXPECT_EQ(format_memory_size(100), "100 B");
}

TEST(EvalLimits, NonFiniteReferenceNamesTheFirstTensor) {
  const LlamaModel m = small_model(13);
  const auto tokens = random_tokens(8, m.config.vocab_size, 4);
  LlamaModel bad = m;
  bad.layers[1].wk[5] = std::numeric_limits<float>::quiet_NaN();  // a k row: the fused q|k|v output of layer 1
  expect_error([&] { run_fp32(bad, tokens); },
               {"the float32 reference is not finite: first NaN in the output of wk of layer 1 (window position 0)"});
  bad = m;
  bad.layers[0].w_down[3] = std::numeric_limits<float>::infinity();  // down_proj of layer 0
  expect_error([&] { run_fp32(bad, tokens); }, {"first ", " in the output of down of layer 0"});
  bad = m;
  const int t = tokens[3];
  const auto first = std::find(tokens.begin(), tokens.end(), t) - tokens.begin();
  bad.token_embedding[static_cast<std::size_t>(t) * 64 + 7] = std::numeric_limits<float>::infinity();
  expect_error([&] { run_fp32(bad, tokens); },
               {"first Inf in token_embedding rows (window position " + std::to_string(first) + ")"});
  // A quantized recipe going non-finite stays a reported result.
  bad = m;
  bad.layers[1].wk[5] = std::numeric_limits<float>::quiet_NaN();
  const EvalRun q = evaluate(bad, tokens, find_recipe("bf16"));
  EXPECT_EQ(q.nonfinite, q.scored());
}

}  // namespace
