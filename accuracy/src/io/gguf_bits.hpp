// What a llama.cpp GGUF's weights cost (private to lowp_accuracy): `lowp search` places
// llama.cpp's quantization types on its bits-per-weight axis with it.
#pragma once
#include <string>

#include "lowp/accuracy/model.hpp"

namespace lowp::accuracy::detail {

// Bits per weight of the GGUF at `path` over the tensors lowp's search counts for a model of
// config `c` (every linear inside the layers and the classifier: output.weight, else the tied
// token_embd.weight), scales included, from each tensor's ggml type. Throws lowp::Error naming
// the file when one of them is missing.
double gguf_bits_per_weight(const std::string& path, const LlamaConfig& c);

}  // namespace lowp::accuracy::detail
