// Tokenizers for evaluation text: byte-level (256 bytes + <s>, </s>), llama2.c tokenizer.bin,
// the SentencePiece (SPM/BPE) vocabulary embedded in GGUF files, GPT-2 style byte-level BPE
// (GGUF `gpt2` vocabularies, Hugging Face tokenizer.json), SentencePiece tokenizer.model files
// (through libsentencepiece); plus token-id files.
//
// SPM encoding follows llama2.c / llama.cpp: a space is prepended, the text is split into
// UTF-8 characters, then the adjacent pair whose concatenation is a vocabulary piece with the
// highest score is merged (leftmost on ties) until none is left; characters outside the
// vocabulary become <0xNN> byte tokens. decode(encode(text)) == text
// whenever every byte of text has a byte token (else the unknown token stands in).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {

namespace detail {
struct BpeModel;
struct SpModel;
struct TokenizerBuilder;
}  // namespace detail

class Tokenizer {
 public:
  enum class TokenType : std::uint8_t { normal = 1, unknown = 2, control = 3, user = 4, unused = 5, byte = 6 };

  // Bytes 0..255 are ids 0..255; <s> = 256 and </s> = 257 when vocab_size leaves room for them.
  // Throws lowp::Error if vocab_size < 256.
  static Tokenizer byte_level(int vocab_size = 258);
  // Whether a model of `vocab_size` logits with no tokenizer of its own is read as bytes: the
  // 256 bytes plus at most 16 specials (a larger vocabulary, such as stories260K's 512
  // SentencePiece pieces, would silently get the wrong ids).
  static bool bytes_fit(int vocab_size) { return vocab_size >= 256 && vocab_size <= 256 + 16; }
  // A SentencePiece vocabulary: pieces with ' ' for spaces and "<0xNN>" byte pieces.
  // `add_space_prefix`: encode puts a space before the text (SentencePiece's dummy prefix).
  Tokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<TokenType> types,
            int bos, int eos, int unk, const std::string& name, bool add_space_prefix = true);

  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  int bos() const { return bos_; }  // -1: none
  int eos() const { return eos_; }
  int unk() const { return unk_; }  // -1: none
  // Whether encode puts a space before the text (SentencePiece's dummy prefix).
  bool space_prefix() const { return space_prefix_ && !byte_level_; }
  bool is_byte_level() const { return byte_level_; }
  // Whether the model's text starts with BOS, as llama.cpp decides it (tokenizer.ggml.add_bos_token,
  // tokenizer_config.json's add_bos_token, else the default of the tokenizer type).
  bool add_bos() const { return add_bos_ && bos_ >= 0; }
  // The stored text and score of a token; lowp::Error for ids outside the vocabulary.
  const std::string& piece(int id) const;
  float score(int id) const;
  TokenType type(int id) const;

  std::vector<int> encode(std::string_view text, bool add_bos = true, bool add_eos = false) const;
  // The text of the ids; control tokens print nothing, the leading space encode added is removed.
  std::string decode(std::span<const int> ids) const;
  // The text one token adds after `prev` (llama2.c: no leading space right after <s>).
  std::string decode_token(int prev, int id) const;

 private:
  friend struct detail::TokenizerBuilder;
  Tokenizer() = default;
  int lookup(std::string_view s) const;  // -1 if not a mergeable piece

  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::unordered_map<std::string, int, Hash, std::equal_to<>> index_;
  std::array<int, 256> byte_ids_{};
  int bos_ = -1, eos_ = -1, unk_ = -1;
  bool byte_level_ = false;
  bool space_prefix_ = true;
  bool add_bos_ = true;
  std::shared_ptr<const detail::BpeModel> bpe_;  // merge-ranked BPE (tokenizer/bpe.hpp)
  std::shared_ptr<const detail::SpModel> sp_;    // a SentencePiece processor
};

// A model without a tokenizer lowp can read (what the caller may advise instead differs:
// `lowp eval` takes token ids, `lowp generate` cannot).
class NoTokenizer : public Error {
 public:
  using Error::Error;
};

// llama2.c tokenizer.bin: int32 max_token_length, then vocab_size x (float32 score, int32
// length, bytes). The file does not store the count: it comes from the model.
Tokenizer load_llama2c_tokenizer(const std::string& path, int vocab_size);
Tokenizer load_llama2c_tokenizer_bytes(std::span<const std::uint8_t> bytes, int vocab_size, const std::string& name);
// The tokenizer.ggml.* vocabulary of a GGUF file: "llama" (SentencePiece) or "gpt2" (byte-level
// BPE with tokenizer.ggml.merges and the pre-tokenizer named by tokenizer.ggml.pre).
Tokenizer load_gguf_tokenizer(const std::string& path);
Tokenizer load_gguf_tokenizer_bytes(std::span<const std::uint8_t> bytes, const std::string& name);
// A Hugging Face tokenizer.json: a BPE model with a ByteLevel and/or Split (regex) pre-tokenizer,
// or SentencePiece-style (U+2581 normalizer or Metaspace, byte fallback); added tokens; BOS from
// tokenizer_config.json beside it. Added tokens marked special are not matched in the text
// (as llama.cpp's tokenizer without parse_special); their lstrip/rstrip flags are not applied.
// An NFC normalizer (Qwen2) is taken as the identity: text not already in NFC may differ.
Tokenizer load_hf_tokenizer(const std::string& path);
// A SentencePiece tokenizer.model, encoded by libsentencepiece.
Tokenizer load_sentencepiece_model(const std::string& path);
// A tokenizer on its own: a GGUF file (a vocabulary-only one will do), a tokenizer.json, a
// tokenizer.model, or a folder holding tokenizer.json or tokenizer.model.
Tokenizer load_tokenizer(const std::string& file_or_dir);
// The tokenizer for a model file: a GGUF's own; for other files tokenizer.bin, tokenizer.json
// or tokenizer.model in the same directory (in that order); else byte-level when vocab_size
// is 256..272 (bytes plus at most 16 specials). Throws NoTokenizer when there is none, and
// lowp::Error when the tokenizer has more tokens than the model.
Tokenizer tokenizer_for_model(const std::string& model_path, int vocab_size);

// A token-id file: one non-negative id per line (blank lines skipped). Throws lowp::Error
// naming the file and line for anything else, for ids >= vocab_size (when > 0), and for a
// file with no ids.
std::vector<int> read_token_file(const std::string& path, int vocab_size = 0);
std::vector<int> parse_token_ids(std::string_view text, int vocab_size, const std::string& name);

}  // namespace lowp::accuracy
