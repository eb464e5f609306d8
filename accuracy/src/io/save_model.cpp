// Checkpoint writers: llama2.c .bin, GGUF v3 (F32), safetensors + config.json.
#include "io/save_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <vector>

#include "file/atomic_file.hpp"
#include "io/gguf_meta.hpp"
#include "io/safetensors_file.hpp"
#include "model/tensors.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {
namespace {

class Buffer {
 public:
  template <class T>
  void put(T v) {  // resize + memcpy: GCC 12 misreads a range insert of sizeof(T) bytes as an overflow
    const std::size_t n = b_.size();
    b_.resize(n + sizeof(T));
    std::memcpy(b_.data() + n, &v, sizeof(T));
  }
  void floats(const std::vector<float>& v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    b_.insert(b_.end(), p, p + v.size() * sizeof(float));
  }
  void bytes(const std::string& s) { b_.insert(b_.end(), s.begin(), s.end()); }
  void pad_to(std::size_t align) {
    while (b_.size() % align) b_.push_back(0);
  }
  std::size_t size() const { return b_.size(); }
  const std::vector<std::uint8_t>& data() const { return b_; }

 private:
  std::vector<std::uint8_t> b_;
};

// HF stores each q/k head in rotate-half order: its row j is interleaved row 2j (j < hd/2) or
// 2(j - hd/2) + 1 (the inverse of the safetensors loader's unpermute).
std::vector<float> permute_hf(const std::vector<float>& w, int heads, int hd, int cols) {
  std::vector<float> out(w.size());
  const auto c = static_cast<std::size_t>(cols);
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < hd; ++j) {
      const int src = h * hd + (j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1);
      std::copy_n(&w[static_cast<std::size_t>(src) * c], c, &out[static_cast<std::size_t>(h * hd + j) * c]);
    }
  return out;
}

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

bool byte_vocab(int vocab) { return vocab >= 256 && vocab <= 272; }

}  // namespace

std::string llama2c_cannot_hold(const LlamaModel& m) {
  const LlamaConfig& c = m.config;
  LlamaConfig plain;  // llama2.c's fixed choices
  if (c.head_size != 0 && c.head_size * c.n_heads != c.dim) return "a head_dim other than dim / n_heads";
  for (const TensorSpec& t : kLayerTensors)
    for (std::size_t l = 0; !t.llama2c && l < m.layers.size(); ++l)
      if (tensor_of(m, t, l).present()) return t.optional;
  if (c.rope_theta != plain.rope_theta) return "a RoPE theta other than 10000";
  if (c.rope_freq_scale != 1.0f || !c.rope_freq_factors.empty()) return "RoPE scaling";
  if (c.norm_eps != plain.norm_eps) return "an RMSNorm eps other than 1e-5";
  return "";
}

void save_llama2c(const LlamaModel& m, const std::string& path) {
  validate(m);
  if (const std::string why = llama2c_cannot_hold(m); !why.empty())
    throw Error(path + ": llama2.c's format cannot hold " + why);
  const LlamaConfig& c = m.config;
  Buffer b;
  const bool tied = m.tied();
  for (int v : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, tied ? c.vocab_size : -c.vocab_size,
                c.seq_len})
    b.put<std::int32_t>(v);
  // In table order, each per-layer tensor for all layers back to back; llama2.c's export puts
  // its RoPE tables (freq_cis_real, freq_cis_imag) before the classifier.
  const int hd = c.head_dim();
  for (const TensorSpec& t : kTensors) {
    if (!t.llama2c) continue;
    if (t.model_member == &LlamaModel::classifier) {
      for (int part = 0; part < 2; ++part)
        for (int pos = 0; pos < c.seq_len; ++pos)
          for (int i = 0; i < hd / 2; ++i) {
            const double angle = pos * std::pow(static_cast<double>(c.rope_theta), -2.0 * i / hd);
            b.put<float>(static_cast<float>(part == 0 ? std::cos(angle) : std::sin(angle)));
          }
      if (tied) continue;
    }
    for (std::size_t l = 0; l < (t.per_layer ? m.layers.size() : 1); ++l) b.floats(tensor_of(m, t, l));
  }
  write_file_atomic(path, b.data());
}

void save_gguf(const LlamaModel& m, const std::string& path, const std::vector<GgufKv>& tokenizer) {
  validate(m);
  const LlamaConfig& c = m.config;
  Buffer b;
  const auto str = [&](const std::string& s) {
    b.put<std::uint64_t>(s.size());
    b.bytes(s);
  };
  // llama.cpp has QK-norm in its qwen3 architecture, which runs NEOX (rotate-half) RoPE: its q/k
  // rows and QK-norm gains are written in that order (as llama.cpp's converter leaves HF's).
  const bool qwen3 = !m.layers.empty() && m.layers[0].q_norm.present();
  const std::string arch = qwen3 ? "qwen3" : "llama";
  GgufMetaWriter kv;
  kv.str("general.architecture", arch);
  kv.str("general.name", "lowp");
  kv.u32("general.alignment", 32);
  const std::pair<std::string, int> ints[] = {{arch + ".context_length", c.seq_len},
                                               {arch + ".embedding_length", c.dim},
                                               {arch + ".block_count", c.n_layers},
                                               {arch + ".feed_forward_length", c.hidden_dim},
                                               {arch + ".rope.dimension_count", c.head_dim()},
                                               {arch + ".attention.head_count", c.n_heads},
                                               {arch + ".attention.head_count_kv", c.n_kv_heads},
                                               {arch + ".vocab_size", c.vocab_size}};
  for (const auto& [k, v] : ints) kv.u32(k, static_cast<std::uint32_t>(v));
  if (c.head_size != 0) {  // head_dim other than dim / n_heads
    kv.u32(arch + ".attention.key_length", static_cast<std::uint32_t>(c.head_size));
    kv.u32(arch + ".attention.value_length", static_cast<std::uint32_t>(c.head_size));
  }
  kv.f32(arch + ".attention.layer_norm_rms_epsilon", c.norm_eps);
  kv.f32(arch + ".rope.freq_base", c.rope_theta);
  if (c.rope_freq_scale != 1.0f) {  // the loader reads back 1 / factor
    kv.str(arch + ".rope.scaling.type", "linear");
    kv.f32(arch + ".rope.scaling.factor", static_cast<float>(1.0 / static_cast<double>(c.rope_freq_scale)));
  }
  kv.u32("general.file_type", 0);  // all F32
  for (const GgufKv& e : tokenizer) {
    if (e.key.rfind("tokenizer.", 0) != 0) throw Error(path + ": metadata " + e.key + " is not a tokenizer key");
    kv.entries().push_back(e);
  }

  struct T {
    std::string name;
    const std::vector<float>* data;
    std::vector<std::uint64_t> ne;
  };
  // The table's tensors in file order, q/k rows in lowp's (interleaved) order for the llama
  // architecture, rotate-half (copies in `permuted`) for qwen3; rope_freqs after the embedding.
  std::vector<T> ts;
  std::deque<std::vector<float>> permuted;
  const int hd = c.head_dim();
  for_each_tensor(m.layers.size(), [&](const TensorSpec& t, std::size_t l) {
    const Weight& w = tensor_of(m, t, l);
    const int heads = qwen3 ? rope_heads(c, t) : 0;
    if (heads && !w.empty()) permuted.push_back(permute_hf(w, heads, hd, static_cast<int>(extent(c, t.cols))));
    if (!w.empty()) ts.push_back({gguf_name(t, l), heads ? &permuted.back() : &w, gguf_shape(c, t)});
    if (t.model_member == &LlamaModel::token_embedding && !c.rope_freq_factors.empty())
      ts.push_back({"rope_freqs.weight", &c.rope_freq_factors, {static_cast<std::uint64_t>(c.rope_freq_factors.size())}});
  });

  b.put<std::uint32_t>(0x46554747);  // "GGUF"
  b.put<std::uint32_t>(3);
  b.put<std::uint64_t>(ts.size());
  b.put<std::uint64_t>(kv.entries().size());
  std::vector<std::uint8_t> meta;
  append_gguf_kvs(meta, kv.entries());
  for (std::uint8_t x : meta) b.put<std::uint8_t>(x);
  std::uint64_t offset = 0;
  for (const T& t : ts) {
    str(t.name);
    b.put<std::uint32_t>(static_cast<std::uint32_t>(t.ne.size()));
    for (auto d : t.ne) b.put<std::uint64_t>(d);
    b.put<std::uint32_t>(0);  // GGML_TYPE_F32
    b.put<std::uint64_t>(offset);
    offset += (t.data->size() * 4 + 31) / 32 * 32;
  }
  b.pad_to(32);
  for (const T& t : ts) {
    b.floats(*t.data);
    b.pad_to(32);
  }
  write_file_atomic(path, b.data());
}

void save_safetensors(const LlamaModel& m, const std::string& path) {
  validate(m);
  const LlamaConfig& c = m.config;
  // transformers' Llama has all four attention biases or none (attention_bias); Qwen2 has q/k/v.
  bool qkv = false, o = false, mixed = false;
  for (const auto& l : m.layers) {
    const bool lq = !l.bq.empty() && !l.bk.empty() && !l.bv.empty(), lo = !l.bo.empty();
    if ((lq != (!l.bq.empty() || !l.bk.empty() || !l.bv.empty())) || (&l != &m.layers[0] && (lq != qkv || lo != o)))
      mixed = true;
    qkv = lq, o = lo;
  }
  if (mixed || (o && !qkv)) throw Error(path + ": these attention biases fit neither Llama's attention_bias nor Qwen2's");
  if (!c.rope_freq_factors.empty())
    throw Error(path + ": config.json cannot hold RoPE frequency factors (Llama 3 scaling's parameters are not kept)");
  const bool qwen2 = qkv && !o, qwen3 = !m.layers.empty() && m.layers[0].q_norm.present();
  if (qwen2 && qwen3) throw Error(path + ": QK-norm with Qwen2's q/k/v biases fits no transformers architecture");
  struct T {
    std::string name;
    std::vector<float> data;
    std::vector<std::uint64_t> shape;
  };
  const int hd = c.head_dim();
  std::vector<T> ts;
  for_each_tensor(m.layers.size(), [&](const TensorSpec& t, std::size_t l) {
    const Weight& w = tensor_of(m, t, l);
    if (w.empty()) return;
    // HF stores q/k rows rotate-half within each head.
    const int heads = rope_heads(c, t);
    ts.push_back({hf_name(t, l), heads ? permute_hf(w, heads, hd, static_cast<int>(extent(c, t.cols))) : std::vector<float>(w), hf_shape(c, t)});
  });

  std::vector<SafetensorsTensor> st;
  st.reserve(ts.size());
  for (T& t : ts) st.push_back({t.name, "F32", t.shape, f32_bytes(t.data)});
  const std::vector<std::uint8_t> file = safetensors_file(st, {{"format", "pt"}});

  const std::string tied = m.tied() ? "true" : "false";
  const std::string type = qwen2 ? "qwen2" : qwen3 ? "qwen3" : "llama";
  const std::string arch = qwen2 ? "Qwen2ForCausalLM" : qwen3 ? "Qwen3ForCausalLM" : "LlamaForCausalLM";
  std::string cfg = "{\n  \"architectures\": [\"" + arch + "\"],\n  \"model_type\": \"" + type + "\",\n";
  cfg += "  \"hidden_size\": " + std::to_string(c.dim) + ",\n";
  cfg += "  \"intermediate_size\": " + std::to_string(c.hidden_dim) + ",\n";
  cfg += "  \"num_hidden_layers\": " + std::to_string(c.n_layers) + ",\n";
  cfg += "  \"num_attention_heads\": " + std::to_string(c.n_heads) + ",\n";
  cfg += "  \"num_key_value_heads\": " + std::to_string(c.n_kv_heads) + ",\n";
  cfg += "  \"head_dim\": " + std::to_string(hd) + ",\n";
  cfg += "  \"vocab_size\": " + std::to_string(c.vocab_size) + ",\n";
  cfg += "  \"max_position_embeddings\": " + std::to_string(c.seq_len) + ",\n";
  cfg += "  \"rms_norm_eps\": " + float_text(c.norm_eps) + ",\n";
  cfg += "  \"rope_theta\": " + float_text(c.rope_theta) + ",\n";
  if (c.rope_freq_scale != 1.0f)
    cfg += "  \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": " +
           float_text(static_cast<float>(1.0 / static_cast<double>(c.rope_freq_scale))) + "},\n";
  cfg += std::string("  \"hidden_act\": \"silu\",\n  \"attention_bias\": ") + (qkv && o ? "true" : "false") +
         ",\n  \"mlp_bias\": false,\n";
  if (byte_vocab(c.vocab_size) && c.vocab_size > 257) cfg += "  \"bos_token_id\": 256,\n  \"eos_token_id\": 257,\n";
  cfg += "  \"tie_word_embeddings\": " + tied + ",\n  \"torch_dtype\": \"float32\"\n}\n";
  const std::filesystem::path config = std::filesystem::path(path).parent_path() / "config.json";
  write_file_atomic(path, file);
  write_file_atomic(config.string(), cfg);
}

}  // namespace lowp::accuracy::detail
