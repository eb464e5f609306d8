// Reading checkpoints: llama2.c legacy .bin, GGUF v3 (v2 too), and Hugging Face safetensors + config.json.
//
// Files are memory-mapped; every length, offset and shape is checked against the file size
// before it is used. Errors are lowp::Error with one line naming the file and what was wrong.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include "lowp/accuracy/model.hpp"

namespace lowp::accuracy {

// widened: every weight a float32 vector. mapped: GGUF and safetensors 2-D weights stay
// memory-mapped in their stored type (LlamaModel::mapped); llama2c files are always widened.
enum class WeightStorage { widened, mapped };

LlamaModel load_llama2c(const std::string& path);
LlamaModel load_gguf(const std::string& path, WeightStorage storage = WeightStorage::widened);
// `path` is a .safetensors file (config.json beside it) or a directory holding both.
LlamaModel load_safetensors(const std::string& path, WeightStorage storage = WeightStorage::widened);
// Picks the loader from the file's magic bytes (GGUF, safetensors header) or a directory.
LlamaModel load_model(const std::string& path, WeightStorage storage = WeightStorage::widened);
// A built-in model name (`shakespeare`: lowp's own byte-level model, installed with the
// library) resolves to its file; any other text is returned as it is.
std::string resolve_model_path(const std::string& name_or_path);

// The same from bytes in memory (what the file loaders call on the mapping); `name` stands for
// the file in error messages.
LlamaModel load_llama2c_bytes(std::span<const std::uint8_t> bytes, const std::string& name);
LlamaModel load_gguf_bytes(std::span<const std::uint8_t> bytes, const std::string& name);
LlamaModel load_safetensors_bytes(std::span<const std::uint8_t> bytes, std::string_view config_json,
                                  const std::string& name);

}  // namespace lowp::accuracy
