// GGUF byte-level BPE vocabularies (tokenizer.ggml.model "gpt2"), read as llama.cpp reads them.
#include <algorithm>
#include <cmath>

#include "io/gguf_file.hpp"
#include "tokenizer/bpe.hpp"

namespace lowp::accuracy::detail {

using TokenType = Tokenizer::TokenType;

// Added tokens in the order they are cut out of the text: longest first, then by id.
void sort_user_tokens(std::vector<std::pair<std::string, int>>& t) {
  std::stable_sort(t.begin(), t.end(), [](const auto& a, const auto& b) {
    return a.first.size() != b.first.size() ? a.first.size() > b.first.size() : a.second < b.second;
  });
}

Tokenizer load_gguf_bpe(const GgufFile& g, std::vector<std::string> pieces) {
  const std::size_t n = pieces.size();
  if (n == 0 || n > (std::size_t{1} << 24)) g.fail("tokenizer.ggml.tokens has " + std::to_string(n) + " tokens");
  std::vector<TokenType> types(n, TokenType::normal);
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
  const auto pre_name = g.get_string("tokenizer.ggml.pre").value_or("default");
  const PreTokenizer pre = gguf_pre_tokenizer(pre_name, g.name());

  auto m = std::make_shared<BpeModel>();
  m->name = g.name();
  m->byte_level = true;
  m->ignore_merges = pre.ignore_merges;
  m->gguf_pre = pre_name;
  for (const auto& r : pre.regexes) m->split.push_back(std::make_unique<Regex>(r, g.name()));
  m->vocab.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    m->vocab[pieces[i]] = static_cast<int>(i);  // a duplicate piece maps to its last id, as in llama.cpp
    // Types 6 (byte) in a gpt2 vocabulary are ordinary byte-level pieces.
    if (types[i] == TokenType::byte) types[i] = TokenType::normal;
    if (types[i] == TokenType::user && !pieces[i].empty()) m->user_tokens.emplace_back(pieces[i], static_cast<int>(i));
  }
  sort_user_tokens(m->user_tokens);

  const auto merges = g.get_strings("tokenizer.ggml.merges");
  if (!merges) g.fail("metadata 'tokenizer.ggml.merges' is missing (a gpt2 tokenizer needs its merges)");
  m->merges.reserve(merges->size());
  for (std::size_t r = 0; r < merges->size(); ++r) {
    const std::string& mg = (*merges)[r];
    const std::size_t sp = mg.find(' ', 1);  // the pieces hold no spaces (bytes are mapped)
    if (sp == std::string::npos || sp + 1 >= mg.size())
      g.fail("tokenizer.ggml.merges entry " + std::to_string(r) + " " + show_string(mg) + " is not two pieces");
    const std::string left = mg.substr(0, sp), right = mg.substr(sp + 1);
    const int a = m->lookup(left), b = m->lookup(right), c = m->lookup(left + right);
    // A merge whose parts or result are not tokens can never produce a token: skip it.
    if (a >= 0 && b >= 0 && c >= 0) m->add_merge(static_cast<int>(r), a, b, c);
  }

  auto id = [&](const char* key) {
    const auto v = g.get_int(key);
    if (!v) return -1;
    if (*v < 0 || *v >= static_cast<std::int64_t>(n))
      g.fail(std::string(key) + " " + std::to_string(*v) + " is outside the vocabulary (" + std::to_string(n) + " tokens)");
    return static_cast<int>(*v);
  };
  const int bos = id("tokenizer.ggml.bos_token_id");
  const int eos = id("tokenizer.ggml.eos_token_id");
  m->unk = id("tokenizer.ggml.unknown_token_id");
  const bool add_bos = g.get_bool("tokenizer.ggml.add_bos_token").value_or(pre.add_bos);
  return TokenizerBuilder::bpe(std::move(pieces), std::move(types), bos, eos, std::move(m), add_bos);
}

}  // namespace lowp::accuracy::detail
