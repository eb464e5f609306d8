// Checkpoint writers: llama2.c .bin, GGUF v3 (F32), safetensors + config.json.
#include "io/save_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "file/atomic_file.hpp"
#include "io/gguf_meta.hpp"
#include "io/safetensors_file.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {
namespace {

class Buffer {
 public:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b_.insert(b_.end(), p, p + sizeof(T));
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
  for (const auto& l : m.layers)
    if (!l.bq.empty() || !l.bk.empty() || !l.bv.empty() || !l.bo.empty()) return "attention biases";
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
  const bool tied = m.classifier.empty();
  for (int v : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, tied ? c.vocab_size : -c.vocab_size,
                c.seq_len})
    b.put<std::int32_t>(v);
  b.floats(m.token_embedding);
  for (auto t : {&LayerWeights::attn_norm, &LayerWeights::wq, &LayerWeights::wk, &LayerWeights::wv, &LayerWeights::wo,
                 &LayerWeights::ffn_norm, &LayerWeights::w_gate, &LayerWeights::w_down, &LayerWeights::w_up})
    for (const auto& l : m.layers) b.floats(l.*t);
  b.floats(m.final_norm);
  const int hd = c.head_dim();
  for (int part = 0; part < 2; ++part)  // freq_cis_real, freq_cis_imag (llama2.c's export)
    for (int pos = 0; pos < c.seq_len; ++pos)
      for (int i = 0; i < hd / 2; ++i) {
        const double angle = pos * std::pow(static_cast<double>(c.rope_theta), -2.0 * i / hd);
        b.put<float>(static_cast<float>(part == 0 ? std::cos(angle) : std::sin(angle)));
      }
  if (!tied) b.floats(m.classifier);
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
  GgufMetaWriter kv;
  kv.str("general.architecture", "llama");
  kv.str("general.name", "lowp");
  kv.u32("general.alignment", 32);
  const std::pair<const char*, int> ints[] = {{"llama.context_length", c.seq_len},
                                               {"llama.embedding_length", c.dim},
                                               {"llama.block_count", c.n_layers},
                                               {"llama.feed_forward_length", c.hidden_dim},
                                               {"llama.rope.dimension_count", c.head_dim()},
                                               {"llama.attention.head_count", c.n_heads},
                                               {"llama.attention.head_count_kv", c.n_kv_heads},
                                               {"llama.vocab_size", c.vocab_size}};
  for (const auto& [k, v] : ints) kv.u32(k, static_cast<std::uint32_t>(v));
  if (c.head_size != 0) {  // head_dim other than dim / n_heads
    kv.u32("llama.attention.key_length", static_cast<std::uint32_t>(c.head_size));
    kv.u32("llama.attention.value_length", static_cast<std::uint32_t>(c.head_size));
  }
  kv.f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  kv.f32("llama.rope.freq_base", c.rope_theta);
  if (c.rope_freq_scale != 1.0f) {  // the loader reads back 1 / factor
    kv.str("llama.rope.scaling.type", "linear");
    kv.f32("llama.rope.scaling.factor", static_cast<float>(1.0 / static_cast<double>(c.rope_freq_scale)));
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
  const std::uint64_t dim = c.dim, hid = c.hidden_dim, kvd = c.kv_dim(), vocab = c.vocab_size, qd = c.q_dim();
  std::vector<T> ts = {{"token_embd.weight", &m.token_embedding, {dim, vocab}}};
  if (!c.rope_freq_factors.empty())
    ts.push_back({"rope_freqs.weight", &c.rope_freq_factors, {static_cast<std::uint64_t>(c.rope_freq_factors.size())}});
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const auto& w = m.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    ts.push_back({p + "attn_norm.weight", &w.attn_norm, {dim}});
    ts.push_back({p + "attn_q.weight", &w.wq, {dim, qd}});
    ts.push_back({p + "attn_k.weight", &w.wk, {dim, kvd}});
    ts.push_back({p + "attn_v.weight", &w.wv, {dim, kvd}});
    ts.push_back({p + "attn_output.weight", &w.wo, {qd, dim}});
    // The llama architecture's biases, in lowp's (interleaved) row order as the loader reads them.
    if (!w.bq.empty()) ts.push_back({p + "attn_q.bias", &w.bq, {qd}});
    if (!w.bk.empty()) ts.push_back({p + "attn_k.bias", &w.bk, {kvd}});
    if (!w.bv.empty()) ts.push_back({p + "attn_v.bias", &w.bv, {kvd}});
    if (!w.bo.empty()) ts.push_back({p + "attn_output.bias", &w.bo, {dim}});
    ts.push_back({p + "ffn_norm.weight", &w.ffn_norm, {dim}});
    ts.push_back({p + "ffn_gate.weight", &w.w_gate, {dim, hid}});
    ts.push_back({p + "ffn_down.weight", &w.w_down, {hid, dim}});
    ts.push_back({p + "ffn_up.weight", &w.w_up, {dim, hid}});
  }
  ts.push_back({"output_norm.weight", &m.final_norm, {dim}});
  if (!m.classifier.empty()) ts.push_back({"output.weight", &m.classifier, {dim, vocab}});

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
  const bool qwen2 = qkv && !o;
  struct T {
    std::string name;
    std::vector<float> data;
    std::vector<std::uint64_t> shape;
  };
  const std::uint64_t dim = c.dim, hid = c.hidden_dim, kvd = c.kv_dim(), vocab = c.vocab_size, qd = c.q_dim();
  const int hd = c.head_dim();
  std::vector<T> ts = {{"model.embed_tokens.weight", m.token_embedding, {vocab, dim}}};
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const auto& w = m.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    ts.push_back({p + "input_layernorm.weight", w.attn_norm, {dim}});
    ts.push_back({p + "self_attn.q_proj.weight", permute_hf(w.wq, c.n_heads, hd, c.dim), {qd, dim}});
    ts.push_back({p + "self_attn.k_proj.weight", permute_hf(w.wk, c.n_kv_heads, hd, c.dim), {kvd, dim}});
    ts.push_back({p + "self_attn.v_proj.weight", w.wv, {kvd, dim}});
    ts.push_back({p + "self_attn.o_proj.weight", w.wo, {dim, qd}});
    if (qkv) {
      ts.push_back({p + "self_attn.q_proj.bias", permute_hf(w.bq, c.n_heads, hd, 1), {qd}});
      ts.push_back({p + "self_attn.k_proj.bias", permute_hf(w.bk, c.n_kv_heads, hd, 1), {kvd}});
      ts.push_back({p + "self_attn.v_proj.bias", w.bv, {kvd}});
    }
    if (o) ts.push_back({p + "self_attn.o_proj.bias", w.bo, {dim}});
    ts.push_back({p + "post_attention_layernorm.weight", w.ffn_norm, {dim}});
    ts.push_back({p + "mlp.gate_proj.weight", w.w_gate, {hid, dim}});
    ts.push_back({p + "mlp.down_proj.weight", w.w_down, {dim, hid}});
    ts.push_back({p + "mlp.up_proj.weight", w.w_up, {hid, dim}});
  }
  ts.push_back({"model.norm.weight", m.final_norm, {dim}});
  if (!m.classifier.empty()) ts.push_back({"lm_head.weight", m.classifier, {vocab, dim}});

  std::vector<SafetensorsTensor> st;
  st.reserve(ts.size());
  for (T& t : ts) st.push_back({t.name, "F32", t.shape, f32_bytes(t.data)});
  const std::vector<std::uint8_t> file = safetensors_file(st, {{"format", "pt"}});

  const std::string tied = m.classifier.empty() ? "true" : "false";
  std::string cfg = qwen2 ? "{\n  \"architectures\": [\"Qwen2ForCausalLM\"],\n  \"model_type\": \"qwen2\",\n"
                          : "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n";
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
