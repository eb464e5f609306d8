// Tokenizers written out: GGUF tokenizer.ggml.* entries and llama2.c tokenizer.bin.
#include "tokenizer/gguf_vocab.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "report/text.hpp"
#include "tokenizer/bpe.hpp"

namespace lowp::accuracy::detail {
namespace {

using TokenType = Tokenizer::TokenType;

// The ids as GGUF names them (absent when -1), and whether text starts with BOS.
void special_ids(GgufMetaWriter& w, const Tokenizer& t) {
  if (t.bos() >= 0) w.u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(t.bos()));
  if (t.eos() >= 0) w.u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(t.eos()));
  if (t.unk() >= 0) w.u32("tokenizer.ggml.unknown_token_id", static_cast<std::uint32_t>(t.unk()));
  w.boolean("tokenizer.ggml.add_bos_token", t.add_bos());
}

std::string unused_piece(int k) { return "<unused" + std::to_string(k) + ">"; }

void spm_vocab(GgufMetaWriter& w, const Tokenizer& t, int n) {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
  for (int id = 0; id < n; ++id) {
    if (id >= t.vocab_size()) {
      tokens.push_back(unused_piece(id - t.vocab_size()));
      scores.push_back(0.0f);
      types.push_back(static_cast<std::int32_t>(TokenType::unused));
      continue;
    }
    const std::string& p = t.piece(id);
    std::string q;
    if (t.type(id) == TokenType::byte && p.size() == 1) {  // byte-level: the byte itself
      char b[8];
      std::snprintf(b, sizeof b, "<0x%02X>", static_cast<unsigned char>(p[0]));
      q = b;
    } else {
      for (char c : p) q += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    }
    tokens.push_back(std::move(q));
    scores.push_back(t.score(id));
    types.push_back(static_cast<std::int32_t>(t.type(id)));
  }
  w.str("tokenizer.ggml.model", "llama");
  w.strings("tokenizer.ggml.tokens", tokens);
  w.f32s("tokenizer.ggml.scores", scores);
  w.i32s("tokenizer.ggml.token_type", types);
  special_ids(w, t);
  w.boolean("tokenizer.ggml.add_space_prefix", t.space_prefix());
}

void bpe_vocab(GgufMetaWriter& w, const Tokenizer& t, const BpeModel& m, int n) {
  if (!m.byte_level || m.byte_fallback || !m.prepend.empty() || m.spaces_to_metaspace || m.add_prefix_space)
    throw Error(m.name + ": a GGUF vocabulary cannot hold this BPE (only byte-level BPE without a prefix space, "
                "SentencePiece-style normalization or byte fallback)");
  if (m.gguf_pre.empty())
    throw Error(m.name + ": its pre-tokenizer has no llama.cpp name (tokenizer.ggml.pre): gpt-2, llama-bpe or tekken");
  std::vector<std::string> tokens;
  std::vector<std::int32_t> types;
  for (int id = 0; id < n; ++id) {
    const bool pad = id >= t.vocab_size();
    const TokenType type = pad ? TokenType::unused : t.type(id);
    // A gap in tokenizer.json's ids gets a name of its own, as llama.cpp's converter gives it.
    tokens.push_back(pad ? unused_piece(id - t.vocab_size())
                         : t.piece(id).empty() && type == TokenType::unused ? "[PAD" + std::to_string(id) + "]"
                                                                            : t.piece(id));
    types.push_back(static_cast<std::int32_t>(type));
  }
  std::vector<std::pair<int, std::string>> ranked;
  ranked.reserve(m.merges.size());
  for (const auto& [pair, rank_merged] : m.merges) {
    const int left = static_cast<int>(pair >> 32), right = static_cast<int>(pair & 0xffffffffu);
    ranked.emplace_back(rank_merged.first, t.piece(left) + " " + t.piece(right));
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> merges;
  merges.reserve(ranked.size());
  for (auto& r : ranked) merges.push_back(std::move(r.second));
  w.str("tokenizer.ggml.model", "gpt2");
  w.str("tokenizer.ggml.pre", m.gguf_pre);
  w.strings("tokenizer.ggml.tokens", tokens);
  w.i32s("tokenizer.ggml.token_type", types);
  w.strings("tokenizer.ggml.merges", merges);
  special_ids(w, t);
}

}  // namespace

std::vector<GgufKv> gguf_vocab(const Tokenizer& t, int vocab_size) {
  if (t.vocab_size() > vocab_size)
    throw Error("the tokenizer has " + std::to_string(t.vocab_size()) + " tokens, the model " + std::to_string(vocab_size));
  GgufMetaWriter w;
  if (const BpeModel* m = TokenizerBuilder::bpe_model(t)) bpe_vocab(w, t, *m, vocab_size);
  else spm_vocab(w, t, vocab_size);
  return std::move(w.entries());
}

std::vector<std::uint8_t> llama2c_tokenizer_bin(const Tokenizer& t) {
  if (TokenizerBuilder::bpe_model(t) != nullptr) throw Error("llama2.c's tokenizer.bin cannot hold BPE merges");
  if (t.is_byte_level()) throw Error("llama2.c's tokenizer.bin does not hold lowp's byte-level vocabulary");
  std::vector<std::uint8_t> out;
  auto put = [&](auto v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  };
  std::size_t max_len = 1;
  for (int id = 0; id < t.vocab_size(); ++id) max_len = std::max(max_len, t.piece(id).size());
  put(static_cast<std::int32_t>(max_len));
  for (int id = 0; id < t.vocab_size(); ++id) {
    put(t.score(id));
    put(static_cast<std::int32_t>(t.piece(id).size()));
    out.insert(out.end(), t.piece(id).begin(), t.piece(id).end());
  }
  // The format stores pieces and scores only: what it implies must be what `t` has.
  const Tokenizer back = load_llama2c_tokenizer_bytes(out, t.vocab_size(), "tokenizer.bin");
  auto differ = [](const std::string& what) { throw Error("llama2.c's tokenizer.bin cannot hold " + what); };
  if (back.bos() != t.bos() || back.eos() != t.eos() || back.unk() != t.unk())
    differ("BOS, EOS and unknown ids other than 1, 2 and 0");
  if (back.add_bos() != t.add_bos()) differ("a vocabulary whose text starts without BOS");
  if (back.space_prefix() != t.space_prefix()) differ("a vocabulary without the space prefix");
  for (int id = 0; id < t.vocab_size(); ++id)
    if (back.type(id) != t.type(id)) differ("token " + std::to_string(id) + "'s type");
  return out;
}

namespace {

using report::json_string;

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// tokenizer.json and tokenizer_config.json of a byte-level BPE (see the header).
std::pair<std::string, std::string> hf_bpe_files(const Tokenizer& t, const BpeModel& m) {
  if (!m.byte_level || m.byte_fallback || !m.prepend.empty() || m.spaces_to_metaspace || m.add_prefix_space)
    throw Error(m.name + ": only a byte-level BPE without a prefix space, SentencePiece-style normalization or byte "
                "fallback is written as tokenizer.json");
  std::string added, vocab;
  for (int id = 0; id < t.vocab_size(); ++id) {
    const TokenType type = t.type(id);
    if (type == TokenType::unused) continue;
    const std::string piece = json_string(t.piece(id));
    vocab += (vocab.empty() ? "" : ", ") + piece + ": " + std::to_string(id);
    if (type == TokenType::control || type == TokenType::user)
      added += std::string(added.empty() ? "" : ", ") + "{\"id\": " + std::to_string(id) + ", \"content\": " + piece +
               ", \"special\": " + (type == TokenType::control ? "true" : "false") + "}";
  }
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [pair, rank_merged] : m.merges)
    ranked.emplace_back(rank_merged.first, t.piece(static_cast<int>(pair >> 32)) + " " +
                                               t.piece(static_cast<int>(pair & 0xffffffffu)));
  std::sort(ranked.begin(), ranked.end());
  std::string merges;
  for (const auto& r : ranked) merges += (merges.empty() ? "" : ", ") + json_string(r.second);
  std::string pre;
  for (const auto& r : m.split)
    pre += "{\"type\": \"Split\", \"pattern\": {\"Regex\": " + json_string(r->pattern()) +
           "}, \"behavior\": \"Isolated\", \"invert\": false}, ";
  const std::string unk = m.unk >= 0 ? json_string(t.piece(m.unk)) : "null";
  std::string json = "{\"version\": \"1.0\", \"added_tokens\": [" + added + "], \"normalizer\": null,\n";
  json += " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [" + pre +
          "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]},\n";
  json += " \"post_processor\": null, \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
          "\"trim_offsets\": true, \"use_regex\": true},\n";
  json += std::string(" \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": ") + unk +
          ", \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": false, "
          "\"byte_fallback\": false, \"ignore_merges\": " + (m.ignore_merges ? "true" : "false") +
          ",\n  \"vocab\": {" + vocab + "},\n  \"merges\": [" + merges + "]}}\n";
  auto token = [&](int id) { return id >= 0 ? json_string(t.piece(id)) : std::string("null"); };
  const std::string config = "{\"bos_token\": " + token(t.bos()) + ", \"eos_token\": " + token(t.eos()) +
                             ", \"add_bos_token\": " + (t.add_bos() ? "true" : "false") + "}\n";
  return {json, config};
}

}  // namespace

std::vector<std::pair<std::string, std::vector<std::uint8_t>>> tokenizer_files(const Tokenizer& t) {
  if (const BpeModel* m = TokenizerBuilder::bpe_model(t)) {
    const auto [json, config] = hf_bpe_files(t, *m);
    return {{"tokenizer.json", bytes_of(json)}, {"tokenizer_config.json", bytes_of(config)}};
  }
  return {{"tokenizer.bin", llama2c_tokenizer_bin(t)}};
}

}  // namespace lowp::accuracy::detail
