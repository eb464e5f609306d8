// llama2.c checkpoints: the legacy format (7 int32 header fields, then float32 tensors in
// llama2.c order) and the int8 export of export.py / runq.c (magic "ak42", version 2: a
// 256-byte header, float32 norms, then each weight as int8 codes followed by float32 scales
// of groups of group_size consecutive elements, x = q * s).
#include <cstring>

#include "lowp/accuracy/loaders.hpp"
#include "file/mapped_file.hpp"

namespace lowp::accuracy {

using detail::ByteReader;
using detail::Bytes;
using detail::checked_add;
using detail::checked_mul;

namespace {

constexpr std::uint32_t kQ80Magic = 0x616b3432;  // "ak42" as a little-endian uint32: bytes "24ka"

LlamaModel load_q80(std::span<const std::uint8_t> bytes, const std::string& name) {
  ByteReader r(bytes, name);
  r.read<std::uint32_t>("magic");
  const auto version = r.read<std::int32_t>("version");
  if (version != 2)
    r.fail("llama2.c export version " + std::to_string(version) + " is not supported (2, the int8 Q8_0 export)");
  static constexpr const char* fields[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                            "n_kv_heads", "vocab_size", "seq_len"};
  std::int32_t h[7];
  for (int i = 0; i < 7; ++i) h[i] = r.read<std::int32_t>(std::string("header field ") + fields[i]);
  const auto shared = r.read<std::uint8_t>("header field shared_classifier");
  const auto gs = r.read<std::int32_t>("header field group_size");
  if (shared > 1) r.fail("header field shared_classifier is " + std::to_string(shared) + ", must be 0 or 1");
  if (gs <= 0 || gs > (1 << 20)) r.fail("header field group_size is " + std::to_string(gs) + ", must be in [1, 2^20]");

  LlamaModel m;
  m.source = "llama2c";
  m.path = name;
  LlamaConfig& c = m.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = h[5];
  c.seq_len = h[6];
  validate(c, name);

  const std::uint64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, kv = c.kv_dim(), vocab = c.vocab_size;
  const std::string what = name + ": the header's tensor sizes";
  auto mul = [&](std::uint64_t a, std::uint64_t b) { return checked_mul(a, b, what); };
  auto add = [&](std::uint64_t a, std::uint64_t b) { return checked_add(a, b, what); };
  // Each quantized tensor: n int8 codes and n / group_size float32 scales.
  const std::uint64_t group = static_cast<std::uint64_t>(gs);
  auto qbytes = [&](std::uint64_t n, const char* t) {
    if (n % group != 0)
      r.fail(std::string("tensor ") + t + " has " + std::to_string(n) + " elements, not a multiple of group_size " +
             std::to_string(gs));
    return add(n, mul(n / group, 4));
  };
  std::uint64_t want = add(256, mul(4, add(mul(mul(2, layers), dim), dim)));
  want = add(want, qbytes(mul(vocab, dim), "tok_embeddings"));
  const std::uint64_t per_layer[7] = {dim * dim, kv * dim, kv * dim, dim * dim, hidden * dim, dim * hidden, hidden * dim};
  static constexpr const char* names[7] = {"wq", "wk", "wv", "wo", "w1", "w2", "w3"};
  for (int t = 0; t < 7; ++t) want = add(want, mul(layers, qbytes(per_layer[t], names[t])));
  if (!shared) want = add(want, qbytes(mul(vocab, dim), "output"));
  if (want != bytes.size())
    r.fail("header (dim " + std::to_string(c.dim) + ", hidden_dim " + std::to_string(c.hidden_dim) + ", n_layers " +
           std::to_string(c.n_layers) + ", n_heads " + std::to_string(c.n_heads) + ", n_kv_heads " +
           std::to_string(c.n_kv_heads) + ", vocab_size " + std::to_string(c.vocab_size) + ", group_size " +
           std::to_string(gs) + ", shared_classifier " + std::to_string(shared) + ") implies " + std::to_string(want) +
           " bytes, the file has " + std::to_string(bytes.size()));

  r.seek(256, "weights");
  auto read_f32 = [&](std::vector<float>& v, std::uint64_t n, const std::string& field) {
    v.resize(n);
    std::memcpy(v.data(), r.take(n * 4, field).data(), n * 4);
  };
  auto read_q = [&](std::vector<float>& v, std::uint64_t n, const std::string& field) {
    const Bytes q = r.take(n, field + " codes");
    const Bytes s = r.take(n / group * 4, field + " scales");
    v.resize(n);
    for (std::uint64_t g = 0; g < n / group; ++g) {
      float scale;
      std::memcpy(&scale, s.data() + 4 * g, 4);
      for (std::uint64_t i = g * group; i < (g + 1) * group; ++i)
        v[i] = static_cast<float>(static_cast<std::int8_t>(q[i])) * scale;
    }
  };
  m.layers.resize(c.n_layers);
  for (auto& l : m.layers) read_f32(l.attn_norm, dim, "rms_att_weight");
  for (auto& l : m.layers) read_f32(l.ffn_norm, dim, "rms_ffn_weight");
  read_f32(m.final_norm, dim, "rms_final_weight");
  read_q(m.token_embedding, vocab * dim, "tok_embeddings");
  std::vector<float> LayerWeights::*const members[7] = {&LayerWeights::wq,     &LayerWeights::wk,     &LayerWeights::wv,
                                                         &LayerWeights::wo,     &LayerWeights::w_gate, &LayerWeights::w_down,
                                                         &LayerWeights::w_up};
  for (int t = 0; t < 7; ++t)
    for (auto& l : m.layers) read_q(l.*members[t], per_layer[t], names[t]);
  if (!shared) read_q(m.classifier, vocab * dim, "output");
  validate(m);
  return m;
}

}  // namespace

LlamaModel load_llama2c_bytes(std::span<const std::uint8_t> bytes, const std::string& name) {
  if (bytes.size() >= 4) {
    std::uint32_t magic;
    std::memcpy(&magic, bytes.data(), 4);
    if (magic == kQ80Magic) return load_q80(bytes, name);
  }
  ByteReader r(bytes, name);
  static constexpr const char* fields[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                            "n_kv_heads", "vocab_size", "seq_len"};
  std::int32_t h[7];
  for (int i = 0; i < 7; ++i) h[i] = r.read<std::int32_t>(std::string("header field ") + fields[i]);

  LlamaModel m;
  m.source = "llama2c";
  m.path = name;
  LlamaConfig& c = m.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  // A negative vocab size marks a separate classifier (llama2.c's convention).
  const bool shared = h[5] > 0;
  c.vocab_size = h[5] == INT32_MIN ? 0 : (h[5] < 0 ? -h[5] : h[5]);
  c.seq_len = h[6];
  validate(c, name);

  const std::uint64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, kv = c.kv_dim(),
                      vocab = c.vocab_size, hd = c.head_dim(), seq = c.seq_len;
  const std::string what = name + ": the header's tensor sizes";
  auto mul = [&](std::uint64_t a, std::uint64_t b) { return checked_mul(a, b, what); };
  auto add = [&](std::uint64_t a, std::uint64_t b) { return checked_add(a, b, what); };
  std::uint64_t per_layer = add(add(mul(2, dim), mul(2, mul(dim, dim))),
                                add(mul(2, mul(dim, kv)), mul(3, mul(dim, hidden))));
  std::uint64_t floats = add(mul(vocab, dim), mul(layers, per_layer));
  floats = add(floats, add(dim, mul(seq, hd)));  // rms_final, freq_cis_real + freq_cis_imag
  if (!shared) floats = add(floats, mul(vocab, dim));
  const std::uint64_t want = add(28, mul(floats, 4));
  if (want != bytes.size())
    r.fail("header (dim " + std::to_string(c.dim) + ", hidden_dim " + std::to_string(c.hidden_dim) +
           ", n_layers " + std::to_string(c.n_layers) + ", n_heads " + std::to_string(c.n_heads) +
           ", n_kv_heads " + std::to_string(c.n_kv_heads) + ", vocab_size " + std::to_string(h[5]) +
           ", seq_len " + std::to_string(c.seq_len) + ") implies " + std::to_string(want) +
           " bytes, the file has " + std::to_string(bytes.size()));

  auto read = [&](std::vector<float>& v, std::uint64_t n, const std::string& field) {
    v.resize(n);
    std::memcpy(v.data(), r.take(n * 4, field).data(), n * 4);
  };
  m.layers.resize(c.n_layers);
  read(m.token_embedding, vocab * dim, "token_embedding");
  // Each tensor kind holds all layers back to back.
  auto per_layer_tensor = [&](std::vector<float> LayerWeights::*t, std::uint64_t n, const char* field) {
    for (auto& l : m.layers) read(l.*t, n, field);
  };
  per_layer_tensor(&LayerWeights::attn_norm, dim, "rms_att_weight");
  per_layer_tensor(&LayerWeights::wq, dim * dim, "wq");
  per_layer_tensor(&LayerWeights::wk, kv * dim, "wk");
  per_layer_tensor(&LayerWeights::wv, kv * dim, "wv");
  per_layer_tensor(&LayerWeights::wo, dim * dim, "wo");
  per_layer_tensor(&LayerWeights::ffn_norm, dim, "rms_ffn_weight");
  per_layer_tensor(&LayerWeights::w_gate, hidden * dim, "w1");
  per_layer_tensor(&LayerWeights::w_down, dim * hidden, "w2");
  per_layer_tensor(&LayerWeights::w_up, hidden * dim, "w3");
  read(m.final_norm, dim, "rms_final_weight");
  r.take(seq * hd * 4, "freq_cis");  // precomputed RoPE tables: recomputed from rope_theta
  if (!shared) read(m.classifier, vocab * dim, "wcls");
  validate(m);
  return m;
}

LlamaModel load_llama2c(const std::string& path) {
  detail::MappedFile f(path);
  return load_llama2c_bytes(f.bytes(), path);
}

}  // namespace lowp::accuracy
