#include "model/tensors.hpp"

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy::detail {

std::size_t extent(const LlamaConfig& c, Extent e) {
  switch (e) {
    case Extent::one: return 1;
    case Extent::dim: return static_cast<std::size_t>(c.dim);
    case Extent::hidden: return static_cast<std::size_t>(c.hidden_dim);
    case Extent::q_dim: return static_cast<std::size_t>(c.q_dim());
    case Extent::kv_dim: return static_cast<std::size_t>(c.kv_dim());
    case Extent::head_dim: return static_cast<std::size_t>(c.head_dim());
    case Extent::vocab: return static_cast<std::size_t>(c.vocab_size);
  }
  return 0;
}

const TensorSpec& linear_tensor(LinearKind kind) {
  for (const TensorSpec& t : kTensors)
    if (t.linear == kind) return t;
  throw Error("linear_tensor: no tensor for linear " + std::string(linear_kind_name(kind)));
}

Weight& tensor_of(LlamaModel& m, const TensorSpec& spec, std::size_t layer) {
  return spec.per_layer ? m.layers.at(layer).*spec.layer_member : m.*spec.model_member;
}

const Weight& tensor_of(const LlamaModel& m, const TensorSpec& spec, std::size_t layer) {
  return spec.per_layer ? m.layers.at(layer).*spec.layer_member : m.*spec.model_member;
}

std::size_t tensor_size(const LlamaConfig& c, const TensorSpec& spec) {
  return extent(c, spec.rows) * extent(c, spec.cols);
}

std::string gguf_name(const TensorSpec& spec, std::size_t layer) {
  return spec.per_layer ? "blk." + std::to_string(layer) + "." + spec.gguf : std::string(spec.gguf);
}

std::string hf_name(const TensorSpec& spec, std::size_t layer) {
  return spec.per_layer ? "model.layers." + std::to_string(layer) + "." + spec.hf : std::string(spec.hf);
}

std::vector<std::uint64_t> gguf_shape(const LlamaConfig& c, const TensorSpec& spec) {
  if (spec.cols == Extent::one) return {extent(c, spec.rows)};
  return {extent(c, spec.cols), extent(c, spec.rows)};
}

std::vector<std::uint64_t> hf_shape(const LlamaConfig& c, const TensorSpec& spec) {
  if (spec.cols == Extent::one) return {extent(c, spec.rows)};
  return {extent(c, spec.rows), extent(c, spec.cols)};
}

int rope_heads(const LlamaConfig& c, const TensorSpec& spec) {
  switch (spec.rope) {
    case RopeRows::none: return 0;
    case RopeRows::q_heads: return c.n_heads;
    case RopeRows::kv_heads: return c.n_kv_heads;
    case RopeRows::one_head: return 1;
  }
  return 0;
}

}  // namespace lowp::accuracy::detail
