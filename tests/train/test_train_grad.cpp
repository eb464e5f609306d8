// The training model's gradients against central finite differences of an independent
// double-precision Llama (llama_reference.hpp), on llama2.c's architecture and on one with what
// real checkpoints add (head_dim other than dim/heads, attention biases, scaled RoPE); and its
// forward of a shared checkpoint against the float64 reference logits.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "accuracy/llama_test_util.hpp"
#include "lowp/accuracy/eval.hpp"
#include "lowp/accuracy/loaders.hpp"
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

LlamaConfig tiny_grad_config() {
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

// tiny_grad_config() with head_dim 6 (q_dim 12 != dim 8), q/k/v/o biases, and RoPE with a linear
// scale and per-pair frequency factors.
LlamaModel real_architecture_model(std::uint32_t seed) {
  LlamaConfig c = tiny_grad_config();
  c.head_size = 6;
  c.rope_theta = 500.0f;
  c.rope_freq_scale = 0.5f;
  c.rope_freq_factors = {1.0f, 2.0f, 8.0f};
  LlamaModel m = lowp::test::make_model(c, seed, false);
  std::mt19937 gen(seed + 100);
  std::normal_distribution<float> nd(0.0f, 0.3f);
  const auto fill = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = nd(gen);
    return v;
  };
  const std::size_t dim = c.dim, qd = c.q_dim(), kv = c.kv_dim();
  for (auto& l : m.layers) {
    l.wq = fill(qd * dim);
    l.wo = fill(dim * qd);
    l.bq = fill(qd);
    l.bk = fill(kv);
    l.bv = fill(kv);
    l.bo = fill(dim);
  }
  return m;
}

// Every parameter element: |g - g_fd| <= 2e-5 max|g_fd of its tensor| + 1e-7, with g_fd the
// central difference (step 1e-5) of the double reference. The float32 backward's own rounding
// error is about 1e-6 relative; the bound leaves room for accumulation over the window.
void grad_check(const LlamaModel& m, bool biases = false) {
  const LlamaConfig& c = m.config;
  const std::size_t B = 2, T = 6;
  const std::vector<int> tok = lowp::test::random_tokens(B * T, c.vocab_size, 5);
  const std::vector<int> tgt = lowp::test::random_tokens(B * T, c.vocab_size, 6);
  TrainLlama net(m, lowp::quant::linear_preset("fp32"));
  const double loss = net.forward(tok, tgt, B, T, 1, 0);
  net.backward(1, 0);
  std::vector<V> p = flatten(m);
  EXPECT_NEAR(loss, reference_loss(c, p, tok, tgt, B, T, biases), 1e-5);
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
      const double up = reference_loss(c, p, tok, tgt, B, T, biases);
      p[i][j] = keep - h;
      const double down = reference_loss(c, p, tok, tgt, B, T, biases);
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

TEST(TrainGrad, EveryParameterMatchesFiniteDifferencesTied) { grad_check(lowp::test::make_model(tiny_grad_config(), 11, true)); }
TEST(TrainGrad, EveryParameterMatchesFiniteDifferencesUntied) { grad_check(lowp::test::make_model(tiny_grad_config(), 12, false)); }
TEST(TrainGrad, HeadDimBiasesAndScaledRopeMatchFiniteDifferences) { grad_check(real_architecture_model(13), true); }

// The training forward (fp32) of the shared stories260K (GQA: 8 heads, 4 KV heads) against the
// float64 reference logits, with the evaluator's oracle bound (the logits reach ~15; float32
// summation orders differ by up to ~1.5e-4 there, ../shared/README.md).
TEST(TrainForward, SharedModelMatchesFloat64Reference) {
  LOWP_REQUIRE_SHARED();
  const LlamaModel m = lowp::accuracy::load_llama2c(lowp::test::shared_path("models/stories260K.bin"));
  const auto tokens = lowp::test::read_ids(lowp::test::shared_path("data/stories260K_ref/seqA_tokens.txt"));
  const auto ref = lowp::test::read_binary<double>(lowp::test::shared_path("data/stories260K_ref/seqA_logits_f64le.bin"));
  ASSERT_EQ(ref.size(), tokens.size() * static_cast<std::size_t>(m.config.vocab_size));
  TrainLlama net(m, lowp::quant::linear_preset("fp32"));
  net.forward(tokens, {}, 1, tokens.size(), 2, 0);
  ASSERT_EQ(net.logits().size(), ref.size());
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(net.logits()[i] - ref[i]));
  EXPECT_LE(worst, 2e-4);
}

}  // namespace
