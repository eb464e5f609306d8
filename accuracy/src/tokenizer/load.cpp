// Reading tokenizers: llama2.c tokenizer.bin, the GGUF tokenizer.ggml.* vocabulary, and the
// choice of tokenizer for a model file.
#include <cmath>
#include <filesystem>

#include "io/gguf_file.hpp"
#include "lowp/accuracy/tokenizer.hpp"
#include "file/mapped_file.hpp"
#include "tokenizer/bpe.hpp"

namespace lowp::accuracy {

using namespace detail;
using TokenType = Tokenizer::TokenType;

Tokenizer load_llama2c_tokenizer_bytes(std::span<const std::uint8_t> bytes, int vocab_size, const std::string& name) {
  ByteReader r(bytes, name);
  if (vocab_size < 3) r.fail("vocab_size " + std::to_string(vocab_size) + " is too small for a llama2.c tokenizer");
  const auto max_len = r.read<std::int32_t>("max_token_length");
  if (max_len <= 0) r.fail("max_token_length is " + std::to_string(max_len) + ", must be positive");
  // Each token takes at least 8 bytes: bound the count before allocating.
  if (static_cast<std::uint64_t>(vocab_size) > r.remaining() / 8)
    r.fail("the model's vocab_size " + std::to_string(vocab_size) + " needs more tokens than the file can hold");
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<TokenType> types;
  for (int id = 0; id < vocab_size; ++id) {
    const std::string field = "token " + std::to_string(id);
    const float score = r.read<float>(field + " score");
    const auto len = r.read<std::int32_t>(field + " length");
    if (len < 0 || len > max_len)
      r.fail(field + " length " + std::to_string(len) + " is outside [0, max_token_length " + std::to_string(max_len) + "]");
    if (!std::isfinite(score)) r.fail(field + " score is not finite");
    const Bytes b = r.take(static_cast<std::uint64_t>(len), field + " text");
    pieces.emplace_back(reinterpret_cast<const char*>(b.data()), b.size());
    scores.push_back(score);
    // llama2.c's SentencePiece export: 0 <unk>, 1 <s>, 2 </s>.
    types.push_back(id == 0 ? TokenType::unknown : id <= 2 ? TokenType::control : TokenType::normal);
  }
  if (r.remaining() != 0)
    r.fail("holds more than the model's " + std::to_string(vocab_size) + " tokens (" + std::to_string(r.remaining()) +
           " bytes left): a tokenizer for another model?");
  return Tokenizer(std::move(pieces), std::move(scores), std::move(types), 1, 2, 0, name);
}

Tokenizer load_llama2c_tokenizer(const std::string& path, int vocab_size) {
  MappedFile f(path);
  return load_llama2c_tokenizer_bytes(f.bytes(), vocab_size, path);
}

Tokenizer load_gguf_tokenizer_bytes(std::span<const std::uint8_t> bytes, const std::string& name) {
  const GgufFile g(bytes, name);
  const auto model = g.get_string("tokenizer.ggml.model");
  if (!model) throw NoTokenizer(name + ": has no tokenizer (tokenizer.ggml.model is missing)");
  if (*model != "llama" && *model != "gpt2")
    throw NoTokenizer(name + ": tokenizer model " + show_string(*model) +
                      " is not supported (SentencePiece 'llama' and byte-level BPE 'gpt2')");
  auto pieces = g.get_strings("tokenizer.ggml.tokens");
  if (!pieces) g.fail("metadata 'tokenizer.ggml.tokens' is missing");
  if (*model == "gpt2") return load_gguf_bpe(g, std::move(*pieces));
  const std::size_t n = pieces->size();
  std::vector<float> scores(n, 0.0f);
  std::vector<TokenType> types(n, TokenType::normal);
  if (const auto s = g.get_numbers("tokenizer.ggml.scores")) {
    if (s->size() != n)
      g.fail("tokenizer.ggml.scores has " + std::to_string(s->size()) + " entries for " + std::to_string(n) + " tokens");
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite((*s)[i])) g.fail("tokenizer.ggml.scores entry " + std::to_string(i) + " is not finite");
      scores[i] = static_cast<float>((*s)[i]);
    }
  }
  if (const auto t = g.get_numbers("tokenizer.ggml.token_type")) {
    if (t->size() != n)
      g.fail("tokenizer.ggml.token_type has " + std::to_string(t->size()) + " entries for " + std::to_string(n) + " tokens");
    for (std::size_t i = 0; i < n; ++i) {
      const double v = (*t)[i];
      if (!(v >= 1 && v <= 6 && v == std::floor(v)))
        g.fail("tokenizer.ggml.token_type entry " + std::to_string(i) + " is " + std::to_string(v) + " (1 to 6)");
      types[i] = static_cast<TokenType>(static_cast<int>(v));
    }
  }
  // GGUF pieces mark spaces with U+2581 (as SentencePiece does).
  for (std::string& p : *pieces) {
    std::string q;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p.compare(i, 3, "\xE2\x96\x81") == 0) {
        q += ' ';
        i += 2;
      } else {
        q += p[i];
      }
    }
    p = std::move(q);
  }
  auto id = [&](const char* key, int fallback) {
    const auto v = g.get_int(key);
    if (!v) return fallback;
    if (*v < 0 || *v >= static_cast<std::int64_t>(n))
      g.fail(std::string(key) + " " + std::to_string(*v) + " is outside the vocabulary (" + std::to_string(n) + " tokens)");
    return static_cast<int>(*v);
  };
  const int bos = id("tokenizer.ggml.bos_token_id", 1 < n ? 1 : -1);
  const int eos = id("tokenizer.ggml.eos_token_id", 2 < n ? 2 : -1);
  const int unk = id("tokenizer.ggml.unknown_token_id", -1);
  const bool prefix = g.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
  Tokenizer t(std::move(*pieces), std::move(scores), std::move(types), bos, eos, unk, name, prefix);
  TokenizerBuilder::set_add_bos(t, g.get_bool("tokenizer.ggml.add_bos_token").value_or(true));
  return t;
}

Tokenizer load_gguf_tokenizer(const std::string& path) {
  MappedFile f(path);
  return load_gguf_tokenizer_bytes(f.bytes(), path);
}

Tokenizer tokenizer_for_model(const std::string& model_path, int vocab_size) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(model_path, ec)) {
    MappedFile f(model_path);
    const Bytes b = f.bytes();
    if (has_gguf_magic(b)) {
      Tokenizer t = load_gguf_tokenizer_bytes(b, model_path);
      if (t.vocab_size() > vocab_size)
        throw Error(model_path + ": the tokenizer has " + std::to_string(t.vocab_size()) + " tokens, the model " +
                    std::to_string(vocab_size));
      return t;
    }
  }
  fs::path dir = fs::is_directory(model_path, ec) ? fs::path(model_path) : fs::path(model_path).parent_path();
  if (dir.empty()) dir = ".";
  const fs::path bin = dir / "tokenizer.bin";
  if (fs::exists(bin, ec)) return load_llama2c_tokenizer(bin.string(), vocab_size);
  for (const char* file : {"tokenizer.json", "tokenizer.model"}) {
    if (!fs::exists(dir / file, ec)) continue;
    Tokenizer t = load_tokenizer((dir / file).string());
    if (t.vocab_size() > vocab_size)
      throw Error((dir / file).string() + ": the tokenizer has " + std::to_string(t.vocab_size()) + " tokens, the model " +
                  std::to_string(vocab_size));
    return t;
  }
  if (Tokenizer::bytes_fit(vocab_size)) return Tokenizer::byte_level(vocab_size);
  throw NoTokenizer(model_path + ": no tokenizer (no tokenizer.bin, tokenizer.json or tokenizer.model beside it, and a " +
                    "vocabulary of " + std::to_string(vocab_size) + " is not byte-level)");
}

}  // namespace lowp::accuracy
