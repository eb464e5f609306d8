// The training model's gradients against central finite differences of an independent
// double-precision Llama written here, and its forward against the evaluator's.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "accuracy/llama_test_util.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/recipe.hpp"
#include "lowp/quant/linear.hpp"
#include "train/llama_train.hpp"
#include "train/llama_reference.hpp"

namespace {

using lowp::accuracy::LlamaConfig;
using lowp::accuracy::LlamaModel;
using lowp::accuracy::train::TrainLlama;
using lowp::test::ref::V;
using lowp::test::ref::flatten;
using lowp::test::ref::reference_loss;

LlamaConfig tiny_config() {
  LlamaConfig c;
  c.dim = 8;
  c.hidden_dim = 12;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.vocab_size = 10;
  c.seq_len = 8;
  return c;
}

// Every parameter element: |g - g_fd| <= 2e-5 max|g_fd of its tensor| + 1e-7, with g_fd the
// central difference (step 1e-5) of the double reference. The float32 backward's own rounding
// error is about 1e-6 relative; the bound leaves room for accumulation over the window.
void grad_check(bool tied) {
  const LlamaConfig c = tiny_config();
  const LlamaModel m = lowp::test::make_model(c, tied ? 11 : 12, tied);
  const std::size_t B = 2, T = 6;
  const std::vector<int> tok = lowp::test::random_tokens(B * T, c.vocab_size, 5);
  const std::vector<int> tgt = lowp::test::random_tokens(B * T, c.vocab_size, 6);
  TrainLlama net(m, lowp::quant::linear_preset("fp32"));
  const double loss = net.forward(tok, tgt, B, T, 1, 0);
  net.backward(1, 0);
  std::vector<V> p = flatten(m);
  EXPECT_NEAR(loss, reference_loss(c, p, tok, tgt, B, T), 1e-5);
  const auto params = net.params();
  ASSERT_EQ(params.size(), p.size());
  double worst = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    ASSERT_EQ(params[i].size, p[i].size()) << params[i].name;
    V fd(p[i].size());
    double scale = 0;
    for (std::size_t j = 0; j < p[i].size(); ++j) {
      const double keep = p[i][j], h = 1e-5;
      p[i][j] = keep + h;
      const double up = reference_loss(c, p, tok, tgt, B, T);
      p[i][j] = keep - h;
      const double down = reference_loss(c, p, tok, tgt, B, T);
      p[i][j] = keep;
      fd[j] = (up - down) / (2 * h);
      scale = std::max(scale, std::abs(fd[j]));
    }
    ASSERT_GT(scale, 0.0) << params[i].name << " has no gradient at all";
    for (std::size_t j = 0; j < fd.size(); ++j) {
      const double err = std::abs(params[i].grad[j] - fd[j]);
      worst = std::max(worst, err / scale);
      ASSERT_LE(err, 2e-5 * scale + 1e-7) << params[i].name << "[" << j << "]: backward " << params[i].grad[j]
                                          << ", finite difference " << fd[j];
    }
  }
  std::printf("largest gradient error relative to its tensor's largest gradient: %.3g\n", worst);
}

TEST(TrainGrad, EveryParameterMatchesFiniteDifferencesTied) { grad_check(true); }
TEST(TrainGrad, EveryParameterMatchesFiniteDifferencesUntied) { grad_check(false); }

// The training forward under fp32 gives bitwise the logits of `lowp eval` (evaluate()).
TEST(TrainForward, Fp32LogitsEqualTheEvaluatorsBitwise) {
  for (bool tied : {true, false}) {
    const LlamaModel m = lowp::test::make_model(lowp::test::small_config(), 21, tied);
    const std::size_t T = 32;
    const std::vector<int> tok = lowp::test::random_tokens(T, m.config.vocab_size, 7);
    TrainLlama net(m, lowp::quant::linear_preset("fp32"));
    net.forward(tok, {}, 1, T, 2, 0);
    lowp::accuracy::EvalOptions opt;
    opt.keep_logits = true;
    opt.score_all = true;
    opt.ctx = static_cast<int>(T);
    const auto run = lowp::accuracy::evaluate(m, tok, lowp::accuracy::find_recipe("fp32"), opt);
    ASSERT_EQ(run.logits.size(), net.logits().size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < run.logits.size(); ++i) differ += run.logits[i] != net.logits()[i];
    EXPECT_EQ(differ, 0u) << "of " << run.logits.size() << " logits (tied " << tied << ")";
  }
}

}  // namespace
