// Shared pieces of the evaluator tests: the shared stories260K data and a small random model.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "model_files.hpp"

namespace lowp::test {

inline std::string shared_path(const std::string& rel) { return std::string(LOWP_SHARED_DIR) + "/" + rel; }
inline bool have_shared_model() {
  return std::filesystem::exists(shared_path("models/stories260K.bin")) &&
         std::filesystem::exists(shared_path("data/stories260K_ref/seqA_tokens.txt"));
}
#define LOWP_REQUIRE_SHARED()                                                               \
  if (!::lowp::test::have_shared_model())                                                   \
  GTEST_SKIP() << "../shared/models/stories260K.bin or ../shared/data/stories260K_ref is absent"

inline std::vector<int> read_ids(const std::string& path) {
  std::ifstream f(path);
  std::vector<int> t;
  for (int id; f >> id;) t.push_back(id);
  return t;
}

template <class T>
std::vector<T> read_binary(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<T> v(bytes.size() / sizeof(T));
  std::copy(bytes.begin(), bytes.begin() + static_cast<long>(v.size() * sizeof(T)), reinterpret_cast<char*>(v.data()));
  return v;
}

// dim 64 (8 heads of 8, GQA with 4 KV heads), hidden 96, 2 layers, vocab 40, seq_len 48.
inline accuracy::LlamaConfig gqa_config() {
  accuracy::LlamaConfig c;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.vocab_size = 40;
  c.seq_len = 48;
  return c;
}

// A random model of config c, generated here: N(0, 1) embeddings, N(0, 1/fan_in) linears (so
// activations keep their scale), norms 1 + N(0, 0.1^2), a classifier of std 3/sqrt(dim)
// (logits of a few units: peaked but not one-hot distributions).
inline accuracy::LlamaModel make_model(const accuracy::LlamaConfig& c, std::uint32_t seed, bool tied = false) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto fill = [&](std::size_t n, float mean, float std_dev) {
    std::vector<float> v(n);
    for (float& x : v) x = mean + std_dev * nd(gen);
    return v;
  };
  const std::size_t dim = c.dim, hid = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  const float s_dim = 1.0f / std::sqrt(static_cast<float>(dim)), s_hid = 1.0f / std::sqrt(static_cast<float>(hid));
  accuracy::LlamaModel m;
  m.config = c;
  m.token_embedding = fill(vocab * dim, 0.0f, 1.0f);
  for (int l = 0; l < c.n_layers; ++l) {
    accuracy::LayerWeights w;
    w.attn_norm = fill(dim, 1.0f, 0.1f);
    w.wq = fill(dim * dim, 0.0f, s_dim);
    w.wk = fill(kv * dim, 0.0f, s_dim);
    w.wv = fill(kv * dim, 0.0f, s_dim);
    w.wo = fill(dim * dim, 0.0f, s_dim);
    w.ffn_norm = fill(dim, 1.0f, 0.1f);
    w.w_gate = fill(hid * dim, 0.0f, s_dim);
    w.w_down = fill(dim * hid, 0.0f, s_hid);
    w.w_up = fill(hid * dim, 0.0f, s_dim);
    m.layers.push_back(std::move(w));
  }
  m.final_norm = fill(dim, 1.0f, 0.1f);
  if (!tied) m.classifier = fill(vocab * dim, 0.0f, 3.0f * s_dim);
  return m;
}

inline accuracy::LlamaModel small_model(std::uint32_t seed = 1, bool tied = false) {
  return make_model(gqa_config(), seed, tied);
}

inline std::vector<int> random_tokens(std::size_t n, int vocab, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<int> t(n);
  for (int& x : t) x = static_cast<int>(gen() % static_cast<unsigned>(vocab));
  return t;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float d = a.size() == b.size() ? 0.0f : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

}  // namespace lowp::test
