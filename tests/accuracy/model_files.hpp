// Test-only writers: one LlamaModel as a llama2.c .bin, a GGUF v3 file (F32, F16, BF16 or
// Q8_0 weights) and a Hugging Face safetensors + config.json directory; plus random models and
// tokenizer files. Written from the format descriptions, independently of the loaders.
#pragma once
#include <cmath>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "lowp/numerics/half.hpp"

namespace lowp::test {

using accuracy::LayerWeights;
using accuracy::LlamaConfig;
using accuracy::LlamaModel;

// A model with N(0, 1/in_features) linear weights (activations keep their scale through the
// layers), N(0, 1) embeddings and norms near 1; `tied`: no separate classifier.
inline LlamaModel random_model(const LlamaConfig& c, std::uint32_t seed, bool tied = true) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto matrix = [&](std::size_t rows, std::size_t cols) {
    std::vector<float> v(rows * cols);
    const float s = 1.0f / std::sqrt(static_cast<float>(cols));
    for (float& x : v) x = nd(gen) * s;
    return v;
  };
  auto norm = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = 1.0f + 0.1f * nd(gen);
    return v;
  };
  const std::size_t dim = c.dim, hid = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  LlamaModel m;
  m.config = c;
  m.token_embedding = matrix(vocab * dim, 1);  // scale 1
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights w;
    w.attn_norm = norm(dim);
    w.wq = matrix(dim, dim);
    w.wk = matrix(kv, dim);
    w.wv = matrix(kv, dim);
    w.wo = matrix(dim, dim);
    w.ffn_norm = norm(dim);
    w.w_gate = matrix(hid, dim);
    w.w_down = matrix(dim, hid);
    w.w_up = matrix(hid, dim);
    m.layers.push_back(std::move(w));
  }
  m.final_norm = norm(dim);
  if (!tied) m.classifier = matrix(vocab, dim);
  return m;
}

// Little-endian byte buffer.
struct ByteSink {
  std::vector<std::uint8_t> b;
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* p, std::size_t n) {
    const auto* q = static_cast<const std::uint8_t*>(p);
    b.insert(b.end(), q, q + n);
  }
  void put_floats(const std::vector<float>& v) { put_bytes(v.data(), v.size() * 4); }
  void pad_to(std::size_t align) {
    while (b.size() % align) b.push_back(0);
  }
};

inline void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

inline void write_text(const std::string& path, const std::string& text) {
  write_file(path, std::vector<std::uint8_t>(text.begin(), text.end()));
}

// ---- llama2.c legacy .bin ----

inline std::vector<std::uint8_t> llama2c_bytes(const LlamaModel& m) {
  const LlamaConfig& c = m.config;
  ByteSink s;
  const int vocab = m.classifier.empty() ? c.vocab_size : -c.vocab_size;
  for (int v : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, vocab, c.seq_len})
    s.put<std::int32_t>(v);
  s.put_floats(m.token_embedding);
  for (auto f : {&LayerWeights::attn_norm, &LayerWeights::wq, &LayerWeights::wk, &LayerWeights::wv,
                 &LayerWeights::wo, &LayerWeights::ffn_norm, &LayerWeights::w_gate,
                 &LayerWeights::w_down, &LayerWeights::w_up})
    for (const auto& l : m.layers) s.put_floats(l.*f);
  s.put_floats(m.final_norm);
  // freq_cis_real, freq_cis_imag: the RoPE tables llama2.c's export wrote (cos, sin).
  const int hd = c.head_dim();
  for (int part = 0; part < 2; ++part)
    for (int t = 0; t < c.seq_len; ++t)
      for (int i = 0; i < hd / 2; ++i) {
        const double a = t * std::pow(static_cast<double>(c.rope_theta), -2.0 * i / hd);
        s.put<float>(static_cast<float>(part == 0 ? std::cos(a) : std::sin(a)));
      }
  if (!m.classifier.empty()) s.put_floats(m.classifier);
  return s.b;
}

inline void write_llama2c(const std::string& path, const LlamaModel& m) { write_file(path, llama2c_bytes(m)); }

// ---- tokenizers ----

// A vocabulary as SentencePiece stores it; `types` are GGUF token types (1 normal, 2 unknown,
// 3 control, 6 byte). Pieces use ' ' for spaces (GGUF writing maps them to U+2581).
struct TestVocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
  int bos = 1, eos = 2;
};

// llama2.c tokenizer.bin: int32 max_token_length, then per token float32 score, int32 len, bytes.
inline std::vector<std::uint8_t> llama2c_tokenizer_bytes(const TestVocab& v) {
  ByteSink s;
  std::size_t maxlen = 0;
  for (const auto& p : v.pieces) maxlen = std::max(maxlen, p.size());
  s.put<std::int32_t>(static_cast<std::int32_t>(maxlen));
  for (std::size_t i = 0; i < v.pieces.size(); ++i) {
    s.put<float>(v.scores[i]);
    s.put<std::int32_t>(static_cast<std::int32_t>(v.pieces[i].size()));
    s.put_bytes(v.pieces[i].data(), v.pieces[i].size());
  }
  return s.b;
}

// ---- GGUF v3 ----

// mxfp4 writes zero weights (scale byte 127, codes 0): for tests that need the type, not values.
enum class GgufType : std::uint32_t { f32 = 0, f16 = 1, q8_0 = 8, bf16 = 30, mxfp4 = 39 };

inline void gguf_string(ByteSink& s, const std::string& str) {
  s.put<std::uint64_t>(str.size());
  s.put_bytes(str.data(), str.size());
}

// Q8_0 as llama.cpp's reference quantizer: per block of 32, d = max|x| / 127 stored as f16,
// q = round(x / d) (half away from zero).
inline void put_q8_0(ByteSink& s, const std::vector<float>& v) {
  for (std::size_t b = 0; b < v.size(); b += 32) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[b + i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    s.put<std::uint16_t>(f32_to_f16(d));
    for (int i = 0; i < 32; ++i) s.put<std::int8_t>(static_cast<std::int8_t>(std::round(v[b + i] * id)));
  }
}

struct GgufOptions {
  GgufType type = GgufType::f32;  // type of the 2-D weights; norms stay F32 as llama.cpp writes them
  std::uint32_t alignment = 32;   // written as general.alignment when not 32
  const TestVocab* vocab = nullptr;
};

inline std::vector<std::uint8_t> gguf_bytes(const LlamaModel& m, const GgufOptions& o = {}) {
  const LlamaConfig& c = m.config;
  struct T {
    std::string name;
    const std::vector<float>* data;
    std::uint64_t ne0, ne1;  // ne1 == 0: 1-D
  };
  std::vector<T> ts;
  const std::uint64_t dim = c.dim, hid = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  ts.push_back({"token_embd.weight", &m.token_embedding, dim, vocab});
  for (int l = 0; l < c.n_layers; ++l) {
    const auto& w = m.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    ts.push_back({p + "attn_norm.weight", &w.attn_norm, dim, 0});
    ts.push_back({p + "attn_q.weight", &w.wq, dim, dim});
    ts.push_back({p + "attn_k.weight", &w.wk, dim, kv});
    ts.push_back({p + "attn_v.weight", &w.wv, dim, kv});
    ts.push_back({p + "attn_output.weight", &w.wo, dim, dim});
    ts.push_back({p + "ffn_norm.weight", &w.ffn_norm, dim, 0});
    ts.push_back({p + "ffn_gate.weight", &w.w_gate, dim, hid});
    ts.push_back({p + "ffn_down.weight", &w.w_down, hid, dim});
    ts.push_back({p + "ffn_up.weight", &w.w_up, dim, hid});
  }
  ts.push_back({"output_norm.weight", &m.final_norm, dim, 0});
  if (!m.classifier.empty()) ts.push_back({"output.weight", &m.classifier, dim, vocab});

  ByteSink s;
  s.put_bytes("GGUF", 4);
  s.put<std::uint32_t>(3);
  s.put<std::uint64_t>(ts.size());
  std::uint64_t n_kv = 10 + (o.alignment != 32) + (o.vocab ? 6 : 0);
  s.put<std::uint64_t>(n_kv);
  auto kv_u32 = [&](const std::string& k, std::uint32_t v) { gguf_string(s, k); s.put<std::uint32_t>(4); s.put(v); };
  auto kv_f32 = [&](const std::string& k, float v) { gguf_string(s, k); s.put<std::uint32_t>(6); s.put(v); };
  auto kv_str = [&](const std::string& k, const std::string& v) { gguf_string(s, k); s.put<std::uint32_t>(8); gguf_string(s, v); };
  kv_str("general.architecture", "llama");
  kv_str("general.name", "lowp test model");
  kv_u32("llama.context_length", c.seq_len);
  kv_u32("llama.embedding_length", c.dim);
  kv_u32("llama.feed_forward_length", c.hidden_dim);
  kv_u32("llama.block_count", c.n_layers);
  kv_u32("llama.attention.head_count", c.n_heads);
  kv_u32("llama.attention.head_count_kv", c.n_kv_heads);
  kv_f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  kv_f32("llama.rope.freq_base", c.rope_theta);
  if (o.alignment != 32) kv_u32("general.alignment", o.alignment);
  if (o.vocab) {
    const TestVocab& v = *o.vocab;
    kv_str("tokenizer.ggml.model", "llama");
    gguf_string(s, "tokenizer.ggml.tokens");
    s.put<std::uint32_t>(9);
    s.put<std::uint32_t>(8);
    s.put<std::uint64_t>(v.pieces.size());
    for (std::string p : v.pieces) {
      std::string q;
      for (char ch : p) q += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);
      gguf_string(s, q);
    }
    gguf_string(s, "tokenizer.ggml.scores");
    s.put<std::uint32_t>(9);
    s.put<std::uint32_t>(6);
    s.put<std::uint64_t>(v.scores.size());
    for (float f : v.scores) s.put(f);
    gguf_string(s, "tokenizer.ggml.token_type");
    s.put<std::uint32_t>(9);
    s.put<std::uint32_t>(5);
    s.put<std::uint64_t>(v.types.size());
    for (std::int32_t t : v.types) s.put(t);
    kv_u32("tokenizer.ggml.bos_token_id", v.bos);
    kv_u32("tokenizer.ggml.eos_token_id", v.eos);
  }

  // Tensor infos, then the aligned data section.
  std::vector<ByteSink> datas;
  std::uint64_t offset = 0;
  for (const T& t : ts) {
    GgufType ty = t.ne1 ? o.type : GgufType::f32;
    ByteSink d;
    for (float x : *t.data) {
      if (ty == GgufType::f32) d.put(x);
      if (ty == GgufType::f16) d.put(f32_to_f16(x));
      if (ty == GgufType::bf16) d.put(f32_to_bf16(x));
    }
    if (ty == GgufType::q8_0) {
      if (t.ne0 % 32) throw std::invalid_argument("Q8_0 needs rows of a multiple of 32: " + t.name);
      put_q8_0(d, *t.data);
    }
    if (ty == GgufType::mxfp4) {
      if (t.ne0 % 32) throw std::invalid_argument("MXFP4 needs rows of a multiple of 32: " + t.name);
      for (std::size_t b = 0; b < t.data->size() / 32; ++b) {
        d.put<std::uint8_t>(127);
        for (int i = 0; i < 16; ++i) d.put<std::uint8_t>(0);
      }
    }
    gguf_string(s, t.name);
    s.put<std::uint32_t>(t.ne1 ? 2 : 1);
    s.put<std::uint64_t>(t.ne0);
    if (t.ne1) s.put<std::uint64_t>(t.ne1);
    s.put<std::uint32_t>(static_cast<std::uint32_t>(ty));
    s.put<std::uint64_t>(offset);
    offset += d.b.size();
    offset = (offset + o.alignment - 1) / o.alignment * o.alignment;
    datas.push_back(std::move(d));
  }
  s.pad_to(o.alignment);
  for (auto& d : datas) {
    s.put_bytes(d.b.data(), d.b.size());
    s.pad_to(o.alignment);
  }
  return s.b;
}

inline void write_gguf(const std::string& path, const LlamaModel& m, GgufType type = GgufType::f32) {
  GgufOptions o;
  o.type = type;
  write_file(path, gguf_bytes(m, o));
}

// ---- Hugging Face safetensors + config.json ----

enum class StDtype { f32, f16, bf16 };

// HF's conversion permutes q/k rows per head to the rotate-half order: HF row j takes
// interleaved row 2j and HF row j + hd/2 takes row 2j + 1 (j < hd/2).
inline std::vector<float> hf_permute(const std::vector<float>& w, int heads, int hd, int cols) {
  std::vector<float> out(w.size());
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < hd; ++j) {
      const int src = h * hd + (j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1);
      std::memcpy(&out[static_cast<std::size_t>(h * hd + j) * cols], &w[static_cast<std::size_t>(src) * cols],
                  sizeof(float) * cols);
    }
  return out;
}

inline std::vector<std::uint8_t> safetensors_bytes(const LlamaModel& m, StDtype dt = StDtype::f32) {
  const LlamaConfig& c = m.config;
  const int hd = c.head_dim();
  struct T {
    std::string name;
    std::vector<float> data;
    std::uint64_t rows, cols;  // rows == 0: 1-D
  };
  std::vector<T> ts;
  const std::uint64_t dim = c.dim, hid = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  ts.push_back({"model.embed_tokens.weight", m.token_embedding, vocab, dim});
  for (int l = 0; l < c.n_layers; ++l) {
    const auto& w = m.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    ts.push_back({p + "input_layernorm.weight", w.attn_norm, 0, dim});
    ts.push_back({p + "self_attn.q_proj.weight", hf_permute(w.wq, c.n_heads, hd, c.dim), dim, dim});
    ts.push_back({p + "self_attn.k_proj.weight", hf_permute(w.wk, c.n_kv_heads, hd, c.dim), kv, dim});
    ts.push_back({p + "self_attn.v_proj.weight", w.wv, kv, dim});
    ts.push_back({p + "self_attn.o_proj.weight", w.wo, dim, dim});
    ts.push_back({p + "post_attention_layernorm.weight", w.ffn_norm, 0, dim});
    ts.push_back({p + "mlp.gate_proj.weight", w.w_gate, hid, dim});
    ts.push_back({p + "mlp.down_proj.weight", w.w_down, dim, hid});
    ts.push_back({p + "mlp.up_proj.weight", w.w_up, hid, dim});
  }
  ts.push_back({"model.norm.weight", m.final_norm, 0, dim});
  if (!m.classifier.empty()) ts.push_back({"lm_head.weight", m.classifier, vocab, dim});

  const char* dname = dt == StDtype::f32 ? "F32" : dt == StDtype::f16 ? "F16" : "BF16";
  ByteSink data;
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  for (const T& t : ts) {
    const std::size_t begin = data.b.size();
    for (float x : t.data) {
      if (dt == StDtype::f32) data.put(x);
      if (dt == StDtype::f16) data.put(f32_to_f16(x));
      if (dt == StDtype::bf16) data.put(f32_to_bf16(x));
    }
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on long operator+ chains.
    std::string shape = "[";
    if (t.rows) shape.append(std::to_string(t.rows)).append(", ");
    shape.append(std::to_string(t.cols)).append("]");
    header.append(",\n \"").append(t.name).append("\": {\"dtype\": \"").append(dname);
    header.append("\", \"shape\": ").append(shape).append(", \"data_offsets\": [");
    header.append(std::to_string(begin)).append(", ").append(std::to_string(data.b.size())).append("]}");
  }
  header += "}";
  while ((8 + header.size()) % 8) header += ' ';  // safetensors pads the header with spaces
  ByteSink s;
  s.put<std::uint64_t>(header.size());
  s.put_bytes(header.data(), header.size());
  s.put_bytes(data.b.data(), data.b.size());
  return s.b;
}

inline std::string hf_config_json(const LlamaModel& m) {
  const LlamaConfig& c = m.config;
  char eps[64], theta[64];
  std::snprintf(eps, sizeof eps, "%.9g", c.norm_eps);
  std::snprintf(theta, sizeof theta, "%.9g", c.rope_theta);
  return std::string("{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n") +
         "  \"hidden_size\": " + std::to_string(c.dim) + ",\n  \"intermediate_size\": " +
         std::to_string(c.hidden_dim) + ",\n  \"num_hidden_layers\": " + std::to_string(c.n_layers) +
         ",\n  \"num_attention_heads\": " + std::to_string(c.n_heads) + ",\n  \"num_key_value_heads\": " +
         std::to_string(c.n_kv_heads) + ",\n  \"vocab_size\": " + std::to_string(c.vocab_size) +
         ",\n  \"max_position_embeddings\": " + std::to_string(c.seq_len) + ",\n  \"rms_norm_eps\": " + eps +
         ",\n  \"rope_theta\": " + theta + ",\n  \"tie_word_embeddings\": " +
         (m.classifier.empty() ? "true" : "false") + ",\n  \"torch_dtype\": \"float32\"\n}\n";
}

// Writes dir/model.safetensors and dir/config.json (creating dir).
inline void write_safetensors(const std::string& dir, const LlamaModel& m, StDtype dt = StDtype::f32) {
  std::filesystem::create_directories(dir);
  write_file(dir + "/model.safetensors", safetensors_bytes(m, dt));
  write_text(dir + "/config.json", hf_config_json(m));
}

// GPT-2's bytes_to_unicode, written out here: printable Latin-1 bytes are themselves, the
// other 68 take U+0100 onwards in byte order.
inline std::string byte_char(int b) {
  static std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int next = 256;
    for (int x = 0; x < 256; ++x) {
      const bool keep = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE;
      const int cp = keep ? x : next++;
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
      t[x] = s;
    }
    return t;
  }();
  return table[b];
}

// A fresh empty directory under the system temp dir for one test.
inline std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() /
                 ("lowp_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

}  // namespace lowp::test
