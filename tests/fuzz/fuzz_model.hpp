// A fixed small random Llama (dim 64, 8 heads, 2 KV heads, hidden 96 -- a size most block
// formats do not divide -- vocab 512, seq_len 64) for the harnesses whose input is not a model.
#pragma once
#include <cstdint>

#include "lowp/accuracy/model.hpp"

namespace lowp::fuzz {

inline const accuracy::LlamaModel& fixed_model() {
  static const accuracy::LlamaModel m = [] {
    accuracy::LlamaModel m;
    auto& c = m.config;
    c.dim = 64;
    c.hidden_dim = 96;
    c.n_layers = 1;
    c.n_heads = 8;
    c.n_kv_heads = 2;
    c.vocab_size = 512;
    c.seq_len = 64;
    std::uint64_t s = 0x9e3779b97f4a7c15ull;
    auto fill = [&](std::size_t n, float scale) {  // xorshift values in [-scale, scale)
      std::vector<float> v(n);
      for (float& x : v) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x = scale * (static_cast<float>(s >> 40) / 8388608.0f - 1.0f);
      }
      return v;
    };
    const std::size_t dim = 64, hid = 96, kv = 16, vocab = 512;
    m.token_embedding = fill(vocab * dim, 1.0f);
    accuracy::LayerWeights w;
    w.attn_norm = fill(dim, 1.0f);
    w.wq = fill(dim * dim, 0.2f);
    w.wk = fill(kv * dim, 0.2f);
    w.wv = fill(kv * dim, 0.2f);
    w.wo = fill(dim * dim, 0.2f);
    w.ffn_norm = fill(dim, 1.0f);
    w.w_gate = fill(hid * dim, 0.2f);
    w.w_down = fill(dim * hid, 0.2f);
    w.w_up = fill(hid * dim, 0.2f);
    m.layers.push_back(std::move(w));
    m.final_norm = fill(dim, 1.0f);
    return m;
  }();
  return m;
}

}  // namespace lowp::fuzz
