// A Llama of a given shape with seeded Gaussian weights (1/sqrt(fan-in) scaled, unit norms),
// built once per process by the eval benchmarks.
#pragma once
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "lowp/accuracy/model.hpp"

namespace lowp::bench {

inline accuracy::LlamaModel synthetic_llama(int dim, int hidden, int layers, int heads, int vocab, int seq_len,
                                            unsigned seed) {
  accuracy::LlamaConfig c;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = heads;
  c.vocab_size = vocab;
  c.seq_len = seq_len;
  accuracy::LlamaModel m;
  m.config = c;
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto fill = [&](std::size_t n, float s) {
    std::vector<float> v(n);
    for (float& x : v) x = nd(gen) * s;
    return v;
  };
  const std::size_t d = static_cast<std::size_t>(dim), hid = static_cast<std::size_t>(hidden),
                    v = static_cast<std::size_t>(vocab);
  const float s_dim = 1.0f / std::sqrt(static_cast<float>(dim)), s_hid = 1.0f / std::sqrt(static_cast<float>(hidden));
  m.token_embedding = fill(v * d, 1.0f);
  for (int l = 0; l < layers; ++l) {
    accuracy::LayerWeights w;
    w.attn_norm.assign(d, 1.0f);
    w.ffn_norm.assign(d, 1.0f);
    w.wq = fill(d * d, s_dim);
    w.wk = fill(d * d, s_dim);
    w.wv = fill(d * d, s_dim);
    w.wo = fill(d * d, s_dim);
    w.w_gate = fill(hid * d, s_dim);
    w.w_up = fill(hid * d, s_dim);
    w.w_down = fill(d * hid, s_hid);
    m.layers.push_back(std::move(w));
  }
  m.final_norm.assign(d, 1.0f);
  return m;
}

}  // namespace lowp::bench
