// GGUF v3 (and v2, the same layout) checkpoints of the llama architecture: F32/F16/BF16 tensors, Q8_0 dequantized.
// llama.cpp's converter already permuted HF q/k to the interleaved RoPE order, as lowp uses.
#include <cmath>
#include <memory>

#include "io/ggml_weights.hpp"
#include "io/gguf_file.hpp"
#include "io/load_common.hpp"
#include "lowp/accuracy/loaders.hpp"

namespace lowp::accuracy {

using namespace detail;

namespace {

std::vector<float> tensor(const GgufFile& g, const std::string& name, std::vector<std::uint64_t> shape) {
  const GgufTensor* t = g.tensor(name);
  if (!t) g.fail("tensor '" + name + "' is missing");
  if (t->dims != shape) {
    auto fmt = [](const std::vector<std::uint64_t>& d) {
      std::string s = "[";
      for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
      return s + "]";
    };
    g.fail("tensor '" + name + "' has shape " + fmt(t->dims) + ", expected " + fmt(shape) + " (ne0 first)");
  }
  StoredType st;
  switch (t->type) {
    case ggml_f32: st = StoredType::f32; break;
    case ggml_f16: st = StoredType::f16; break;
    case ggml_bf16: st = StoredType::bf16; break;
    case ggml_q8_0: st = StoredType::q8_0; break;
    default:
      g.fail("tensor '" + name + "' has type " + ggml_type_name(t->type) +
             ", which lowp does not load (F32, F16, BF16 and Q8_0 only)");
  }
  return to_f32(st, t->data, t->elements);
}

// A 2-D weight left in the file (ne0 = cols), checked like tensor().
quant::StoredMatrix view(const GgufFile& g, const std::string& name, std::vector<std::uint64_t> shape) {
  const GgufTensor* t = g.tensor(name);
  if (t && t->dims == shape && ggml_mappable(t->type) && !t->data.empty())
    return ggml_matrix(t->type, t->data.data(), shape[1], shape[0]);
  tensor(g, name, shape);  // throws the loader's own message for a missing / misshapen / unreadable tensor
  g.fail("tensor '" + name + "' of type " + ggml_type_name(t->type) + " cannot be read in place");
}

// mapped: the 2-D weights stay in `file`'s mapping, which the model keeps alive.
LlamaModel load(std::span<const std::uint8_t> bytes, const std::string& name, std::shared_ptr<const MappedFile> file) {
  const GgufFile g(bytes, name);
  const auto arch = g.get_string("general.architecture");
  if (!arch) g.fail("metadata 'general.architecture' is missing");
  if (*arch != "llama") g.fail("architecture " + show_string(*arch) + " is not supported (llama only)");
  auto req_int = [&](const std::string& key) {
    const auto v = g.get_int("llama." + key);
    if (!v) g.fail("metadata 'llama." + key + "' is missing");
    return positive_int(*v, "llama." + key, name);
  };

  LlamaModel m;
  m.source = "gguf";
  m.path = name;
  LlamaConfig& c = m.config;
  c.dim = req_int("embedding_length");
  c.hidden_dim = req_int("feed_forward_length");
  c.n_layers = req_int("block_count");
  c.n_heads = req_int("attention.head_count");
  c.n_kv_heads = g.find("llama.attention.head_count_kv") ? req_int("attention.head_count_kv") : c.n_heads;
  c.seq_len = req_int("context_length");
  if (const auto eps = g.get_float("llama.attention.layer_norm_rms_epsilon")) c.norm_eps = static_cast<float>(*eps);
  if (const auto theta = g.get_float("llama.rope.freq_base")) c.rope_theta = static_cast<float>(*theta);
  const GgufTensor* emb = g.tensor("token_embd.weight");
  if (!emb) g.fail("tensor 'token_embd.weight' is missing");
  if (emb->dims.size() != 2) g.fail("tensor 'token_embd.weight' must have 2 dimensions");
  c.vocab_size = positive_int(static_cast<std::int64_t>(std::min<std::uint64_t>(emb->dims[1], INT64_MAX)),
                              "the vocabulary size (token_embd.weight ne1)", name);
  if (g.find("llama.vocab_size") && req_int("vocab_size") != c.vocab_size)
    g.fail("llama.vocab_size " + std::to_string(req_int("vocab_size")) + " disagrees with token_embd.weight (" +
           std::to_string(c.vocab_size) + " rows)");
  validate(c, name);

  const std::uint64_t dim = c.dim, hid = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  if (file) {
    auto mw = std::make_shared<MappedWeights>();
    mw->token_embedding = view(g, "token_embd.weight", {dim, vocab});
    for (int l = 0; l < c.n_layers; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      LayerWeights w;
      MappedLayer v;
      w.attn_norm = tensor(g, p + "attn_norm.weight", {dim});
      w.ffn_norm = tensor(g, p + "ffn_norm.weight", {dim});
      v.wq = view(g, p + "attn_q.weight", {dim, dim});
      v.wk = view(g, p + "attn_k.weight", {dim, kv});
      v.wv = view(g, p + "attn_v.weight", {dim, kv});
      v.wo = view(g, p + "attn_output.weight", {dim, dim});
      v.w_gate = view(g, p + "ffn_gate.weight", {dim, hid});
      v.w_down = view(g, p + "ffn_down.weight", {hid, dim});
      v.w_up = view(g, p + "ffn_up.weight", {dim, hid});
      m.layers.push_back(std::move(w));
      mw->layers.push_back(v);
    }
    m.final_norm = tensor(g, "output_norm.weight", {dim});
    if (g.tensor("output.weight")) mw->classifier = view(g, "output.weight", {dim, vocab});
    mw->owner = std::move(file);
    m.mapped = std::move(mw);
    validate(m);
    return m;
  }
  m.token_embedding = tensor(g, "token_embd.weight", {dim, vocab});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights w;
    w.attn_norm = tensor(g, p + "attn_norm.weight", {dim});
    w.wq = tensor(g, p + "attn_q.weight", {dim, dim});
    w.wk = tensor(g, p + "attn_k.weight", {dim, kv});
    w.wv = tensor(g, p + "attn_v.weight", {dim, kv});
    w.wo = tensor(g, p + "attn_output.weight", {dim, dim});
    w.ffn_norm = tensor(g, p + "ffn_norm.weight", {dim});
    w.w_gate = tensor(g, p + "ffn_gate.weight", {dim, hid});
    w.w_down = tensor(g, p + "ffn_down.weight", {hid, dim});
    w.w_up = tensor(g, p + "ffn_up.weight", {dim, hid});
    m.layers.push_back(std::move(w));
  }
  m.final_norm = tensor(g, "output_norm.weight", {dim});
  if (g.tensor("output.weight")) m.classifier = tensor(g, "output.weight", {dim, vocab});  // absent: tied
  validate(m);
  return m;
}

}  // namespace

LlamaModel load_gguf_bytes(std::span<const std::uint8_t> bytes, const std::string& name) {
  return load(bytes, name, nullptr);
}

LlamaModel load_gguf(const std::string& path, WeightStorage storage) {
  auto f = std::make_shared<const MappedFile>(path);
  return load(f->bytes(), path, storage == WeightStorage::mapped ? f : nullptr);
}

}  // namespace lowp::accuracy
