// Writing checkpoints (private): the three formats the loaders read, each file written whole or
// not at all (file/atomic_file.hpp).
#pragma once
#include <string>

#include <vector>

#include "io/gguf_meta.hpp"
#include "lowp/accuracy/model.hpp"

namespace lowp::accuracy::detail {

// llama2.c legacy .bin: 7 int32 (vocab negative when the classifier is untied), the tensors,
// and the legacy RoPE tables (seq_len x head_dim/2 cos, then sin). The format fixes head_dim =
// dim / n_heads, no biases, RoPE theta 10000 unscaled and eps 1e-5: llama2c_cannot_hold()
// names the first of those `m` differs in ("" when none), and save_llama2c throws it.
std::string llama2c_cannot_hold(const LlamaModel& m);
void save_llama2c(const LlamaModel& m, const std::string& path);
// GGUF v3, F32 tensors. The llama architecture with what lowp's loader reads back: head_dim
// (attention.key_length), q/k/v/o biases, linear RoPE scaling and rope_freqs.weight; then
// `tokenizer`, the tokenizer.* entries (tokenizer/gguf_vocab.hpp builds them; none: no tokenizer).
void save_gguf(const LlamaModel& m, const std::string& path, const std::vector<GgufKv>& tokenizer = {});
// Hugging Face LlamaForCausalLM (Qwen2ForCausalLM for q/k/v biases without an o bias): `path`
// (.safetensors, F32, q/k rows and biases permuted to HF's rotate-half order) and config.json
// beside it, with head_dim, attention_bias and linear rope_scaling. lowp::Error for what
// config.json cannot hold (RoPE frequency factors: Llama 3 scaling's parameters are not kept).
void save_safetensors(const LlamaModel& m, const std::string& path);

}  // namespace lowp::accuracy::detail
