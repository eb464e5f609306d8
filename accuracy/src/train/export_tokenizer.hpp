// What the exports of `lowp train` carry of the model's tokenizer (private), decided once at
// the start of a run so that a fine-tuned model reads text as the checkpoint it came from did.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/gguf_meta.hpp"
#include "lowp/accuracy/tokenizer.hpp"

namespace lowp::accuracy::train {

struct TokenizerExport {
  std::vector<detail::GgufKv> gguf;  // the tokenizer.* entries of model.gguf
  // Files beside model.bin and model.safetensors (the HF folder): name, contents.
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> files;
  std::vector<std::string> notes;    // what an export does not carry, and why (one line each)
};

// `t` is the tokenizer the run reads its corpus with (tokenizer_for_model of `init`).
// `init` empty (training from scratch): lowp's byte-level vocabulary of `vocab_size` in the GGUF
// (model.bin and the HF folder are read as bytes by their vocabulary size alone).
// A GGUF `init`: its tokenizer.* entries byte for byte, and tokenizer.bin for the other exports
// when llama2.c's format holds the vocabulary. Any other `init`: the tokenizer files beside it
// (tokenizer.bin, tokenizer.json, tokenizer_config.json, special_tokens_map.json,
// tokenizer.model) as they are, and `t` in the GGUF.
TokenizerExport tokenizer_export(const std::string& init, const Tokenizer& t, int vocab_size);

// The files of `e` into `dir`, each written whole or not at all.
void write_tokenizer_files(const TokenizerExport& e, const std::string& dir);

}  // namespace lowp::accuracy::train
