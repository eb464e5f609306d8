// EvalOptions::bos: llama.cpp's perplexity puts BOS in place of each window's first token.
// The oracle is the same evaluation on a token list with those tokens replaced by hand.
#include <gtest/gtest.h>

#include "llama_test_util.hpp"
#include "lowp/accuracy/eval.hpp"
#include "support/test_support.hpp"

namespace {

using namespace lowp::accuracy;
using namespace lowp::test;

TEST(EvalBos, EachWindowStartsWithBos) {
  const LlamaModel m = make_model(gqa_config(), 21);
  const int ctx = 8, bos = 1;
  const auto tokens = random_tokens(29, m.config.vocab_size, 22);  // 4 windows, the last partial
  std::vector<int> replaced = tokens;
  for (std::size_t s = 0; s < replaced.size(); s += ctx) replaced[s] = bos;
  ASSERT_NE(replaced, tokens);
  for (const bool all : {false, true}) {
    EvalOptions opt;
    opt.ctx = ctx;
    opt.score_all = all;
    opt.keep_logits = true;
    const EvalRun want = evaluate(m, replaced, find_recipe("fp32"), opt);
    const EvalRun plain = evaluate(m, tokens, find_recipe("fp32"), opt);
    opt.bos = bos;
    const EvalRun got = evaluate(m, tokens, find_recipe("fp32"), opt);
    EXPECT_EQ(got.logits, want.logits);
    EXPECT_EQ(got.targets, want.targets);  // the targets are the text's own tokens
    EXPECT_EQ(got.nll_sum, want.nll_sum);
    EXPECT_NE(got.logits, plain.logits);
  }
  EvalOptions bad;
  bad.bos = m.config.vocab_size;
  expect_error([&] { evaluate(m, tokens, find_recipe("fp32"), bad); }, {"BOS id", "outside the model's vocabulary"});
}

}  // namespace
