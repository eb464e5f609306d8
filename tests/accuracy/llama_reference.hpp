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
#include <string>
#include <string_view>
#include <vector>

#include "lowp/accuracy/model.hpp"

namespace lowp::test {

class ReferenceLlama {
 public:
  using Hook = std::function<void(std::string_view point, float* x, std::size_t n)>;

  // fa3_p: the "p" point sees FlashAttention-3's 2^8 exp(S - rowmax), not the normalized P.
  explicit ReferenceLlama(const accuracy::LlamaModel& m, Hook hook = {}, bool fa3_p = false)
      : m_(m), c_(m.config), hook_(std::move(hook)), fa3_p_(fa3_p) {
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
        float fa3_sum = 0.0f;
        if (fa3_p_) {  // FlashAttention-3: "p" sees 2^8 exp(S - max); the sum divides at the end
          const float mx = *std::max_element(att.begin(), att.begin() + pos + 1);
          for (int t = 0; t <= pos; ++t) fa3_sum += att[t] = std::exp(att[t] - mx);
          for (int t = 0; t <= pos; ++t) att[t] *= 256.0f;
        } else {
          softmax(att.data(), pos + 1);
        }
        point("p", att.data(), static_cast<std::size_t>(pos + 1));
        float* out = xb.data() + h * hs;
        std::fill(out, out + hs, 0.0f);
        for (int t = 0; t <= pos; ++t) {
          const float* vt = value_cache_.data() + (static_cast<std::size_t>(l) * c_.seq_len + t) * kv_dim + (h / kv_mul) * hs;
          for (int i = 0; i < hs; ++i) out[i] += att[t] * vt[i];
        }
        if (fa3_p_)
          for (int i = 0; i < hs; ++i) out[i] /= 256.0f * fa3_sum;
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
  bool fa3_p_ = false;
  std::vector<float> key_cache_, value_cache_;
};

// A float64 forward of a Hugging Face checkpoint as transformers' LlamaForCausalLM /
// MistralForCausalLM / Qwen2ForCausalLM compute it, over the HF tensors themselves: rotate-half
// RoPE on the HF row order (no interleaving), inverse frequencies with rope_scaling applied the
// way transformers does (linear: divided by the factor; llama3: _compute_llama3_parameters),
// optional q/k/v/o biases, head_dim independent of hidden_size, Qwen3's QK-norm. The test writes the files
// from the same tensors, so any layout or scaling slip in the loader shows in the logits.
struct HfSpec {
  int dim = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  double eps = 1e-5, theta = 10000;
  std::string scaling = "none";  // "none", "linear", "llama3"
  double factor = 1, low_freq_factor = 1, high_freq_factor = 4, original_max = 8192;
  bool tied = false, qkv_bias = false, o_bias = false;
  bool qk_norm = false;  // Qwen3: self_attn.q_norm / k_norm over each head, after the projections, before RoPE
};

class ReferenceHf {
 public:
  // get(name) returns the tensor `name` as stored (row-major HF shapes).
  using Get = std::function<const std::vector<float>&(const std::string&)>;
  ReferenceHf(HfSpec s, Get get) : s_(std::move(s)), get_(std::move(get)) {}

  std::vector<double> inv_freq() const {
    const int half = s_.head_dim / 2;
    std::vector<double> f(half);
    const double pi = std::acos(-1.0);
    for (int i = 0; i < half; ++i) {
      double v = 1.0 / std::pow(s_.theta, 2.0 * i / s_.head_dim);
      if (s_.scaling == "linear") v /= s_.factor;
      if (s_.scaling == "llama3") {
        const double wavelen = 2 * pi / v, low_wl = s_.original_max / s_.low_freq_factor,
                     high_wl = s_.original_max / s_.high_freq_factor;
        const double scaled = wavelen > low_wl ? v / s_.factor : v;
        const bool medium = !(wavelen < high_wl) && !(wavelen > low_wl);
        const double smooth = (s_.original_max / wavelen - s_.low_freq_factor) / (s_.high_freq_factor - s_.low_freq_factor);
        v = medium ? (1 - smooth) * scaled / s_.factor + smooth * scaled : scaled;
      }
      f[i] = v;
    }
    return f;
  }

  // Logits (T x vocab) of the whole sequence at positions 0..T-1.
  std::vector<double> run(const std::vector<int>& tokens) const {
    const std::size_t T = tokens.size(), D = s_.dim, hd = s_.head_dim, H = s_.heads, KV = s_.kv_heads;
    const std::size_t qd = H * hd, kvd = KV * hd, F = s_.hidden, V = s_.vocab;
    const auto& emb = get_("model.embed_tokens.weight");
    std::vector<std::vector<double>> x(T, std::vector<double>(D));
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t i = 0; i < D; ++i) x[t][i] = emb[static_cast<std::size_t>(tokens[t]) * D + i];
    const auto freq = inv_freq();
    for (int l = 0; l < s_.layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      std::vector<std::vector<double>> q(T), k(T), v(T);
      for (std::size_t t = 0; t < T; ++t) {
        const auto h = norm(x[t], get_(p + "input_layernorm.weight"));
        q[t] = mv(get_(p + "self_attn.q_proj.weight"), h, qd, s_.qkv_bias ? &get_(p + "self_attn.q_proj.bias") : nullptr);
        k[t] = mv(get_(p + "self_attn.k_proj.weight"), h, kvd, s_.qkv_bias ? &get_(p + "self_attn.k_proj.bias") : nullptr);
        v[t] = mv(get_(p + "self_attn.v_proj.weight"), h, kvd, s_.qkv_bias ? &get_(p + "self_attn.v_proj.bias") : nullptr);
        if (s_.qk_norm) {  // Qwen3RMSNorm over each head's head_dim, in the HF row order
          head_norm(q[t], H, get_(p + "self_attn.q_norm.weight"));
          head_norm(k[t], KV, get_(p + "self_attn.k_norm.weight"));
        }
        rotate_half(q[t], H, freq, static_cast<double>(t));
        rotate_half(k[t], KV, freq, static_cast<double>(t));
      }
      for (std::size_t t = 0; t < T; ++t) {
        std::vector<double> att(qd, 0.0);
        for (std::size_t h = 0; h < H; ++h) {
          const std::size_t g = h / (H / KV);
          std::vector<double> sc(t + 1);
          double mx = -1e300;
          for (std::size_t u = 0; u <= t; ++u) {
            double d = 0;
            for (std::size_t i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[u][g * hd + i];
            mx = std::max(mx, sc[u] = d / std::sqrt(static_cast<double>(hd)));
          }
          double sum = 0;
          for (auto& e : sc) sum += e = std::exp(e - mx);
          for (std::size_t u = 0; u <= t; ++u)
            for (std::size_t i = 0; i < hd; ++i) att[h * hd + i] += sc[u] / sum * v[u][g * hd + i];
        }
        const auto o = mv(get_(p + "self_attn.o_proj.weight"), att, D, s_.o_bias ? &get_(p + "self_attn.o_proj.bias") : nullptr);
        for (std::size_t i = 0; i < D; ++i) x[t][i] += o[i];
        const auto h = norm(x[t], get_(p + "post_attention_layernorm.weight"));
        auto g = mv(get_(p + "mlp.gate_proj.weight"), h, F, nullptr);
        const auto up = mv(get_(p + "mlp.up_proj.weight"), h, F, nullptr);
        for (std::size_t i = 0; i < F; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * up[i];
        const auto d = mv(get_(p + "mlp.down_proj.weight"), g, D, nullptr);
        for (std::size_t i = 0; i < D; ++i) x[t][i] += d[i];
      }
    }
    std::vector<double> logits;
    const auto& out = get_(s_.tied ? "model.embed_tokens.weight" : "lm_head.weight");
    for (std::size_t t = 0; t < T; ++t) {
      const auto row = mv(out, norm(x[t], get_("model.norm.weight")), V, nullptr);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    return logits;
  }

 private:
  std::vector<double> norm(const std::vector<double>& x, const std::vector<float>& w) const {
    double ss = 0;
    for (double e : x) ss += e * e;
    const double r = 1 / std::sqrt(ss / static_cast<double>(x.size()) + s_.eps);
    std::vector<double> o(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) o[i] = w[i] * (x[i] * r);
    return o;
  }
  static std::vector<double> mv(const std::vector<float>& W, const std::vector<double>& x, std::size_t rows,
                                const std::vector<float>* bias) {
    std::vector<double> y(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      double a = bias ? (*bias)[r] : 0.0;
      for (std::size_t c = 0; c < x.size(); ++c) a += static_cast<double>(W[r * x.size() + c]) * x[c];
      y[r] = a;
    }
    return y;
  }
  void head_norm(std::vector<double>& x, std::size_t heads, const std::vector<float>& w) const {
    const std::size_t hd = s_.head_dim;
    for (std::size_t h = 0; h < heads; ++h) {
      double ss = 0;
      for (std::size_t i = 0; i < hd; ++i) ss += x[h * hd + i] * x[h * hd + i];
      const double r = 1 / std::sqrt(ss / static_cast<double>(hd) + s_.eps);
      for (std::size_t i = 0; i < hd; ++i) x[h * hd + i] = w[i] * (x[h * hd + i] * r);
    }
  }
  // transformers' apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, halves of each head.
  void rotate_half(std::vector<double>& x, std::size_t heads, const std::vector<double>& freq, double pos) const {
    const std::size_t hd = s_.head_dim, half = hd / 2;
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < half; ++i) {
        const double c = std::cos(pos * freq[i]), s = std::sin(pos * freq[i]);
        const double a = x[h * hd + i], b = x[h * hd + half + i];
        x[h * hd + i] = a * c - b * s;
        x[h * hd + half + i] = b * c + a * s;
      }
  }

  HfSpec s_;
  Get get_;
};

}  // namespace lowp::test
