// llama2.c checkpoints: the legacy format (7 int32 header fields, then float32 tensors in
// llama2.c order) and the int8 export of export.py / runq.c (magic "ak42", version 2: a
// 256-byte header, float32 norms, then each weight as int8 codes followed by float32 scales
// of groups of group_size consecutive elements, x = q * s).
#include <cstring>

#include "lowp/accuracy/loaders.hpp"
#include "file/mapped_file.hpp"
#include "model/tensors.hpp"

namespace lowp::accuracy {

using detail::ByteReader;
using detail::Bytes;
using detail::checked_add;
using detail::checked_mul;
using detail::Extent;
using detail::kTensors;
using detail::TensorSpec;
using detail::tensor_of;
using detail::tensor_size;

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

  const std::uint64_t layers = c.n_layers;
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
  // The norms in float32, every 2-D weight quantized (the classifier when not shared).
  std::uint64_t want = 256;
  for (const TensorSpec& t : kTensors) {
    if (!t.llama2c || (t.optional && shared)) continue;
    const std::uint64_t n = tensor_size(c, t);
    if (t.cols == Extent::one) want = add(want, mul(4, t.per_layer ? mul(layers, n) : n));
    else want = add(want, t.per_layer ? mul(layers, qbytes(n, t.llama2c)) : qbytes(n, t.llama2c));
  }
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
  // The file holds the norms first (each per-layer one for all layers back to back), then the
  // quantized weights in table order.
  for (bool quantized : {false, true})
    for (const TensorSpec& t : kTensors) {
      if (!t.llama2c || (t.cols != Extent::one) != quantized || (t.optional && shared)) continue;
      for (std::size_t l = 0; l < (t.per_layer ? m.layers.size() : 1); ++l) {
        Weight& w = tensor_of(m, t, l);
        if (quantized) read_q(w, tensor_size(c, t), t.llama2c);
        else read_f32(w, tensor_size(c, t), t.llama2c);
      }
    }
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

  const std::uint64_t layers = c.n_layers, hd = c.head_dim(), seq = c.seq_len;
  const std::string what = name + ": the header's tensor sizes";
  auto mul = [&](std::uint64_t a, std::uint64_t b) { return checked_mul(a, b, what); };
  auto add = [&](std::uint64_t a, std::uint64_t b) { return checked_add(a, b, what); };
  std::uint64_t floats = mul(seq, hd);  // freq_cis_real + freq_cis_imag
  for (const TensorSpec& t : kTensors)
    if (t.llama2c && !(t.optional && shared))
      floats = add(floats, t.per_layer ? mul(layers, tensor_size(c, t)) : tensor_size(c, t));
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
  // In table order, each per-layer tensor holding all layers back to back; the precomputed RoPE
  // tables (recomputed here from rope_theta) sit before the classifier.
  for (const TensorSpec& t : kTensors) {
    if (!t.llama2c) continue;
    if (t.model_member == &LlamaModel::classifier) {
      r.take(seq * hd * 4, "freq_cis");
      if (shared) continue;
    }
    for (std::size_t l = 0; l < (t.per_layer ? m.layers.size() : 1); ++l) read(tensor_of(m, t, l), tensor_size(c, t), t.llama2c);
  }
  validate(m);
  return m;
}

LlamaModel load_llama2c(const std::string& path) {
  detail::MappedFile f(path);
  return load_llama2c_bytes(f.bytes(), path);
}

}  // namespace lowp::accuracy
