// Hugging Face tokenizer.json (BPE models), tokenizer.model files, and finding a tokenizer.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <filesystem>

#include "io/json.hpp"
#include "file/mapped_file.hpp"
#include "io/gguf_file.hpp"
#include "tokenizer/bpe.hpp"

namespace lowp::accuracy {

using namespace detail;
using TokenType = Tokenizer::TokenType;

namespace {

// The pre-tokenizer regexes of Hugging Face's tokenizers that llama.cpp gives BOS by default
// (its llama3 and tekken pre-tokenizers), as they appear in tokenizer.json files.
const char* const kHfBosRegexes[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?"
    "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+",
};
// Hugging Face's ByteLevel pre-tokenizer regex (use_regex: true).
const char* const kHfByteLevel = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const std::string kMeta = "\xE2\x96\x81";

class HfReader {
 public:
  explicit HfReader(std::string name) : name_(std::move(name)) {}
  [[noreturn]] void fail(const std::string& what) const { throw Error(name_ + ": " + what); }

  const Json& member(const Json& obj, std::string_view key, Json::Kind kind, std::string_view where) const {
    const Json* v = obj.get(key);
    if (v == nullptr || v->kind != kind) fail(std::string(where) + " has no " + std::string(key) + " of the expected type");
    return *v;
  }
  std::string str(const Json& obj, std::string_view key, std::string fallback = {}) const {
    const Json* v = obj.get(key);
    if (v == nullptr || v->kind == Json::Kind::null) return fallback;
    if (v->kind != Json::Kind::string) fail(std::string(key) + " is not a string");
    return v->str;
  }
  bool flag(const Json& obj, std::string_view key, bool fallback) const {
    const Json* v = obj.get(key);
    if (v == nullptr || v->kind == Json::Kind::null) return fallback;
    if (v->kind != Json::Kind::boolean) fail(std::string(key) + " is not true or false");
    return v->b;
  }
  int token_id(const Json& v, std::string_view where) const {
    if (v.kind != Json::Kind::number || !v.is_uint || v.u >= (std::uint64_t{1} << 24))
      fail(std::string(where) + " is not a token id (an integer in [0, 2^24))");
    return static_cast<int>(v.u);
  }

  // One pre-tokenizer (or a Sequence of them) into the model.
  void pre_tokenizer(const Json& p, BpeModel& m, std::vector<std::string>& regexes) const {
    if (p.kind == Json::Kind::null) return;
    const std::string type = str(p, "type");
    if (type == "Sequence") {
      for (const Json& q : member(p, "pretokenizers", Json::Kind::array, "the Sequence pre-tokenizer").items)
        pre_tokenizer(q, m, regexes);
    } else if (type == "ByteLevel") {
      m.byte_level = true;
      m.add_prefix_space = flag(p, "add_prefix_space", false);
      if (flag(p, "use_regex", true)) regexes.push_back(kHfByteLevel);
    } else if (type == "Split") {
      const Json& pat = member(p, "pattern", Json::Kind::object, "the Split pre-tokenizer");
      const std::string behavior = str(p, "behavior");
      if (behavior != "Isolated" || flag(p, "invert", false))
        fail("Split pre-tokenizer behaviour " + show_string(behavior) + " is not supported (Isolated only)");
      if (const Json* r = pat.get("Regex"); r != nullptr && r->kind == Json::Kind::string) {
        regexes.push_back(r->str);
      } else if (const Json* s = pat.get("String"); s != nullptr && s->kind == Json::Kind::string) {
        regexes.push_back("\\Q" + s->str + "\\E");
      } else {
        fail("the Split pre-tokenizer has neither a Regex nor a String pattern");
      }
    } else if (type == "Digits") {
      regexes.push_back(flag(p, "individual_digits", false) ? "\\p{N}" : "\\p{N}+");
    } else if (type == "Metaspace") {
      if (str(p, "replacement", kMeta) != kMeta) fail("Metaspace replacement other than U+2581 is not supported");
      m.spaces_to_metaspace = true;
      const std::string scheme = str(p, "prepend_scheme", flag(p, "add_prefix_space", true) ? "always" : "never");
      if (scheme != "always" && scheme != "first" && scheme != "never")
        fail("Metaspace prepend_scheme " + show_string(scheme) + " is not supported");
      if (scheme != "never") m.prepend = kMeta;
      m.prepend_first_only = scheme == "first";
      if (flag(p, "split", true)) regexes.push_back("\\x{2581}[^\\x{2581}]*");
    } else {
      fail("pre-tokenizer " + show_string(type) + " is not supported (ByteLevel, Split, Digits, Metaspace, Sequence)");
    }
  }

  // SentencePiece-style normalizers: Prepend(U+2581) and Replace(' ', U+2581); NFC is accepted
  // as the identity (see the header: text is taken to be in NFC already).
  void normalizer(const Json& n, BpeModel& m) const {
    if (n.kind == Json::Kind::null) return;
    const std::string type = str(n, "type");
    if (type == "Sequence") {
      for (const Json& q : member(n, "normalizers", Json::Kind::array, "the Sequence normalizer").items) normalizer(q, m);
    } else if (type == "Prepend") {
      m.prepend = str(n, "prepend");
    } else if (type == "Replace") {
      const Json& pat = member(n, "pattern", Json::Kind::object, "the Replace normalizer");
      const Json* s = pat.get("String");
      if (s == nullptr || s->kind != Json::Kind::string || s->str != " " || str(n, "content") != kMeta)
        fail("Replace normalizer other than ' ' -> U+2581 is not supported");
      m.spaces_to_metaspace = true;
    } else if (type != "NFC") {
      fail("normalizer " + show_string(type) + " is not supported (Prepend, Replace, NFC, Sequence)");
    }
  }

 private:
  std::string name_;
};

// The llama.cpp pre-tokenizer that splits as these Hugging Face regexes do ("" when none is
// known to): ByteLevel's own regex is GPT-2's (llama.cpp's spelling lacks the final "|\s+",
// which matches nothing the rest leaves), and the two BOS regexes are llama3's and tekken's.
// Regexes spelled as llama.cpp spells them (a tokenizer.json lowp wrote from a GGUF) match its
// own table.
std::string gguf_pre_name(const std::vector<std::string>& regexes, bool ignore_merges) {
  if (regexes.size() == 1 && regexes[0] == kHfByteLevel && !ignore_merges) return "gpt-2";
  if (regexes.size() == 1 && regexes[0] == kHfBosRegexes[0] && ignore_merges) return "llama-bpe";
  if (regexes.size() == 1 && regexes[0] == kHfBosRegexes[1] && ignore_merges) return "tekken";
  for (const char* name : {"gpt-2", "llama-bpe", "smaug-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "tekken", "default"}) {
    const PreTokenizer p = gguf_pre_tokenizer(name, name);
    if (p.regexes == regexes && p.ignore_merges == ignore_merges) return name;
  }
  return "";
}

// A token text from tokenizer_config.json: a string, or an AddedToken object's "content".
std::string config_token(const Json* v) {
  if (v == nullptr) return {};
  if (v->kind == Json::Kind::string) return v->str;
  if (v->kind == Json::Kind::object)
    if (const Json* c = v->get("content"); c != nullptr && c->kind == Json::Kind::string) return c->str;
  return {};
}

}  // namespace

Tokenizer load_hf_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  const HfReader h(path);
  const Json root = parse_json(read_text_file(path), path);
  if (root.kind != Json::Kind::object) h.fail("is not a JSON object");
  const Json& model = h.member(root, "model", Json::Kind::object, "the file");
  const std::string type = h.str(model, "type", "BPE");
  if (type != "BPE") h.fail("tokenizer model " + show_string(type) + " is not supported (BPE only)");
  if (!h.str(model, "continuing_subword_prefix").empty() || !h.str(model, "end_of_word_suffix").empty())
    h.fail("BPE with continuing_subword_prefix or end_of_word_suffix is not supported");

  auto m = std::make_shared<BpeModel>();
  m->name = path;
  m->byte_fallback = h.flag(model, "byte_fallback", false);
  m->ignore_merges = h.flag(model, "ignore_merges", false);

  // Vocabulary and added tokens: pieces indexed by id (gaps stay unused).
  const Json& vocab = h.member(model, "vocab", Json::Kind::object, "the model");
  std::vector<std::string> pieces;
  std::vector<TokenType> types;
  // Ids are dense in real files: bound them by the entry count so a stray id cannot allocate much.
  const Json* added = root.get("added_tokens");
  const std::size_t entries = vocab.fields.size() + (added != nullptr ? added->items.size() : 0);
  auto put = [&](int id, const std::string& text, TokenType t) {
    if (static_cast<std::size_t>(id) >= entries + 65536)
      h.fail("token id " + std::to_string(id) + " of " + show_string(text) + " is far beyond the " +
             std::to_string(entries) + " vocabulary entries");
    if (static_cast<std::size_t>(id) >= pieces.size()) {
      pieces.resize(static_cast<std::size_t>(id) + 1);
      types.resize(static_cast<std::size_t>(id) + 1, TokenType::unused);
    }
    pieces[id] = text;
    types[id] = t;
  };
  m->vocab.reserve(vocab.fields.size());
  for (const auto& [text, v] : vocab.fields) {
    const int id = h.token_id(v, "vocab entry " + show_string(text));
    put(id, text, TokenType::normal);
    m->vocab[text] = id;
    if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>') {
      const auto b = static_cast<int>(std::strtol(text.substr(3, 2).c_str(), nullptr, 16));
      if (std::isxdigit(static_cast<unsigned char>(text[3])) && std::isxdigit(static_cast<unsigned char>(text[4])) &&
          m->byte_fallback)
        m->byte_tokens[b] = id;
    }
  }
  if (added != nullptr && added->kind == Json::Kind::array) {
    for (const Json& a : added->items) {
      const int id = h.token_id(h.member(a, "id", Json::Kind::number, "an added token"), "an added token's id");
      const std::string content = h.str(a, "content");
      if (content.empty()) h.fail("added token " + std::to_string(id) + " has no content");
      const bool special = h.flag(a, "special", false);
      put(id, content, special ? TokenType::control : TokenType::user);
      if (!special) m->user_tokens.emplace_back(content, id);
    }
  }
  sort_user_tokens(m->user_tokens);
  if (pieces.empty()) h.fail("the vocabulary is empty");
  if (const std::string unk = h.str(model, "unk_token"); !unk.empty()) {
    m->unk = m->lookup(unk);
    if (m->unk < 0) h.fail("unk_token " + show_string(unk) + " is not in the vocabulary");
  }

  // Merges: "left right" strings or [left, right] pairs; the position is the rank.
  const Json& merges = h.member(model, "merges", Json::Kind::array, "the model");
  m->merges.reserve(merges.items.size());
  for (std::size_t r = 0; r < merges.items.size(); ++r) {
    const Json& e = merges.items[r];
    std::string left, right;
    if (e.kind == Json::Kind::string) {
      const std::size_t sp = e.str.find(' ', 1);
      if (sp == std::string::npos) h.fail("merge " + std::to_string(r) + " " + show_string(e.str) + " is not two pieces");
      left = e.str.substr(0, sp);
      right = e.str.substr(sp + 1);
    } else if (e.kind == Json::Kind::array && e.items.size() == 2 && e.items[0].kind == Json::Kind::string &&
               e.items[1].kind == Json::Kind::string) {
      left = e.items[0].str;
      right = e.items[1].str;
    } else {
      h.fail("merge " + std::to_string(r) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    const int a = m->lookup(left), b = m->lookup(right), c = m->lookup(left + right);
    if (a >= 0 && b >= 0 && c >= 0) m->add_merge(static_cast<int>(r), a, b, c);
  }

  const Json null_json;
  const Json* norm = root.get("normalizer");
  h.normalizer(norm ? *norm : null_json, *m);
  std::vector<std::string> regexes;
  const Json* pre = root.get("pre_tokenizer");
  h.pre_tokenizer(pre ? *pre : null_json, *m, regexes);
  for (const auto& r : regexes) m->split.push_back(std::make_unique<Regex>(r, path));
  m->gguf_pre = gguf_pre_name(regexes, m->ignore_merges);

  // BOS: tokenizer_config.json's bos_token / add_bos_token, else a TemplateProcessing
  // post-processor that starts with a special token, else llama.cpp's defaults.
  const fs::path dir = fs::path(path).parent_path();
  Json config;
  std::error_code ec;
  if (const fs::path c = dir / "tokenizer_config.json"; fs::exists(c, ec))
    config = parse_json(read_text_file(c.string()), c.string());
  int bos = -1, eos = -1;
  auto id_of = [&](const std::string& text) {
    if (text.empty()) return -1;
    for (int id = static_cast<int>(pieces.size()) - 1; id >= 0; --id)
      if (pieces[id] == text && types[id] != TokenType::unused) return id;
    return -1;
  };
  bos = id_of(config_token(config.get("bos_token")));
  eos = id_of(config_token(config.get("eos_token")));
  std::optional<bool> add_bos;
  if (const Json* a = config.get("add_bos_token"); a != nullptr && a->kind == Json::Kind::boolean) add_bos = a->b;
  if (const Json* pp = root.get("post_processor"); pp != nullptr && pp->kind == Json::Kind::object &&
                                                    h.str(*pp, "type") == "TemplateProcessing") {
    const Json* single = pp->get("single");
    if (single != nullptr && single->kind == Json::Kind::array && !single->items.empty()) {
      const Json* st = single->items[0].get("SpecialToken");
      const bool starts_special = st != nullptr && st->kind == Json::Kind::object;
      if (!add_bos) add_bos = starts_special;
      if (starts_special && bos < 0) bos = id_of(h.str(*st, "id"));
    }
  }
  if (!add_bos) {
    const bool sentencepiece_style = !m->prepend.empty();
    const bool bos_regex = std::any_of(regexes.begin(), regexes.end(), [](const std::string& r) {
      return std::any_of(std::begin(kHfBosRegexes), std::end(kHfBosRegexes), [&](const char* k) { return r == k; });
    });
    add_bos = sentencepiece_style || bos_regex;
  }
  return TokenizerBuilder::bpe(std::move(pieces), std::move(types), bos, eos, std::move(m), *add_bos);
}

Tokenizer load_sentencepiece_model(const std::string& path) { return TokenizerBuilder::sentencepiece(path); }

namespace {

bool is_gguf(const std::string& path) {
  MappedFile f(path);
  return has_gguf_magic(f.bytes());
}

}  // namespace

Tokenizer load_tokenizer(const std::string& file_or_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(file_or_dir, ec)) {
    const fs::path d(file_or_dir);
    if (fs::exists(d / "tokenizer.json", ec)) return load_hf_tokenizer((d / "tokenizer.json").string());
    if (fs::exists(d / "tokenizer.model", ec)) return load_sentencepiece_model((d / "tokenizer.model").string());
    throw Error(file_or_dir + ": the folder holds no tokenizer.json or tokenizer.model");
  }
  if (is_gguf(file_or_dir)) return load_gguf_tokenizer(file_or_dir);
  const std::string ext = fs::path(file_or_dir).extension().string();
  if (ext == ".json") return load_hf_tokenizer(file_or_dir);
  if (ext == ".model") return load_sentencepiece_model(file_or_dir);
  throw Error(file_or_dir + ": not a tokenizer (a GGUF file, tokenizer.json, tokenizer.model, or a folder holding one)");
}

}  // namespace lowp::accuracy
