#include "lowp/accuracy/model.hpp"

#include <cmath>
#include <limits>

#include "lowp/accuracy/memory.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {

namespace {

std::string label(const LlamaModel& m) {
  if (!m.path.empty()) return m.path;
  return m.source.empty() ? std::string("model") : m.source + " model";
}

void check_size(const LlamaModel& m, const std::vector<float>& v, std::size_t rows, std::size_t cols,
                const std::string& name) {
  // Config values were checked positive and below 2^31, so rows * cols fits in 64 bits.
  const std::size_t want = rows * cols;
  if (v.size() != want)
    throw Error(label(m) + ": tensor '" + name + "' has " + std::to_string(v.size()) +
                " elements, expected " + std::to_string(rows) + " x " + std::to_string(cols));
}

}  // namespace

void validate(const LlamaConfig& c, const std::string& file) {
  auto positive = [&](int v, const char* name) {
    if (v <= 0) throw Error(file + ": " + name + " is " + std::to_string(v) + ", must be positive");
  };
  positive(c.dim, "dim");
  positive(c.hidden_dim, "hidden_dim");
  positive(c.n_layers, "n_layers");
  positive(c.n_heads, "n_heads");
  positive(c.n_kv_heads, "n_kv_heads");
  positive(c.vocab_size, "vocab_size");
  positive(c.seq_len, "seq_len");
  if (c.head_size < 0) throw Error(file + ": head_dim is " + std::to_string(c.head_size) + ", must be positive");
  if (c.head_size == 0 && c.dim % c.n_heads != 0)
    throw Error(file + ": dim " + std::to_string(c.dim) + " is not a multiple of n_heads " +
                std::to_string(c.n_heads));
  if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
    throw Error(file + ": n_heads " + std::to_string(c.n_heads) + " is not a multiple of n_kv_heads " +
                std::to_string(c.n_kv_heads));
  if (c.head_dim() % 2 != 0)
    throw Error(file + ": head_dim " + std::to_string(c.head_dim()) + " is odd; RoPE rotates pairs");
  if (!(std::isfinite(c.norm_eps) && c.norm_eps > 0))
    throw Error(file + ": norm_eps " + std::to_string(c.norm_eps) + " must be positive and finite");
  if (!(std::isfinite(c.rope_theta) && c.rope_theta > 0))
    throw Error(file + ": rope_theta " + std::to_string(c.rope_theta) + " must be positive and finite");
  if (!(std::isfinite(c.rope_freq_scale) && c.rope_freq_scale > 0))
    throw Error(file + ": RoPE frequency scale " + std::to_string(c.rope_freq_scale) + " must be positive and finite");
  if (!c.rope_freq_factors.empty() && c.rope_freq_factors.size() != static_cast<std::size_t>(c.head_dim() / 2))
    throw Error(file + ": " + std::to_string(c.rope_freq_factors.size()) + " RoPE frequency factors, head_dim " +
                std::to_string(c.head_dim()) + " needs " + std::to_string(c.head_dim() / 2));
  for (float f : c.rope_freq_factors)
    if (!(std::isfinite(f) && f > 0)) throw Error(file + ": RoPE frequency factor " + std::to_string(f) + " must be positive and finite");
  // Nothing in a GGUF or safetensors file backs its context length, so it is held to what a
  // forward pass can mean: float32 holds every integer position exactly up to 2^24.
  if (c.seq_len > max_seq_len)
    throw Error(file + ": the context length (seq_len) " + std::to_string(c.seq_len) + " is above 2^24 = " +
                std::to_string(max_seq_len) + ", the most positions lowp accepts");
  check_memory(weight_bytes(c), file + ": dim " + std::to_string(c.dim) + ", hidden_dim " + std::to_string(c.hidden_dim) +
                                    ", n_layers " + std::to_string(c.n_layers) + ", n_kv_heads " +
                                    std::to_string(c.n_kv_heads) + " and vocab_size " + std::to_string(c.vocab_size) +
                                    " (float32 weights)");
}

void validate(const LlamaModel& m) {
  const LlamaConfig& c = m.config;
  const std::string file = label(m);
  validate(c, file);
  if (m.layers.size() != static_cast<std::size_t>(c.n_layers))
    throw Error(file + ": " + std::to_string(m.layers.size()) + " layers of weights, config says " +
                std::to_string(c.n_layers));

  const std::size_t dim = c.dim, hidden = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size, qd = c.q_dim();
  check_size(m, m.token_embedding, vocab, dim, "token_embedding");
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const LayerWeights& w = m.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    check_size(m, w.attn_norm, 1, dim, p + "attn_norm");
    check_size(m, w.wq, qd, dim, p + "wq");
    check_size(m, w.wk, kv, dim, p + "wk");
    check_size(m, w.wv, kv, dim, p + "wv");
    check_size(m, w.wo, dim, qd, p + "wo");
    if (!w.bq.empty()) check_size(m, w.bq, 1, qd, p + "bq");
    if (!w.bk.empty()) check_size(m, w.bk, 1, kv, p + "bk");
    if (!w.bv.empty()) check_size(m, w.bv, 1, kv, p + "bv");
    if (!w.bo.empty()) check_size(m, w.bo, 1, dim, p + "bo");
    check_size(m, w.ffn_norm, 1, dim, p + "ffn_norm");
    check_size(m, w.w_gate, hidden, dim, p + "w_gate");
    check_size(m, w.w_down, dim, hidden, p + "w_down");
    check_size(m, w.w_up, hidden, dim, p + "w_up");
  }
  check_size(m, m.final_norm, 1, dim, "final_norm");
  if (!m.classifier.empty()) check_size(m, m.classifier, vocab, dim, "classifier");
}

}  // namespace lowp::accuracy
