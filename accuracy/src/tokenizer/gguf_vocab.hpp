// Writing a Tokenizer out (private): as the tokenizer.ggml.* entries of a GGUF file and as
// llama2.c's tokenizer.bin, so that an exported checkpoint keeps the vocabulary it was read with.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/gguf_meta.hpp"
#include "lowp/accuracy/tokenizer.hpp"

namespace lowp::accuracy::detail {

// The tokenizer.ggml.* entries llama.cpp and lowp's GGUF reader take for `t`, padded with unused
// tokens "<unusedK>" to the model's `vocab_size` (llama.cpp wants one token per logit):
// SentencePiece-style vocabularies (llama2.c, GGUF "llama", tokenizer.model, byte-level) as
// model "llama" (U+2581 for spaces, bytes as <0xNN>, scores, token_type, add_space_prefix);
// byte-level BPE as "gpt2" (token_type, merges by rank, pre); both with the bos / eos / unknown
// ids and add_bos_token. lowp::Error naming what GGUF cannot hold: a tokenizer.json BPE with
// SentencePiece-style normalization or byte fallback, or a pre-tokenizer llama.cpp has no name for.
std::vector<GgufKv> gguf_vocab(const Tokenizer& t, int vocab_size);

// llama2.c's tokenizer.bin for `t` (spaces as ' '). lowp::Error naming the first thing that
// reading it back would change: the format fixes <unk> <s> </s> = 0 1 2 (control tokens), BOS
// and the space prefix on, and holds no merges (BPE) or byte-level alphabet.
std::vector<std::uint8_t> llama2c_tokenizer_bin(const Tokenizer& t);

// The files that hold `t` beside a model that has no vocabulary inside (llama2.c .bin, an HF
// folder): tokenizer.bin for a SentencePiece-style vocabulary (llama2c_tokenizer_bin), or for a
// byte-level BPE Hugging Face's tokenizer.json (BPE vocabulary and merges by rank; control and
// user tokens as special and plain added tokens; the pre-tokenizer regexes as Split pieces before
// a ByteLevel step without a regex of its own) and tokenizer_config.json (bos_token, eos_token,
// add_bos_token). lowp::Error naming why for what neither holds.
std::vector<std::pair<std::string, std::vector<std::uint8_t>>> tokenizer_files(const Tokenizer& t);

}  // namespace lowp::accuracy::detail
