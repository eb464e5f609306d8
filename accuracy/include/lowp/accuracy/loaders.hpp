// Reading checkpoints: llama2.c legacy .bin, GGUF v3, and Hugging Face safetensors + config.json.
//
// Files are memory-mapped; every length, offset and shape is checked against the file size
// before it is used. Errors are lowp::Error with one line naming the file and what was wrong.
#pragma once
#include <string>
#include "lowp/accuracy/model.hpp"

namespace lowp::accuracy {

LlamaModel load_llama2c(const std::string& path);
LlamaModel load_gguf(const std::string& path);
// `path` is a .safetensors file (config.json beside it) or a directory holding both.
LlamaModel load_safetensors(const std::string& path);
// Picks the loader from the file's magic bytes (GGUF, safetensors header) or a directory.
LlamaModel load_model(const std::string& path);

}  // namespace lowp::accuracy
