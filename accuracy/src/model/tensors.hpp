// The Llama's tensors, named once (as llama.cpp's llama-arch.cpp tensor names and llm.c's
// fill_in_parameter_sizes): for each its role, its names in lowp, GGUF, Hugging Face and
// llama2.c, its shape from the config and the activation that feeds it. The loaders, savers,
// validation, prepare, calibration and both trainers loop over this table.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lowp/accuracy/model.hpp"
#include "lowp/accuracy/recipe.hpp"

namespace lowp::accuracy::detail {

// A side of a tensor's shape, from the config.
enum class Extent { one, dim, hidden, q_dim, kv_dim, head_dim, vocab };
std::size_t extent(const LlamaConfig& c, Extent e);

// The rows of q/k tensors (and the QK-norm gains over a head) are in RoPE's pair order. Hugging Face (and GGUF's NEOX-RoPE
// architectures) store each head rotate-half; the loaders turn them to lowp's interleaved pairs
// (`heads` heads of head_dim rows).
enum class RopeRows { none, q_heads, kv_heads, one_head };

// The activation a tensor reads: what calibration captures for a linear.
enum class Feed {
  tokens,      // the embedding: token ids
  residual,    // the RMSNorms before attention, the FFN and the classifier: the residual stream
  attn_in,     // q/k/v and their biases: attn_norm's output
  q_out,       // QK-norm of q: each head of the q projection's output (bias added)
  k_out,       // QK-norm of k: each head of the k projection's output (bias added)
  o_in,        // o_proj: the attention output
  ffn_in,      // gate/up: ffn_norm's output
  down_in,     // down: silu(gate) * up
  final_in,    // the classifier: the final RMSNorm's output
};

struct TensorSpec {
  const char* role;
  const char* lowp;        // LayerWeights / LlamaModel member; "layer <l> <lowp>" in errors
  const char* checkpoint;  // training checkpoints: "layers.<l>.<checkpoint>" or this for model tensors
  const char* gguf;        // "blk.<l>.<gguf>" for a layer tensor
  const char* hf;          // "model.layers.<l>.<hf>" for a layer tensor
  const char* llama2c;     // run.c's TransformerWeights field; nullptr: llama2.c's format cannot hold it
  Extent rows, cols;       // out x in (cols one: a vector of `rows`)
  bool per_layer;
  const char* optional;    // may be absent: the feature it belongs to (attention biases, ...); nullptr: required
  RopeRows rope;
  std::optional<LinearKind> linear;  // a linear of the recipe (weights.<kind>, act.<kind>)
  Feed feed;
  Weight LayerWeights::*layer_member;  // per_layer
  Weight LlamaModel::*model_member;    // !per_layer
};

// In file order (GGUF, safetensors, llama2.c and training checkpoints): the embedding, each
// layer's tensors, the final norm, the classifier.
inline constexpr TensorSpec kTensorRows[] = {
    {"token embedding", "token_embedding", "tok_embeddings", "token_embd.weight", "model.embed_tokens.weight",
     "token_embedding_table", Extent::vocab, Extent::dim, false, nullptr, RopeRows::none, std::nullopt, Feed::tokens,
     nullptr, &LlamaModel::token_embedding},
    {"RMSNorm gain before attention", "attn_norm", "attn_norm", "attn_norm.weight", "input_layernorm.weight",
     "rms_att_weight", Extent::dim, Extent::one, true, nullptr, RopeRows::none, std::nullopt, Feed::residual,
     &LayerWeights::attn_norm, nullptr},
    {"query projection", "wq", "wq", "attn_q.weight", "self_attn.q_proj.weight", "wq", Extent::q_dim, Extent::dim,
     true, nullptr, RopeRows::q_heads, LinearKind::wq, Feed::attn_in, &LayerWeights::wq, nullptr},
    {"key projection", "wk", "wk", "attn_k.weight", "self_attn.k_proj.weight", "wk", Extent::kv_dim, Extent::dim,
     true, nullptr, RopeRows::kv_heads, LinearKind::wk, Feed::attn_in, &LayerWeights::wk, nullptr},
    {"value projection", "wv", "wv", "attn_v.weight", "self_attn.v_proj.weight", "wv", Extent::kv_dim, Extent::dim,
     true, nullptr, RopeRows::none, LinearKind::wv, Feed::attn_in, &LayerWeights::wv, nullptr},
    {"attention output projection", "wo", "wo", "attn_output.weight", "self_attn.o_proj.weight", "wo", Extent::dim,
     Extent::q_dim, true, nullptr, RopeRows::none, LinearKind::wo, Feed::o_in, &LayerWeights::wo, nullptr},
    {"query bias", "bq", "bq", "attn_q.bias", "self_attn.q_proj.bias", nullptr, Extent::q_dim, Extent::one, true, "attention biases",
     RopeRows::q_heads, std::nullopt, Feed::attn_in, &LayerWeights::bq, nullptr},
    {"key bias", "bk", "bk", "attn_k.bias", "self_attn.k_proj.bias", nullptr, Extent::kv_dim, Extent::one, true, "attention biases",
     RopeRows::kv_heads, std::nullopt, Feed::attn_in, &LayerWeights::bk, nullptr},
    {"value bias", "bv", "bv", "attn_v.bias", "self_attn.v_proj.bias", nullptr, Extent::kv_dim, Extent::one, true, "attention biases",
     RopeRows::none, std::nullopt, Feed::attn_in, &LayerWeights::bv, nullptr},
    {"attention output bias", "bo", "bo", "attn_output.bias", "self_attn.o_proj.bias", nullptr, Extent::dim,
     Extent::one, true, "attention biases", RopeRows::none, std::nullopt, Feed::o_in, &LayerWeights::bo, nullptr},
    // Qwen3's per-head form (OLMo 2 normalizes the whole q_dim-wide projection instead: not supported).
    {"QK-norm gain over each query head", "q_norm", "q_norm", "attn_q_norm.weight", "self_attn.q_norm.weight", nullptr,
     Extent::head_dim, Extent::one, true, "QK-norm", RopeRows::one_head, std::nullopt, Feed::q_out,
     &LayerWeights::q_norm, nullptr},
    {"QK-norm gain over each key head", "k_norm", "k_norm", "attn_k_norm.weight", "self_attn.k_norm.weight", nullptr,
     Extent::head_dim, Extent::one, true, "QK-norm", RopeRows::one_head, std::nullopt, Feed::k_out,
     &LayerWeights::k_norm, nullptr},
    {"RMSNorm gain before the FFN", "ffn_norm", "ffn_norm", "ffn_norm.weight", "post_attention_layernorm.weight",
     "rms_ffn_weight", Extent::dim, Extent::one, true, nullptr, RopeRows::none, std::nullopt, Feed::residual,
     &LayerWeights::ffn_norm, nullptr},
    {"SwiGLU gate projection", "w_gate", "w_gate", "ffn_gate.weight", "mlp.gate_proj.weight", "w1", Extent::hidden,
     Extent::dim, true, nullptr, RopeRows::none, LinearKind::gate, Feed::ffn_in, &LayerWeights::w_gate, nullptr},
    {"FFN down projection", "w_down", "w_down", "ffn_down.weight", "mlp.down_proj.weight", "w2", Extent::dim,
     Extent::hidden, true, nullptr, RopeRows::none, LinearKind::down, Feed::down_in, &LayerWeights::w_down, nullptr},
    {"SwiGLU up projection", "w_up", "w_up", "ffn_up.weight", "mlp.up_proj.weight", "w3", Extent::hidden, Extent::dim,
     true, nullptr, RopeRows::none, LinearKind::up, Feed::ffn_in, &LayerWeights::w_up, nullptr},
    {"final RMSNorm gain", "final_norm", "norm", "output_norm.weight", "model.norm.weight", "rms_final_weight",
     Extent::dim, Extent::one, false, nullptr, RopeRows::none, std::nullopt, Feed::residual, nullptr,
     &LlamaModel::final_norm},
    {"classifier (absent: tied to the embedding)", "classifier", "output", "output.weight", "lm_head.weight", "wcls",
     Extent::vocab, Extent::dim, false, "an untied classifier", RopeRows::none, LinearKind::classifier, Feed::final_in, nullptr,
     &LlamaModel::classifier},
};
inline constexpr std::span<const TensorSpec> kTensors{kTensorRows};

// The rows of kTensors that belong to each layer, in file order.
inline constexpr std::span<const TensorSpec> kLayerTensors = std::span(kTensors).subspan(1, kTensors.size() - 3);

// The index in kLayerTensors of a LayerWeights member's row.
constexpr std::size_t layer_row(Weight LayerWeights::*member) {
  for (std::size_t i = 0; i < kLayerTensors.size(); ++i)
    if (kLayerTensors[i].layer_member == member) return i;
  return kLayerTensors.size();
}

// Calls f(spec, layer) for every tensor in file order: the embedding, layer by layer that layer's
// tensors, the final norm, the classifier (layer 0 for the model tensors).
template <class F>
void for_each_tensor(std::size_t n_layers, F&& f) {
  f(kTensors.front(), std::size_t{0});
  for (std::size_t l = 0; l < n_layers; ++l)
    for (const TensorSpec& t : kLayerTensors) f(t, l);
  for (std::size_t i = kTensors.size() - 2; i < kTensors.size(); ++i) f(kTensors[i], std::size_t{0});
}

// The row of a recipe linear (classifier included).
const TensorSpec& linear_tensor(LinearKind kind);

// The tensor of `spec` in `m` (layer ignored for a model tensor).
Weight& tensor_of(LlamaModel& m, const TensorSpec& spec, std::size_t layer);
const Weight& tensor_of(const LlamaModel& m, const TensorSpec& spec, std::size_t layer);

// rows * cols from the config.
std::size_t tensor_size(const LlamaConfig& c, const TensorSpec& spec);
// The file names of a tensor (layer ignored for a model tensor).
std::string gguf_name(const TensorSpec& spec, std::size_t layer);
std::string hf_name(const TensorSpec& spec, std::size_t layer);
// The shape as GGUF stores it (ne0, the columns, first) and as safetensors does (rows first).
std::vector<std::uint64_t> gguf_shape(const LlamaConfig& c, const TensorSpec& spec);
std::vector<std::uint64_t> hf_shape(const LlamaConfig& c, const TensorSpec& spec);
// The number of heads whose rows `spec.rope` permutes (0: none).
int rope_heads(const LlamaConfig& c, const TensorSpec& spec);

}  // namespace lowp::accuracy::detail
