// A token-by-token Llama forward pass written the way llama2.c's forward() is: one position at
// a time, a KV cache, plain float loops (matrix-vector products, no GEMM). It is the oracle the
// batched evaluator is tested against and the single-threaded baseline bench_eval measures.
//
// `hook(point, x, n)` (optional) lets a test round a tensor where the evaluator has a
// quantization point: "x.attn" (input of q/k/v), "q", "k" (after RoPE), "v", "p" (one head's
// probabilities), "x.wo", "x.ffn" (input of gate/up), "x.down", "x.classifier".
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <string_view>
#include <vector>

#include "lowp/accuracy/model.hpp"

namespace lowp::test {

class ReferenceLlama {
 public:
  using Hook = std::function<void(std::string_view point, float* x, std::size_t n)>;

  explicit ReferenceLlama(const accuracy::LlamaModel& m, Hook hook = {}) : m_(m), c_(m.config), hook_(std::move(hook)) {
    const std::size_t kv = static_cast<std::size_t>(c_.kv_dim()), seq = static_cast<std::size_t>(c_.seq_len);
    key_cache_.assign(static_cast<std::size_t>(c_.n_layers) * seq * kv, 0.0f);
    value_cache_.assign(key_cache_.size(), 0.0f);
  }

  // The logits after feeding `token` at position `pos` (positions must come in order from 0).
  std::vector<float> forward(int token, int pos) {
    const int dim = c_.dim, hidden = c_.hidden_dim, kv_dim = c_.kv_dim(), hs = c_.head_dim();
    const int kv_mul = c_.n_heads / c_.n_kv_heads;
    std::vector<float> x(m_.token_embedding.begin() + static_cast<long>(token) * dim,
                         m_.token_embedding.begin() + static_cast<long>(token + 1) * dim);
    std::vector<float> xb(dim), xb2(dim), q(dim), hb(hidden), hb2(hidden), att(pos + 1);
    for (int l = 0; l < c_.n_layers; ++l) {
      const accuracy::LayerWeights& w = m_.layers[l];
      rmsnorm(xb.data(), x.data(), w.attn_norm.data(), dim);
      point("x.attn", xb.data(), dim);
      float* k = key_cache_.data() + (static_cast<std::size_t>(l) * c_.seq_len + pos) * kv_dim;
      float* v = value_cache_.data() + (static_cast<std::size_t>(l) * c_.seq_len + pos) * kv_dim;
      matmul(q.data(), xb.data(), w.wq.data(), dim, dim);
      matmul(k, xb.data(), w.wk.data(), dim, kv_dim);
      matmul(v, xb.data(), w.wv.data(), dim, kv_dim);
      for (int i = 0; i < dim; i += 2) {  // RoPE, interleaved pairs
        const int head_dim = i % hs;
        const float freq = 1.0f / std::pow(c_.rope_theta, static_cast<float>(head_dim) / static_cast<float>(hs));
        const float val = static_cast<float>(pos) * freq, fcr = std::cos(val), fci = std::sin(val);
        for (int which = 0; which < (i < kv_dim ? 2 : 1); ++which) {
          float* vec = which == 0 ? q.data() : k;
          const float v0 = vec[i], v1 = vec[i + 1];
          vec[i] = v0 * fcr - v1 * fci;
          vec[i + 1] = v0 * fci + v1 * fcr;
        }
      }
      point("q", q.data(), dim);
      point("k", k, kv_dim);
      point("v", v, kv_dim);
      for (int h = 0; h < c_.n_heads; ++h) {
        const float* qh = q.data() + h * hs;
        for (int t = 0; t <= pos; ++t) {
          const float* kt = key_cache_.data() + (static_cast<std::size_t>(l) * c_.seq_len + t) * kv_dim + (h / kv_mul) * hs;
          float score = 0.0f;
          for (int i = 0; i < hs; ++i) score += qh[i] * kt[i];
          att[t] = score / std::sqrt(static_cast<float>(hs));
        }
        softmax(att.data(), pos + 1);
        point("p", att.data(), static_cast<std::size_t>(pos + 1));
        float* out = xb.data() + h * hs;
        std::fill(out, out + hs, 0.0f);
        for (int t = 0; t <= pos; ++t) {
          const float* vt = value_cache_.data() + (static_cast<std::size_t>(l) * c_.seq_len + t) * kv_dim + (h / kv_mul) * hs;
          for (int i = 0; i < hs; ++i) out[i] += att[t] * vt[i];
        }
      }
      point("x.wo", xb.data(), dim);
      matmul(xb2.data(), xb.data(), w.wo.data(), dim, dim);
      for (int i = 0; i < dim; ++i) x[i] += xb2[i];
      rmsnorm(xb.data(), x.data(), w.ffn_norm.data(), dim);
      point("x.ffn", xb.data(), dim);
      matmul(hb.data(), xb.data(), w.w_gate.data(), dim, hidden);
      matmul(hb2.data(), xb.data(), w.w_up.data(), dim, hidden);
      for (int i = 0; i < hidden; ++i) hb[i] = hb[i] * (1.0f / (1.0f + std::exp(-hb[i]))) * hb2[i];
      point("x.down", hb.data(), hidden);
      matmul(xb.data(), hb.data(), w.w_down.data(), hidden, dim);
      for (int i = 0; i < dim; ++i) x[i] += xb[i];
    }
    rmsnorm(x.data(), x.data(), m_.final_norm.data(), dim);
    point("x.classifier", x.data(), dim);
    std::vector<float> logits(c_.vocab_size);
    matmul(logits.data(), x.data(), m_.output_weight().data(), dim, c_.vocab_size);
    return logits;
  }

  // Logits of every position of `tokens` (row-major T x vocab), from position 0.
  std::vector<float> run(const std::vector<int>& tokens) {
    std::vector<float> all;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      const auto row = forward(tokens[t], static_cast<int>(t));
      all.insert(all.end(), row.begin(), row.end());
    }
    return all;
  }

 private:
  void point(std::string_view name, float* x, std::size_t n) {
    if (hook_) hook_(name, x, n);
  }
  void rmsnorm(float* o, const float* x, const float* w, int n) const {
    float ss = 0.0f;
    for (int j = 0; j < n; ++j) ss += x[j] * x[j];
    ss = 1.0f / std::sqrt(ss / static_cast<float>(n) + c_.norm_eps);
    for (int j = 0; j < n; ++j) o[j] = w[j] * (ss * x[j]);
  }
  static void softmax(float* x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; ++i) mx = std::max(mx, x[i]);
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += x[i] = std::exp(x[i] - mx);
    for (int i = 0; i < n; ++i) x[i] /= sum;
  }
  // xout (d) = W (d x n) x (n)
  static void matmul(float* xout, const float* x, const float* w, int n, int d) {
    for (int i = 0; i < d; ++i) {
      float val = 0.0f;
      for (int j = 0; j < n; ++j) val += w[static_cast<std::size_t>(i) * n + j] * x[j];
      xout[i] = val;
    }
  }

  const accuracy::LlamaModel& m_;
  const accuracy::LlamaConfig& c_;
  Hook hook_;
  std::vector<float> key_cache_, value_cache_;
};

}  // namespace lowp::test
