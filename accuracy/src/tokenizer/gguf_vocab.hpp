// Writing a Tokenizer out (private): as the tokenizer.ggml.* entries of a GGUF file and as
// llama2.c's tokenizer.bin, so that an exported checkpoint keeps the vocabulary it was read with.
#pragma once
#include <cstdint>
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

}  // namespace lowp::accuracy::detail
