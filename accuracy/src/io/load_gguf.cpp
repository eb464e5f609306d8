// GGUF v3 (and v2, the same layout) checkpoints of the llama, qwen2 and qwen3 architectures;
// every tensor type io/ggml decodes is widened to float32. llama.cpp's converter permutes a
// llama's HF q/k rows to the interleaved RoPE order lowp uses; qwen2 and qwen3 keep HF's
// rotate-half order (llama.cpp runs them with NEOX RoPE), so their q/k rows, biases and QK-norm
// gains are permuted here.
#include <cmath>
#include <memory>

#include "io/ggml/ggml_types.hpp"
#include "io/ggml_weights.hpp"
#include "io/gguf_file.hpp"
#include "io/load_common.hpp"
#include "lowp/accuracy/loaders.hpp"
#include "model/tensors.hpp"

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
  if (!ggml::can_dequantize(t->type))
    g.fail("tensor '" + name + "' has type " + ggml_type_name(t->type) +
           ", which lowp does not load (F32, F16, BF16, the Q, K, IQ and TQ block types and MXFP4)");
  std::vector<float> out(t->elements);
  ggml::dequantize(t->type, t->data.data(), out.data(), out.size());
  return out;
}

// What a mapped model's views point into: the file, (qwen2) the q/k row orders, and the
// float32 copies of any weight whose type cannot be widened in place.
struct GgufMapping {
  std::shared_ptr<const MappedFile> file;
  std::vector<std::uint32_t> q_rows, k_rows;
  std::vector<std::vector<float>> widened;
};

// A 2-D weight left in the file (ne0 = cols), checked like tensor().
quant::StoredMatrix view(const GgufFile& g, GgufMapping& mapping, const std::string& name,
                         std::vector<std::uint64_t> shape) {
  const GgufTensor* t = g.tensor(name);
  if (t && t->dims == shape && ggml_mappable(t->type) && !t->data.empty())
    return ggml_matrix(t->type, t->data.data(), shape[1], shape[0]);
  mapping.widened.push_back(tensor(g, name, shape));  // throws the loader's message for a bad tensor
  return {quant::StoredType::f32, mapping.widened.back().data(), shape[1], shape[0]};
}

// mapped: the 2-D weights stay in `file`'s mapping, which the model keeps alive.
LlamaModel load(std::span<const std::uint8_t> bytes, const std::string& name, std::shared_ptr<const MappedFile> file) {
  const GgufFile g(bytes, name);
  const auto arch = g.get_string("general.architecture");
  if (!arch) g.fail("metadata 'general.architecture' is missing");
  if (*arch != "llama" && *arch != "qwen2" && *arch != "qwen3")
    g.fail("architecture " + show_string(*arch) + " is not supported (llama, qwen2, qwen3)");
  const std::string a = *arch + ".";
  auto req_int = [&](const std::string& key) {
    const auto v = g.get_int(a + key);
    if (!v) g.fail("metadata '" + a + key + "' is missing");
    return positive_int(*v, a + key, name);
  };

  LlamaModel m;
  m.source = "gguf";
  m.path = name;
  LlamaConfig& c = m.config;
  c.dim = req_int("embedding_length");
  c.hidden_dim = req_int("feed_forward_length");
  c.n_layers = req_int("block_count");
  c.n_heads = req_int("attention.head_count");
  c.n_kv_heads = g.find(a + "attention.head_count_kv") ? req_int("attention.head_count_kv") : c.n_heads;
  c.seq_len = req_int("context_length");
  if (const auto eps = g.get_float(a + "attention.layer_norm_rms_epsilon")) c.norm_eps = static_cast<float>(*eps);
  if (const auto theta = g.get_float(a + "rope.freq_base")) c.rope_theta = static_cast<float>(*theta);
  if (g.find(a + "attention.key_length")) {
    c.head_size = req_int("attention.key_length");
    if (g.find(a + "attention.value_length") && req_int("attention.value_length") != c.head_size)
      g.fail(a + "attention.value_length differs from key_length, which lowp does not support");
  }
  if (g.find(a + "rope.dimension_count") && c.n_heads > 0 &&
      req_int("rope.dimension_count") != (c.head_size ? c.head_size : c.dim / c.n_heads))
    g.fail(a + "rope.dimension_count " + std::to_string(req_int("rope.dimension_count")) +
           " is not the head size: partial RoPE is not supported");
  // Linear RoPE scaling (rope.scaling.*, or the older rope.scale_linear); Llama 3's scaling
  // arrives as the rope_freqs.weight tensor instead.
  const std::string scaling = g.get_string(a + "rope.scaling.type").value_or("none");
  if (scaling == "linear") {
    const auto f = g.get_float(a + "rope.scaling.factor");
    if (!f || !(*f > 0)) g.fail(a + "rope.scaling.factor must be a positive number for linear scaling");
    c.rope_freq_scale = static_cast<float>(1.0 / *f);
  } else if (scaling != "none") {
    g.fail("RoPE scaling type " + show_string(scaling) + " is not supported (linear, none)");
  } else if (const auto f = g.get_float(a + "rope.scale_linear"); f && *f != 1.0) {
    if (!(*f > 0)) g.fail(a + "rope.scale_linear must be positive");
    c.rope_freq_scale = static_cast<float>(1.0 / *f);
  }
  const GgufTensor* emb = g.tensor("token_embd.weight");
  if (!emb) g.fail("tensor 'token_embd.weight' is missing");
  if (emb->dims.size() != 2) g.fail("tensor 'token_embd.weight' must have 2 dimensions");
  c.vocab_size = positive_int(static_cast<std::int64_t>(std::min<std::uint64_t>(emb->dims[1], INT64_MAX)),
                              "the vocabulary size (token_embd.weight ne1)", name);
  if (g.find(a + "vocab_size") && req_int("vocab_size") != c.vocab_size)
    g.fail(a + "vocab_size " + std::to_string(req_int("vocab_size")) + " disagrees with token_embd.weight (" +
           std::to_string(c.vocab_size) + " rows)");
  validate(c, name, !file);
  if (g.tensor("rope_freqs.weight")) {
    c.rope_freq_factors = tensor(g, "rope_freqs.weight", {static_cast<std::uint64_t>(c.head_dim() / 2)});
    validate(c, name, !file);
  }

  const bool neox = *arch == "qwen2" || *arch == "qwen3";
  const int hd = c.head_dim();
  // Mapped: the 2-D views point into the file and, for qwen2, at the q/k row orders kept beside it.
  std::shared_ptr<GgufMapping> mapping;
  if (file) {
    mapping = std::make_shared<GgufMapping>();
    mapping->file = std::move(file);
  }
  // Every block has tensors: a larger count fails before the layers are allocated (a corrupt
  // block_count would otherwise size the model first).
  if (static_cast<std::uint64_t>(c.n_layers) > g.tensors().size())
    g.fail("metadata '" + a + "block_count' is " + std::to_string(c.n_layers) + ", more than the file's " +
           std::to_string(g.tensors().size()) + " tensors");
  m.layers.resize(static_cast<std::size_t>(c.n_layers));
  for_each_tensor(m.layers.size(), [&](const TensorSpec& t, std::size_t l) {
    const std::string n = gguf_name(t, l);
    if (t.optional && !g.tensor(n)) return;  // absent: no bias, a tied classifier
    const std::vector<std::uint64_t> shape = gguf_shape(c, t);
    if (const GgufTensor* x = g.tensor(n); t.rope == RopeRows::one_head && x && x->elements != shape[0])
      g.fail("tensor '" + n + "' has " + std::to_string(x->elements) + " elements, not head_dim " +
             std::to_string(shape[0]) + ": lowp supports QK-norm per head (Qwen3), not over the whole projection (OLMo 2)");
    Weight& w = tensor_of(m, t, l);
    const int heads = neox ? rope_heads(c, t) : 0;  // rotate-half rows to interleaved pairs (qwen2 only)
    if (mapping && t.cols != Extent::one) {
      w.stored = view(g, *mapping, n, shape);
      if (heads) {
        auto& rows = heads == c.n_heads ? mapping->q_rows : mapping->k_rows;
        if (rows.empty()) rows = hf_row_map(heads, hd);
        w.stored.row_map = rows.data();
      }
      return;
    }
    w = tensor(g, n, shape);
    if (heads) w = unpermute(w, heads, hd, static_cast<int>(extent(c, t.cols)));
  });
  if (mapping) m.mapped = std::move(mapping);
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
