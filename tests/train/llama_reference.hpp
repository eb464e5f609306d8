// An independent double-precision Llama (tests/train): the loss of B sequences computed
// position by position, the oracle the training models' gradients are checked against (by
// central finite differences). Parameters in TrainModel::params() order.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "lowp/accuracy/model.hpp"

namespace lowp::test::ref {

using accuracy::LlamaConfig;
using accuracy::LlamaModel;
using V = std::vector<double>;

// The parameters in TrainLlama::params() order, in double (the biases bq bk bv bo after wo
// when the model has them).
inline std::vector<V> flatten(const LlamaModel& m) {
  std::vector<V> p;
  const auto add = [&](const std::vector<float>& v) { p.emplace_back(v.begin(), v.end()); };
  add(m.token_embedding);
  for (const auto& l : m.layers) {
    for (const auto* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo}) add(*t);
    for (const auto* t : {&l.bq, &l.bk, &l.bv, &l.bo})
      if (!t->empty()) add(*t);
    for (const auto* t : {&l.ffn_norm, &l.w_gate, &l.w_down, &l.w_up}) add(*t);
  }
  add(m.final_norm);
  if (!m.classifier.empty()) add(m.classifier);
  return p;
}

// y (n) = W (n x k) x (k)
inline V matvec(const V& W, const V& x, std::size_t n, std::size_t k) {
  V y(n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < k; ++j) y[i] += W[i * k + j] * x[j];
  return y;
}

inline V rmsnorm(const V& x, const V& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  V y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = w[i] * x[i] * r;
  return y;
}

// Mean cross-entropy of B sequences of T tokens, position by position, everything in double.
// `biases`: every layer has bq bk bv bo (flatten's order). RoPE frequency of pair j:
// theta^(-2j/head_dim) * rope_freq_scale / rope_freq_factors[j].
inline double reference_loss(const LlamaConfig& c, const std::vector<V>& p, const std::vector<int>& tok,
                      const std::vector<int>& tgt, std::size_t B, std::size_t T, bool biases = false) {
  const std::size_t dim = c.dim, hd = c.head_dim(), qd = c.q_dim(), kv = c.kv_dim(), hid = c.hidden_dim,
                    L = c.n_layers, H = c.n_heads, group = H / c.n_kv_heads, vocab = c.vocab_size;
  const std::size_t per = biases ? 13 : 9;
  const V& E = p[0];
  const V& out_norm = p[1 + per * L];
  const V& Wcls = p.size() > 2 + per * L ? p[2 + per * L] : E;
  double total = 0;
  for (std::size_t b = 0; b < B; ++b) {
    std::vector<V> x(T);
    for (std::size_t t = 0; t < T; ++t) x[t] = V(E.begin() + tok[b * T + t] * dim, E.begin() + (tok[b * T + t] + 1) * dim);
    for (std::size_t l = 0; l < L; ++l) {
      const V* w = &p[1 + per * l];  // attn_norm wq wk wv wo [bq bk bv bo] ffn_norm gate down up
      const V* bias = biases ? w + 5 : nullptr;
      if (biases) w += 4;  // w[5..8] are then ffn_norm gate down up again
      const V* wa = &p[1 + per * l];
      std::vector<V> q(T), k(T), v(T);
      for (std::size_t t = 0; t < T; ++t) {
        const V xn = rmsnorm(x[t], wa[0], c.norm_eps);
        q[t] = matvec(wa[1], xn, qd, dim);
        k[t] = matvec(wa[2], xn, kv, dim);
        v[t] = matvec(wa[3], xn, kv, dim);
        if (bias) {
          for (std::size_t i = 0; i < qd; ++i) q[t][i] += bias[0][i];
          for (std::size_t i = 0; i < kv; ++i) k[t][i] += bias[1][i], v[t][i] += bias[2][i];
        }
        for (auto* vec : {&q[t], &k[t]})
          for (std::size_t i = 0; i < vec->size(); i += 2) {
            const std::size_t j = (i % hd) / 2;
            double freq = std::pow(static_cast<double>(c.rope_theta), -2.0 * j / hd) * c.rope_freq_scale;
            if (!c.rope_freq_factors.empty()) freq /= c.rope_freq_factors[j];
            const double ang = static_cast<double>(t) * freq;
            const double a = (*vec)[i], bb = (*vec)[i + 1];
            (*vec)[i] = a * std::cos(ang) - bb * std::sin(ang);
            (*vec)[i + 1] = a * std::sin(ang) + bb * std::cos(ang);
          }
      }
      for (std::size_t t = 0; t < T; ++t) {
        V att(qd, 0.0);
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
        const V o = matvec(wa[4], att, dim, qd);
        for (std::size_t i = 0; i < dim; ++i) x[t][i] += o[i] + (bias ? bias[3][i] : 0.0);
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

}  // namespace lowp::test::ref
