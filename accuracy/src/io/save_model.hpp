// Writing checkpoints (private): the three formats the loaders read, each file written to a
// temporary name beside the target and renamed over it, so a reader never sees half a file.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "lowp/accuracy/model.hpp"

namespace lowp::accuracy::detail {

// `bytes` to `path` through `path.tmp` + rename. Throws lowp::Error naming the file.
// `before_rename` runs between writing NAME.tmp and renaming it (tests pause there to kill).
void write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes,
                       const std::function<void()>& before_rename = {});
void write_file_atomic(const std::string& path, const std::string& text);

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
