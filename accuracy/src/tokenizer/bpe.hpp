// Merge-ranked BPE (private): GPT-2 style byte-level vocabularies (GGUF `gpt2`, Hugging Face
// tokenizer.json with a ByteLevel pre-tokenizer) and SentencePiece-style BPE from tokenizer.json
// (U+2581 for spaces, <0xNN> byte fallback). Pre-tokenizer regexes run on PCRE2 with Unicode
// properties (UTF + UCP), so \p{L}, \p{N} and \s come from PCRE2's Unicode tables.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lowp/accuracy/tokenizer.hpp"

namespace lowp::accuracy::detail {

// A compiled PCRE2 pattern (UTF, UCP, $ only at the very end, JIT when available).
class Regex {
 public:
  Regex(const std::string& pattern, const std::string& name);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // Splits `text` into its matches and the gaps between them (Hugging Face's "Isolated"
  // behaviour, llama.cpp's unicode_regex_split): pieces are appended as [begin, end) offsets
  // relative to `base`. `text` must be valid UTF-8.
  void split(std::string_view text, std::size_t base, std::vector<std::pair<std::size_t, std::size_t>>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  void* code_ = nullptr;  // pcre2_code_8*
  std::string pattern_;
};

// The pre-tokenizer regexes llama.cpp uses for a GGUF `tokenizer.ggml.pre` name, and the
// settings that go with it. Throws lowp::Error naming the file for a name it does not know.
struct PreTokenizer {
  std::vector<std::string> regexes;  // applied in order, each to the pieces of the one before
  bool ignore_merges = false;        // a piece that is itself a token is not merged
  bool add_bos = false;              // llama.cpp's default before tokenizer.ggml.add_bos_token
};
PreTokenizer gguf_pre_tokenizer(const std::string& pre, const std::string& name);

// Offset of the first byte that is not valid UTF-8 (overlong forms, surrogates and code points
// above U+10FFFF are invalid), or npos.
std::size_t invalid_utf8_at(std::string_view s);

struct BpeModel {
  std::string name;
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int, Hash, std::equal_to<>> vocab;  // token text -> id
  std::unordered_map<std::uint64_t, std::pair<int, int>> merges;  // (left id, right id) -> (rank, merged id)
  std::vector<std::unique_ptr<Regex>> split;    // pre-tokenizer regexes (none: the whole text is one word)
  bool byte_level = false;     // bytes are mapped to GPT-2's printable characters before BPE
  bool byte_fallback = false;  // a character outside the vocabulary becomes <0xNN> tokens
  bool ignore_merges = false;
  bool add_prefix_space = false;   // ByteLevel: a space before text that does not start with one
  std::string prepend;             // text put before each raw segment (SentencePiece: U+2581)
  bool prepend_first_only = false;  // only before the segment that starts the text (Metaspace "first")
  bool spaces_to_metaspace = false;  // ' ' -> U+2581 (SentencePiece-style normalizer)
  int unk = -1;
  std::vector<std::pair<std::string, int>> user_tokens;  // matched in the raw text, longest first
  std::vector<int> byte_tokens = std::vector<int>(256, -1);  // <0xNN> ids (byte fallback)
  // The llama.cpp pre-tokenizer name (tokenizer.ggml.pre) that splits text as `split` does;
  // "" when none is known to (then the vocabulary cannot be written to a GGUF file).
  std::string gguf_pre;

  void add_merge(int rank, int left, int right, int merged) {
    merges.emplace((static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right),
                   std::pair{rank, merged});
  }
  int lookup(std::string_view s) const {
    const auto it = vocab.find(s);
    return it == vocab.end() ? -1 : it->second;
  }
  void encode(std::string_view text, std::vector<int>& out) const;
  // Token text as bytes: GPT-2 characters mapped back for byte-level, U+2581 -> ' ' otherwise.
  std::string piece_bytes(const std::string& piece) const;
};

// GPT-2's byte <-> printable-character table: the UTF-8 text of byte b's character.
const std::string& byte_char(unsigned char b);

// Builds Tokenizers of the kinds lowp::accuracy::Tokenizer keeps private.
struct TokenizerBuilder {
  static Tokenizer bpe(std::vector<std::string> pieces, std::vector<Tokenizer::TokenType> types, int bos, int eos,
                       std::shared_ptr<const BpeModel> model, bool add_bos);
  static Tokenizer sentencepiece(const std::string& path);
  static void set_add_bos(Tokenizer& t, bool on) { t.add_bos_ = on; }
  // The merge-ranked BPE behind `t` (nullptr for other kinds); whether libsentencepiece encodes `t`.
  static const BpeModel* bpe_model(const Tokenizer& t) { return t.bpe_.get(); }
  static bool is_sentencepiece(const Tokenizer& t) { return t.sp_ != nullptr; }
};

// Added tokens in the order they are cut out of the text: longest first, then by id.
void sort_user_tokens(std::vector<std::pair<std::string, int>>& tokens);

// A byte-level BPE vocabulary from a GGUF file (tokenizer.ggml.model "gpt2").
class GgufFile;
Tokenizer load_gguf_bpe(const GgufFile& g, std::vector<std::string> pieces);

}  // namespace lowp::accuracy::detail
