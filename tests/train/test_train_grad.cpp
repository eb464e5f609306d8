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

namespace {

using lowp::accuracy::LlamaConfig;
using lowp::accuracy::LlamaModel;
using lowp::accuracy::train::TrainLlama;
using V = std::vector<double>;

// The parameters in TrainLlama::params() order, in double.
std::vector<V> flatten(const LlamaModel& m) {
  std::vector<V> p;
  const auto add = [&](const std::vector<float>& v) { p.emplace_back(v.begin(), v.end()); };
  add(m.token_embedding);
  for (const auto& l : m.layers) {
    for (const auto* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate, &l.w_down, &l.w_up}) add(*t);
  }
  add(m.final_norm);
  if (!m.classifier.empty()) add(m.classifier);
  return p;
}

// y (n) = W (n x k) x (k)
V matvec(const V& W, const V& x, std::size_t n, std::size_t k) {
  V y(n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < k; ++j) y[i] += W[i * k + j] * x[j];
  return y;
}

V rmsnorm(const V& x, const V& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  V y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = w[i] * x[i] * r;
  return y;
}

// Mean cross-entropy of B sequences of T tokens, position by position, everything in double.
double reference_loss(const LlamaConfig& c, const std::vector<V>& p, const std::vector<int>& tok,
                      const std::vector<int>& tgt, std::size_t B, std::size_t T) {
  const std::size_t dim = c.dim, hd = c.head_dim(), kv = c.kv_dim(), hid = c.hidden_dim, L = c.n_layers,
                    H = c.n_heads, group = H / c.n_kv_heads, vocab = c.vocab_size;
  const V& E = p[0];
  const V& out_norm = p[1 + 9 * L];
  const V& Wcls = p.size() > 2 + 9 * L ? p[2 + 9 * L] : E;
  double total = 0;
  for (std::size_t b = 0; b < B; ++b) {
    std::vector<V> x(T);
    for (std::size_t t = 0; t < T; ++t) x[t] = V(E.begin() + tok[b * T + t] * dim, E.begin() + (tok[b * T + t] + 1) * dim);
    for (std::size_t l = 0; l < L; ++l) {
      const V* w = &p[1 + 9 * l];  // attn_norm wq wk wv wo ffn_norm gate down up
      std::vector<V> q(T), k(T), v(T);
      for (std::size_t t = 0; t < T; ++t) {
        const V xn = rmsnorm(x[t], w[0], c.norm_eps);
        q[t] = matvec(w[1], xn, dim, dim);
        k[t] = matvec(w[2], xn, kv, dim);
        v[t] = matvec(w[3], xn, kv, dim);
        for (auto* vec : {&q[t], &k[t]})
          for (std::size_t i = 0; i < vec->size(); i += 2) {
            const std::size_t j = (i % hd) / 2;
            const double ang = static_cast<double>(t) * std::pow(static_cast<double>(c.rope_theta), -2.0 * j / hd);
            const double a = (*vec)[i], bb = (*vec)[i + 1];
            (*vec)[i] = a * std::cos(ang) - bb * std::sin(ang);
            (*vec)[i + 1] = a * std::sin(ang) + bb * std::cos(ang);
          }
      }
      for (std::size_t t = 0; t < T; ++t) {
        V att(dim, 0.0);
        for (std::size_t h = 0; h < H; ++h) {
          const std::size_t g = h / group;
          V s(t + 1);
          double mx = -INFINITY;
          for (std::size_t u = 0; u <= t; ++u) {
            double d = 0;
            for (std::size_t i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[u][g * hd + i];
            s[u] = d / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, s[u]);
          }
          double z = 0;
          for (double& e : s) z += e = std::exp(e - mx);
          for (std::size_t u = 0; u <= t; ++u)
            for (std::size_t i = 0; i < hd; ++i) att[h * hd + i] += s[u] / z * v[u][g * hd + i];
        }
        const V o = matvec(w[4], att, dim, dim);
        for (std::size_t i = 0; i < dim; ++i) x[t][i] += o[i];
      }
      for (std::size_t t = 0; t < T; ++t) {
        const V xn = rmsnorm(x[t], w[5], c.norm_eps);
        const V g = matvec(w[6], xn, hid, dim), u = matvec(w[8], xn, hid, dim);
        V hh(hid);
        for (std::size_t i = 0; i < hid; ++i) hh[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        const V d = matvec(w[7], hh, dim, hid);
        for (std::size_t i = 0; i < dim; ++i) x[t][i] += d[i];
      }
    }
    for (std::size_t t = 0; t < T; ++t) {
      const V logits = matvec(Wcls, rmsnorm(x[t], out_norm, c.norm_eps), vocab, dim);
      double mx = -INFINITY, z = 0;
      for (double l : logits) mx = std::max(mx, l);
      for (double l : logits) z += std::exp(l - mx);
      total += std::log(z) + mx - logits[static_cast<std::size_t>(tgt[b * T + t])];
    }
  }
  return total / static_cast<double>(B * T);
}

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
