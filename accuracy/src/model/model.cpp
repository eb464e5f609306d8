#include "lowp/accuracy/model.hpp"

#include <cmath>
#include <limits>

#include "lowp/accuracy/memory.hpp"
#include "lowp/numerics/error.hpp"
#include "model/tensors.hpp"

namespace lowp::accuracy {

namespace {

std::string label(const LlamaModel& m) {
  if (!m.path.empty()) return m.path;
  return m.source.empty() ? std::string("model") : m.source + " model";
}

// A present tensor of the table with the size the config gives it: the view's shape when mapped.
void check_tensor(const LlamaModel& m, const detail::TensorSpec& t, std::size_t layer) {
  const Weight& w = detail::tensor_of(m, t, layer);
  const std::string name = t.per_layer ? "layer " + std::to_string(layer) + " " + t.lowp : std::string(t.lowp);
  const std::size_t rows = detail::extent(m.config, t.rows), cols = detail::extent(m.config, t.cols);
  if (w.mapped()) {
    if (w.stored.rows != rows || w.stored.cols != cols)
      throw Error(label(m) + ": mapped tensor '" + name + "' is " + std::to_string(w.stored.rows) + " x " +
                  std::to_string(w.stored.cols) + ", expected " + std::to_string(rows) + " x " + std::to_string(cols));
    return;
  }
  if (t.optional && w.empty()) return;
  // Config values were checked positive and below 2^31, so rows * cols fits in 64 bits.
  if (w.size() != rows * cols)
    throw Error(label(m) + ": tensor '" + name + "' has " + std::to_string(w.size()) + " elements, expected " +
                (t.cols == detail::Extent::one ? "1 x " + std::to_string(rows)
                                               : std::to_string(rows) + " x " + std::to_string(cols)));
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

  detail::for_each_tensor(m.layers.size(), [&](const detail::TensorSpec& t, std::size_t l) { check_tensor(m, t, l); });
  // The forward pass applies QK-norm to a layer's q and k together, in every layer or none.
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const LayerWeights& L = m.layers[l];
    if (L.q_norm.present() != m.layers[0].q_norm.present() || L.k_norm.present() != L.q_norm.present())
      throw Error(file + ": QK-norm (q_norm and k_norm) must be in every layer or in none; layer " + std::to_string(l) +
                  " has " + (L.q_norm.present() ? "q_norm" : "no q_norm") + " and " +
                  (L.k_norm.present() ? "k_norm" : "no k_norm") + ", layer 0 " +
                  (m.layers[0].q_norm.present() ? "q_norm" : "no q_norm"));
  }
}

void widen_mapped(LlamaModel& m) {
  if (!m.mapped) return;
  const auto widen = [](Weight& w) {
    if (!w.mapped()) return;
    std::vector<float> out(w.stored.rows * w.stored.cols);
    quant::widen_rows(w.stored, 0, w.stored.rows, out.data());
    w = Weight(std::move(out));
  };
  detail::for_each_tensor(m.layers.size(), [&](const detail::TensorSpec& t, std::size_t l) { widen(detail::tensor_of(m, t, l)); });
  m.mapped.reset();
}

}  // namespace lowp::accuracy
