// Helpers for the loader tests: small configs, whole-model comparison, byte patching.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"

namespace lowp::test {

inline accuracy::LlamaConfig small_config(int dim = 16, int hidden = 24, int vocab = 40) {
  accuracy::LlamaConfig c;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = vocab;
  c.seq_len = 32;
  c.norm_eps = 1e-6f;
  c.rope_theta = 5000.0f;
  return c;
}

// Calls f(name, a, b) for every tensor pair of two models with the same structure.
template <class F>
void for_each_tensor(const accuracy::LlamaModel& a, const accuracy::LlamaModel& b, F f) {
  f("token_embedding", a.token_embedding, b.token_embedding);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const auto& x = a.layers[l];
    const auto& y = b.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    f(p + "attn_norm", x.attn_norm, y.attn_norm);
    f(p + "wq", x.wq, y.wq);
    f(p + "wk", x.wk, y.wk);
    f(p + "wv", x.wv, y.wv);
    f(p + "wo", x.wo, y.wo);
    f(p + "ffn_norm", x.ffn_norm, y.ffn_norm);
    f(p + "w_gate", x.w_gate, y.w_gate);
    f(p + "w_down", x.w_down, y.w_down);
    f(p + "w_up", x.w_up, y.w_up);
  }
  f("final_norm", a.final_norm, b.final_norm);
  f("classifier", a.classifier, b.classifier);
}

inline void expect_same_config(const accuracy::LlamaConfig& a, const accuracy::LlamaConfig& b) {
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.hidden_dim, b.hidden_dim);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.norm_eps, b.norm_eps);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
}

// Bitwise-identical weights and the same config.
inline void expect_identical(const accuracy::LlamaModel& a, const accuracy::LlamaModel& b) {
  expect_same_config(a.config, b.config);
  for_each_tensor(a, b, [](const std::string& n, const std::vector<float>& x, const std::vector<float>& y) {
    ASSERT_EQ(x.size(), y.size()) << n;
    if (!x.empty()) {
      EXPECT_EQ(std::memcmp(x.data(), y.data(), 4 * x.size()), 0) << n;
    }
  });
}

// Same config and every weight within rel * |x| + abs of the original.
inline void expect_close(const accuracy::LlamaModel& a, const accuracy::LlamaModel& b, double rel, double abs) {
  expect_same_config(a.config, b.config);
  for_each_tensor(a, b, [&](const std::string& n, const std::vector<float>& x, const std::vector<float>& y) {
    ASSERT_EQ(x.size(), y.size()) << n;
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_LE(std::fabs(double(x[i]) - y[i]), rel * std::fabs(double(x[i])) + abs) << n << " [" << i << "]";
  });
}

// Position of the first occurrence of `s` in `b` (throws, failing the test, when absent).
inline std::size_t find_bytes(const std::vector<std::uint8_t>& b, const std::string& s, std::size_t from = 0) {
  const auto it = std::search(b.begin() + from, b.end(), s.begin(), s.end(),
                              [](std::uint8_t x, char y) { return x == static_cast<std::uint8_t>(y); });
  if (it == b.end()) throw std::runtime_error("'" + s + "' not found in the file bytes");
  return static_cast<std::size_t>(it - b.begin());
}

template <class T>
std::vector<std::uint8_t> patched(std::vector<std::uint8_t> b, std::size_t pos, T v) {
  std::memcpy(b.data() + pos, &v, sizeof v);
  return b;
}

inline std::vector<std::uint8_t> replaced(std::vector<std::uint8_t> b, const std::string& from, const std::string& to) {
  const std::size_t p = find_bytes(b, from);
  b.erase(b.begin() + p, b.begin() + p + from.size());
  b.insert(b.begin() + p, to.begin(), to.end());
  return b;
}

}  // namespace lowp::test
