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

void check_view(const LlamaModel& m, const quant::StoredMatrix& v, std::size_t rows, std::size_t cols,
                const std::string& name) {
  if (!v.data || v.rows != rows || v.cols != cols)
    throw Error(label(m) + ": mapped tensor '" + name + "' is " + std::to_string(v.rows) + " x " + std::to_string(v.cols) +
                (v.data ? "" : " with no data") + ", expected " + std::to_string(rows) + " x " + std::to_string(cols));
}

std::vector<float> widened(const quant::StoredMatrix& v) {
  std::vector<float> out(v.rows * v.cols);
  quant::widen_rows(v, 0, v.rows, out.data());
  return out;
}

}  // namespace

void validate(const LlamaConfig& c, const std::string& file, bool widened) {
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
  if (widened)
    check_memory(weight_bytes(c), file + ": dim " + std::to_string(c.dim) + ", hidden_dim " + std::to_string(c.hidden_dim) +
                                    ", n_layers " + std::to_string(c.n_layers) + ", n_kv_heads " +
                                    std::to_string(c.n_kv_heads) + " and vocab_size " + std::to_string(c.vocab_size) +
                                    " (float32 weights)");
}

void validate(const LlamaModel& m) {
  const LlamaConfig& c = m.config;
  const std::string file = label(m);
  validate(c, file, !m.mapped);
  if (m.layers.size() != static_cast<std::size_t>(c.n_layers))
    throw Error(file + ": " + std::to_string(m.layers.size()) + " layers of weights, config says " +
                std::to_string(c.n_layers));

  const std::size_t dim = c.dim, hidden = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size, qd = c.q_dim();
  if (m.mapped) {
    const MappedWeights& w = *m.mapped;
    if (w.layers.size() != m.layers.size())
      throw Error(file + ": " + std::to_string(w.layers.size()) + " layers of mapped weights, config says " +
                  std::to_string(c.n_layers));
    check_view(m, w.token_embedding, vocab, dim, "token_embedding");
    if (w.classifier.data) check_view(m, w.classifier, vocab, dim, "classifier");
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
      const MappedLayer& L = w.layers[l];
      const std::string p = "layer " + std::to_string(l) + " ";
      check_view(m, L.wq, qd, dim, p + "wq");
      check_view(m, L.wk, kv, dim, p + "wk");
      check_view(m, L.wv, kv, dim, p + "wv");
      check_view(m, L.wo, dim, qd, p + "wo");
      check_view(m, L.w_gate, hidden, dim, p + "w_gate");
      check_view(m, L.w_down, dim, hidden, p + "w_down");
      check_view(m, L.w_up, hidden, dim, p + "w_up");
      const LayerWeights& B = m.layers[l];
      check_size(m, B.attn_norm, 1, dim, p + "attn_norm");
      check_size(m, B.ffn_norm, 1, dim, p + "ffn_norm");
      if (!B.bq.empty()) check_size(m, B.bq, 1, qd, p + "bq");
      if (!B.bk.empty()) check_size(m, B.bk, 1, kv, p + "bk");
      if (!B.bv.empty()) check_size(m, B.bv, 1, kv, p + "bv");
      if (!B.bo.empty()) check_size(m, B.bo, 1, dim, p + "bo");
    }
    check_size(m, m.final_norm, 1, dim, "final_norm");
    return;
  }
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

void widen_mapped(LlamaModel& m) {
  if (!m.mapped) return;
  const std::shared_ptr<const MappedWeights> w = std::move(m.mapped);
  m.token_embedding = widened(w->token_embedding);
  if (w->classifier.data) m.classifier = widened(w->classifier);
  for (std::size_t l = 0; l < w->layers.size() && l < m.layers.size(); ++l) {
    const MappedLayer& v = w->layers[l];
    LayerWeights& L = m.layers[l];
    L.wq = widened(v.wq);
    L.wk = widened(v.wk);
    L.wv = widened(v.wv);
    L.wo = widened(v.wo);
    L.w_gate = widened(v.w_gate);
    L.w_down = widened(v.w_down);
    L.w_up = widened(v.w_up);
  }
}

}  // namespace lowp::accuracy
