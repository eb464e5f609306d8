// Writing checkpoints (private): the three formats the loaders read, each file written whole or
// not at all (file/atomic_file.hpp).
#pragma once
#include <string>

#include "lowp/accuracy/model.hpp"

namespace lowp::accuracy::detail {

// llama2.c legacy .bin: 7 int32 (vocab negative when the classifier is untied), the tensors,
// and the legacy RoPE tables (seq_len x head_dim/2 cos, then sin).
void save_llama2c(const LlamaModel& m, const std::string& path);
// GGUF v3, F32 tensors, with a byte vocabulary llama.cpp accepts when the vocabulary is
// byte-level (<0x00>..<0xFF> byte tokens, then <s> and </s> as control tokens).
void save_gguf(const LlamaModel& m, const std::string& path);
// Hugging Face LlamaForCausalLM: `path` (.safetensors, F32, q/k rows permuted to HF's
// rotate-half order) and config.json beside it.
void save_safetensors(const LlamaModel& m, const std::string& path);

}  // namespace lowp::accuracy::detail
